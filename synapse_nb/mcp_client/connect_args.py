"""connect()'s keyword arguments, checked and turned into a ServerConfig (problems kept for a one-line error)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..config import ApprovePolicy, ServerConfig, Transport
from ..oauth_settings import OAuthSettings
from .logs import LEVELS

__all__ = ["config_from_args"]


def config_from_args(
    name: str,
    *,
    command: str | None,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
    url: str | None,
    headers: Mapping[str, str] | None,
    transport: Transport | None,
    timeout: float | None,
    approve: ApprovePolicy | None,
    tools: Sequence[str] | None,
    connect_timeout: float | None,
    in_process: object | None = None,
    elicitation: str | None = None,
    sampling: str | None = None,
    roots: Sequence[str | Path] | None = None,
    log_level: str | None = None,
    oauth: OAuthSettings | None = None,
) -> ServerConfig:
    problems: list[str] = []
    if not isinstance(name, str) or not name.strip():
        problems.append("the server needs a non-empty name")
    if in_process is not None:
        pass  # no command, no url: the SDK pairs a client with the object itself
    elif (command is None) == (url is None):
        problems.append("give either command (stdio) or url (http, sse), not both or neither")
    kind: Transport = transport or ("stdio" if command is not None else "http")
    if kind not in ("stdio", "http", "sse"):
        problems.append(f"transport must be stdio, http or sse (got {kind!r})")
    elif (kind == "stdio") != (command is not None):
        problems.append(f"transport {kind} does not fit {'command' if command is not None else 'url'}")
    for label, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
        if value is not None and not value > 0:
            problems.append(f"{label} must be a positive number of seconds")
    for label, seq in (("args", args), ("tools", tools)):
        if isinstance(seq, str):
            problems.append(f"{label} must be a list of strings, not one string")
    verdicts = [approve] if isinstance(approve, str) else list(approve.values()) if approve is not None else []
    if any(v not in ("auto", "ask", "deny") for v in verdicts):
        problems.append("approve must be auto, ask, deny, or a mapping of tool patterns to those")
    choices: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
        ("elicitation", elicitation, ("ask", "decline")), ("sampling", sampling, ("ask", "auto", "deny")),
        ("log_level", log_level, LEVELS),
    )
    for label, chosen, allowed in choices:
        if chosen is not None and chosen not in allowed:
            problems.append(f"{label} must be one of {', '.join(allowed)}")
    if isinstance(roots, str):
        problems.append("roots must be a list of paths, not one string")
    if oauth is not None and kind == "stdio":
        problems.append("oauth applies to http and sse servers only")
    return ServerConfig(
        name=name,
        transport=kind,
        command=command,
        args=tuple(str(a) for a in args),
        env=dict(env or {}),
        cwd=str(cwd) if cwd is not None else None,
        url=url,
        headers=dict(headers or {}),
        timeout=timeout,
        connect_timeout=connect_timeout,
        approve=dict(approve) if isinstance(approve, Mapping) else approve,
        tools=tuple(tools) if tools is not None else None,
        elicitation=elicitation,
        sampling=sampling,
        roots=tuple(str(r) for r in roots) if roots is not None and not isinstance(roots, str) else None,
        log_level=log_level,
        oauth=oauth,
        problem=f"server {name!r}: " + "; ".join(problems) if problems else None,
        display=f"in-process {type(in_process).__name__}" if in_process is not None else "",
    )
