"""The public surface: `__all__` is sorted, complete, and every name in it resolves."""

from __future__ import annotations

import synapse_nb


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
