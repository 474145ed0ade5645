"""How SDK and transport failures become synapse errors: classification, one-line reasons, secrets masked."""

from __future__ import annotations

import asyncio
import logging

import anyio
import httpx2
import mcp.types as mt
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ..config import ServerConfig
from ..errors import McpError
from ..masking import SecretMask, config_secrets
from .exit_status import describe_exit

__all__ = ["Scrubber", "describe", "is_connection_lost", "quiet_sdk_parse_errors", "request_error", "start_reason"]

_LOST = (OSError, EOFError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream,
         httpx2.TransportError)


class Scrubber:
    """Masks a server's configured secrets (header values, the secret env values, the raw URL) in any message.

    The rules are synapse_nb.masking's (also the kernel environment's secret values and key-like patterns).
    """

    def __init__(self, config: ServerConfig) -> None:
        self._url = config.url if config.url and config.url != config.display else None
        self._display = config.display
        self._mask = SecretMask(config_secrets(config.env, config.headers))

    def __call__(self, text: str) -> str:
        if self._url:
            text = text.replace(self._url, self._display)
        return self._mask(text)


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def is_connection_lost(exc: BaseException) -> bool:
    """The transport broke (process gone, pipe closed, HTTP connection dropped), as opposed to an error answer."""
    exc = leaf(exc)
    return isinstance(exc, _LOST) or (isinstance(exc, MCPError) and exc.code == mt.CONNECTION_CLOSED)


def describe(exc: BaseException) -> str:
    exc = leaf(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def start_reason(exc: BaseException, config: ServerConfig, scrub: Scrubber, exit_code: int | None = None) -> str:
    """Why a server did not start, in one line; `exit_code` is how its process ended, when known."""
    exc = leaf(exc)
    if isinstance(exc, MCPError) and exc.code == mt.CONNECTION_CLOSED:
        if exit_code is not None:
            return f"the server {describe_exit(exit_code)} during the handshake"
        return "the server closed the connection during the handshake (did it exit?)"
    if isinstance(exc, MCPError):
        return scrub(f"handshake failed with error {exc.code}: {exc.message}")
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {config.display}"
    if isinstance(exc, httpx2.TransportError):
        return scrub(f"cannot reach {config.display}: {describe(exc)}")
    if isinstance(exc, OSError):
        return scrub(f"cannot start {config.display!r}: {exc.strerror or exc}")
    return scrub(describe(exc))


def request_error(exc: BaseException, server: str, label: str, scrub: Scrubber) -> McpError:
    """An error answer (not a lost connection) to one request."""
    exc = leaf(exc)
    if isinstance(exc, MCPError):
        return McpError(f"MCP server {server!r} answered {label} with error {exc.code}: {scrub(str(exc.message))}",
                        server=server)
    if isinstance(exc, ValidationError):
        return McpError(f"MCP server {server!r} sent a malformed answer to {label}: "
                        f"{exc.error_count()} validation errors", server=server)
    return McpError(f"{label} on MCP server {server!r} failed: {scrub(describe(exc))}", server=server)


class _QuietParseErrors(logging.Filter):
    """The SDK logs a traceback for every non-JSON line on a server's stdout. Such lines are skipped and
    counted (ServerConnection.skipped_messages, debug log); a traceback per line in a cell would only alarm."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


def quiet_sdk_parse_errors() -> None:
    sdk_logger = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, _QuietParseErrors) for f in sdk_logger.filters):
        sdk_logger.addFilter(_QuietParseErrors())
