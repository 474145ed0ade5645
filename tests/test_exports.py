"""The public surface: `__all__` is sorted, complete, and every name in it resolves."""

from __future__ import annotations

import re

import synapse_nb
from synapse_nb import errors


def test_all_is_sorted_and_unique() -> None:
    assert list(synapse_nb.__all__) == sorted(set(synapse_nb.__all__))


def test_every_exported_name_resolves() -> None:
    for name in synapse_nb.__all__:
        assert getattr(synapse_nb, name) is not None, name


def test_public_names_defined_in_the_package_are_exported() -> None:
    public = {
        n for n, v in vars(synapse_nb).items()
        if not n.startswith("_") and getattr(v, "__module__", "").startswith("synapse_nb")
    }
    assert public <= set(synapse_nb.__all__)


def test_the_error_tree_in_the_docstring_is_the_class_tree() -> None:
    # Each tree line is "<prefix>Name  description"; the prefix's width gives the depth (4 columns a level).
    lines = [ln for ln in (errors.__doc__ or "").splitlines() if re.match(r"^ {4}[\s│├└─]*[A-Z]\w+", ln)]
    drawn: dict[str, str | None] = {}
    parents: list[str] = []
    for line in lines:
        match = re.match(r"^ {4}([\s│├└─]*)([A-Z]\w+)", line)
        assert match is not None
        depth = len(match.group(1)) // 4
        del parents[depth:]
        drawn[match.group(2)] = parents[-1] if parents else None
        parents.append(match.group(2))
    assert set(drawn) == set(errors.__all__)
    for name, parent in drawn.items():
        base = getattr(errors, name).__bases__[0]
        assert base.__name__ == (parent or "Exception"), name
