"""Qualified tool names: valid for both model APIs, stable, and unique with visible disambiguation."""

from __future__ import annotations

import logging
import random
import re

import pytest

from synapse_nb.mcp_client.naming import MAX_NAME, assign_names, qualify, sanitize

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_sanitize_keeps_valid_characters_and_replaces_the_rest() -> None:
    assert sanitize("get-weather_2") == "get-weather_2"
    assert sanitize("get.weather") == "get_weather"
    assert sanitize("météo/ville") == "m_t_o_ville"
    assert sanitize("") == "_"


def test_qualify_joins_server_and_tool() -> None:
    assert qualify("demo", "list_tables") == "demo__list_tables"
    assert qualify("my server", "a.b") == "my_server__a_b"


def test_long_names_are_truncated_with_a_stable_hash() -> None:
    server, tool = "s" * 40, "t" * 40
    name = qualify(server, tool)
    assert len(name) == MAX_NAME
    assert VALID.match(name)
    assert name == qualify(server, tool)  # stable across calls (and runs: sha256, not hash())
    assert name.startswith("s" * 40 + "__")
    assert qualify(server, tool + "x") != name


def test_every_assigned_name_is_valid_and_unique() -> None:
    rng = random.Random(7)
    alphabet = "ab._-é/ Z9"
    def word() -> str:
        return "".join(rng.choices(alphabet, k=rng.randint(1, 50)))

    pairs = {(word(), word()) for _ in range(300)}
    names = assign_names(pairs)
    assert set(names) == pairs
    assert len(set(names.values())) == len(pairs)
    assert all(VALID.match(n) for n in names.values())


def test_collisions_resolve_deterministically_whatever_the_order(caplog: pytest.LogCaptureFixture) -> None:
    pairs = [("a", "x_y"), ("a", "x.y"), ("a__x", "y"), ("a", "x__y")]
    with caplog.at_level(logging.INFO, logger="synapse_nb.mcp"):
        names = assign_names(pairs)
    assert names == {
        ("a", "x_y"): "a__x_y",  # needed no change, so it keeps the plain name
        ("a", "x__y"): "a__x__y",
        ("a", "x.y"): "a__x_y_2",
        ("a__x", "y"): "a__x__y_2",
    }
    for _ in range(5):
        shuffled = pairs[:]
        random.shuffle(shuffled)
        assert assign_names(shuffled) == names
    notes = [r.getMessage() for r in caplog.records if "collide" in r.getMessage()]
    assert len(notes) == 2
    assert "'x.y'" in notes[1] or "'x.y'" in notes[0]


def test_collision_suffix_stays_within_the_limit() -> None:
    server = "s" * 70
    names = assign_names([(server, "t.1"), (server, "t_1")])
    assert len(set(names.values())) == 2
    assert all(len(n) <= MAX_NAME and VALID.match(n) for n in names.values())
