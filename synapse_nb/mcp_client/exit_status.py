"""How a stdio server's process ended (`exited with status 1`), which the SDK's stdio client keeps to itself.

`mcp.client.stdio.stdio_client` spawns the server through its module function
`_create_platform_compatible_process(command, args, env, errlog, cwd)` and keeps the process object local:
its exit status is reaped (by asyncio's child watcher) and dropped, and `os.waitpid` is not ours to call on
a child the event loop reaps. So that function is wrapped once: the wrapper calls the SDK's own function and
remembers the process object it returned, by the `errlog` file it was given, which is each connection's
own stderr pipe (process.StderrPipe). Nothing else changes in how the SDK spawns, talks to or stops the
server. Should the SDK rename that function, the wrapper is not installed and failures simply say no status.
"""

from __future__ import annotations

import logging
import signal
import weakref
from typing import Any, TextIO

__all__ = ["describe_exit", "exit_code", "spawned", "track_spawns"]

logger = logging.getLogger("synapse_nb.mcp")

_SPAWNED: weakref.WeakKeyDictionary[TextIO, Any] = weakref.WeakKeyDictionary()
_INSTALLED = False


def track_spawns() -> None:
    """Wrap the SDK's spawn function (once per interpreter) so `exit_code(errlog)` can be asked later."""
    global _INSTALLED
    if _INSTALLED:
        return
    from mcp.client import stdio

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None:  # a newer SDK: its failures then carry no exit status
        logger.debug("mcp.client.stdio has no _create_platform_compatible_process: exit statuses are unknown")
        _INSTALLED = True
        return

    async def spawn_tracked(command: str, args: list[str], env: dict[str, str] | None = None,
                            errlog: Any = None, cwd: Any = None) -> Any:
        process = await spawn(command=command, args=args, env=env, errlog=errlog, cwd=cwd)
        if errlog is not None:
            _SPAWNED[errlog] = process
        return process

    stdio._create_platform_compatible_process = spawn_tracked  # type: ignore[attr-defined]
    _INSTALLED = True


def exit_code(errlog: TextIO) -> int | None:
    """The return code of the process spawned with `errlog` as its stderr (negative: the signal that ended it);
    None while it runs, when it was never spawned, or when the event loop has not reaped it yet."""
    process = _SPAWNED.get(errlog)
    code = getattr(process, "returncode", None) if process is not None else None
    return code if isinstance(code, int) else None


def spawned(errlog: TextIO) -> bool:
    """Whether a process was seen spawned with `errlog` as its stderr."""
    return errlog in _SPAWNED


def describe_exit(code: int) -> str:
    """`exited with status 1`, or `was killed by signal 9 (SIGKILL)` for a negative return code."""
    if code >= 0:
        return f"exited with status {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-code}{name}"
