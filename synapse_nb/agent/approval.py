"""The approval policy: whether a tool call runs at once (auto), asks the user first (ask) or is refused (deny)."""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase

from ..errors import ConfigError
from ..server_config import APPROVE_MODES, ApproveMode
from ..types import ToolSpec

__all__ = ["MODES", "ApprovalMode", "ApprovalPolicy"]

ApprovalMode = ApproveMode
MODES: tuple[ApprovalMode, ...] = APPROVE_MODES
_STRICTNESS = {"auto": 0, "ask": 1, "deny": 2}


def _mode(value: object, where: str) -> ApprovalMode:
    text = str(value).strip().lower() if isinstance(value, str) else value
    if text not in MODES:
        raise ConfigError(f"approval mode {value!r} for {where} is not one of {', '.join(MODES)}")
    return text


def _lookup(rules: Mapping[str, ApprovalMode], *names: str | None) -> ApprovalMode | None:
    """The mode of the first exact key among names, else of the first glob key (in order) matching one."""
    candidates = [n for n in names if n]
    for name in candidates:
        if name in rules:
            return rules[name]
    for pattern, mode in rules.items():
        if any(fnmatchcase(name, pattern) for name in candidates):
            return mode
    return None


class ApprovalPolicy:
    """Decides per tool call: `auto`, `ask` or `deny`.

    Precedence, first that applies wins: a tool the user answered "always" for; a per-tool rule (exact,
    then glob over the qualified name); the tool's server rule (a mode, or a {tool: mode} map keyed by the
    tool's own or qualified name, exact then glob; servers matched exactly, then by glob). A rule that
    says `auto` explicitly trusts even a destructive tool. Otherwise the default mode applies, raised to
    `destructive` (default `ask`) for tools whose annotations carry destructiveHint.
    """

    def __init__(
        self,
        default: str = "auto",
        *,
        tools: Mapping[str, str] | None = None,
        servers: Mapping[str, str | Mapping[str, str]] | None = None,
        destructive: str = "ask",
    ) -> None:
        self.default: ApprovalMode = _mode(default, "the default")
        self.destructive: ApprovalMode = _mode(destructive, "destructive tools")
        self._tools: dict[str, ApprovalMode] = {}
        self._servers: dict[str, ApprovalMode | dict[str, ApprovalMode]] = {}
        self._always: set[str] = set()
        for pattern, mode in (tools or {}).items():
            self.set_tool(pattern, mode)
        for server, approve in (servers or {}).items():
            self.set_server(server, approve)

    @classmethod
    def from_servers(
        cls, servers: Mapping[str, object], default: str = "auto", *, destructive: str = "ask"
    ) -> ApprovalPolicy:
        """A policy from the MCP servers file: each value is a `config.ServerConfig` (its `approve` is read)
        or an approve value itself (a mode, a {tool: mode} map, or None)."""
        policy = cls(default, destructive=destructive)
        for name, entry in servers.items():
            approve = getattr(entry, "approve", entry)
            if approve is None or isinstance(approve, str | Mapping):
                policy.set_server(name, approve)
            else:
                raise ConfigError(f"approve for server {name!r} must be auto, ask, deny or a {{tool: mode}} map")
        return policy

    def set_tool(self, pattern: str, mode: str) -> None:
        """A rule for tools whose qualified name is `pattern` or matches it as a glob."""
        self._tools[pattern] = _mode(mode, f"tool {pattern!r}")

    def set_server(self, server: str, approve: str | Mapping[str, str] | None) -> None:
        """A server's rule as written in the MCP config's `approve`: a mode or a {tool: mode} map (None: remove)."""
        if approve is None:
            self._servers.pop(server, None)
        elif isinstance(approve, str):
            self._servers[server] = _mode(approve, f"server {server!r}")
        elif isinstance(approve, Mapping):
            self._servers[server] = {
                str(tool): _mode(mode, f"tool {tool!r} of server {server!r}") for tool, mode in approve.items()
            }
        else:
            raise ConfigError(f"approve for server {server!r} must be auto, ask, deny or a {{tool: mode}} map")

    def remember_always(self, name: str) -> None:
        """The user answered "always" for this qualified tool name: run it without asking from now on."""
        self._always.add(name)

    def forget(self) -> None:
        """Drop every remembered "always"."""
        self._always.clear()

    @property
    def remembered(self) -> frozenset[str]:
        return frozenset(self._always)

    def decide(self, spec: ToolSpec) -> ApprovalMode:
        """What to do with a call of this tool."""
        if spec.name in self._always:
            return "auto"
        explicit = _lookup(self._tools, spec.name)
        if explicit is None and spec.server is not None:
            rule = self._servers.get(spec.server)
            if rule is None:
                rule = next((r for p, r in self._servers.items() if fnmatchcase(spec.server, p)), None)
            if isinstance(rule, dict):
                explicit = _lookup(rule, spec.original_name, spec.name)
            elif rule is not None:
                explicit = rule
        if explicit is not None:
            return explicit
        if spec.destructive and _STRICTNESS[self.destructive] > _STRICTNESS[self.default]:
            return self.destructive
        return self.default

    def __repr__(self) -> str:
        return (
            f"ApprovalPolicy(default={self.default!r}, tools={self._tools!r}, servers={self._servers!r}, "
            f"destructive={self.destructive!r}, always={sorted(self._always)!r})"
        )
