"""The package's version, in a module of its own so that the layers below the root can read it.

Importing the root package (`synapse_nb/__init__.py`) from below would run its lazy `__getattr__`,
which reaches every layer; this module imports nothing. It is the one place the version is written: pyproject.toml
reads it ([tool.hatch.version], a dynamic version) and the MCP Apps View is told it by a trait.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
