"""The pin hint (output/pin_hint.py): found in what a server says, read only from its start."""

from __future__ import annotations

from synapse_nb.notebook.output.pin_hint import pin_hint

SAID = "elicitation via server-initiated requests is unavailable on 2026-07-28 connections"


def test_a_feature_unavailable_on_the_new_revision_says_how_to_pin() -> None:
    hint = pin_hint("fm", f"Error: {SAID}")
    assert hint is not None
    assert "%mcp connect fm --protocol 2025-11-25" in hint
    assert pin_hint(None, SAID) is None  # a tool of no server: nothing to pin
    assert pin_hint("fm", "unavailable on 2025-06-18 connections") is None  # older than the pin


def test_a_big_result_is_read_for_the_sentence_only_at_its_start() -> None:
    """Every refresh of a turn's display asked this of a 3 MB result whole (a second of bench row 23's turn);
    such a sentence is a short message, so only the start of a result is read."""
    rows = "[" + ", ".join(f'{{"id": {i}, "note": "row"}}' for i in range(50_000)) + "]"
    assert pin_hint("fm", f"{SAID}\n{rows}") is not None
    assert pin_hint("fm", f"{rows}\n{SAID}") is None
