"""ConnectionTable: a hub's connections by server name, and the tools they offer by qualified name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import UnknownServerError, UnknownToolError
from ..types import ToolSpec
from .connection import ServerConnection
from .naming import assign_names

__all__ = ["ConnectionTable"]


class ConnectionTable:
    """The connections in the order they were added, and the tool registry built from them.

    The registry is rebuilt whenever a connection is added, dropped or lists other tools, so that the
    qualified names (`SERVER__TOOL`, naming.py) stay deterministic across servers.
    """

    def __init__(self) -> None:
        self._conns: dict[str, ServerConnection] = {}
        self._specs: dict[str, ToolSpec] = {}

    def __iter__(self) -> Iterator[ServerConnection]:
        return iter(list(self._conns.values()))

    def __len__(self) -> int:
        return len(self._conns)

    def get(self, name: str) -> ServerConnection:
        conn = self._conns.get(name)
        if conn is None:
            known = ", ".join(self._conns) or "none"
            raise UnknownServerError(f"no MCP server named {name!r} (connected: {known})", server=name)
        return conn

    def find(self, name: str) -> ServerConnection | None:
        return self._conns.get(name)

    def put(self, conn: ServerConnection) -> None:
        """Add `conn` under its name, in place of the one there (which its caller has stopped)."""
        self._conns[conn.name] = conn

    def drop(self, conns: Iterable[ServerConnection]) -> None:
        """Forget `conns` (each unless another connection has taken its name meanwhile)."""
        for conn in conns:
            if self._conns.get(conn.name) is conn:
                del self._conns[conn.name]
        self.rebuild()

    def tools_changed(self, conn: ServerConnection) -> None:
        """`conn` listed other tools; only the current connection of its name counts."""
        if self._conns.get(conn.name) is conn:
            self.rebuild()

    def rebuild(self) -> None:
        offered = [(c.name, t) for c in self._conns.values() for t in c.state.offered()]
        names = assign_names((server, t.name) for server, t in offered)
        self._specs = {names[(s, t.name)]: t.spec(names[(s, t.name)], s) for s, t in offered}

    @property
    def specs(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def tool(self, qualified_name: str) -> ToolSpec:
        spec = self._specs.get(qualified_name)
        if spec is None:
            raise UnknownToolError(
                f"no MCP tool named {qualified_name!r}; `%mcp tools` (or hub.tools) lists them", tool=qualified_name
            )
        return spec
