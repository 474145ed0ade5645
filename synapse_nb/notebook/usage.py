"""usage_error: the one place a SynapseError becomes the error a cell ends with (one line, no traceback).

A mistake in the command (an unknown server or tool, a bad setting) is IPython's UsageError. Anything else is
no usage error (a server's JSON-RPC error, a server that did not start, a timeout, a history file that cannot be
read): it is a `CommandError`, shown as what it is, `McpError: MCP server 'redis' answered tool 'set' with error
-32603: ...`, still one line, and the cell still ends with an error, so Run All stops there.
"""

from __future__ import annotations

from IPython.core.error import UsageError

from ..errors import ConfigError, MissingKeyError, SynapseError, UnknownServerError, UnknownToolError

__all__ = ["CommandError", "command_error", "usage_error"]

_USAGE = (ConfigError, UnknownServerError, UnknownToolError, MissingKeyError)
"""The errors that are a mistake in what was typed or set up: the user fixes the command or the setting."""


class CommandError(UsageError):
    """A command failed for a reason that is not a mistake in it: one line, `KIND: message`, no traceback.

    A subclass of UsageError so that whatever catches a command's error keeps catching it; IPython shows only
    UsageError itself as `UsageError: ...` (it checks the type exactly) and shows this one through
    `_render_traceback_`, in its own words."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.kind}: {self.args[0]}"

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{self.kind}\x1b[0m: {self.args[0]}"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def usage_error(exc: SynapseError) -> UsageError:
    """The error a cell ends with for `exc`: UsageError for a mistake in the command, else a CommandError
    named after the error (one line, no traceback either way)."""
    text = _one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, _USAGE):
        return UsageError(text)
    return CommandError(text, type(exc).__name__)


def command_error(message: str, kind: str) -> CommandError:
    """A CommandError from a message of ours (e.g. `%mcp connect: demo failed to start: ...`)."""
    return CommandError(_one_line(message), kind)
