"""The one exception tree of synapse_nb; every error a user can meet is a SynapseError.

    SynapseError
    ├── ConfigError                 bad config file or setting (path, line, column)
    ├── HistoryError                the history file cannot be used
    │   ├── MigrationError          a migration failed (version, name); nothing of it applied
    │   ├── SchemaTooNewError       the file was written by a newer synapse_nb
    │   └── LakeError               the lake (its catalog or its storage) cannot be used (lake)
    ├── McpError                    anything about MCP servers (server)
    │   ├── ServerStartError        a server failed to start (reason, stderr_tail)
    │   │   └── OAuthError          signing in did not work: denied, bad client, unreachable, timeout (kind)
    │   ├── UnknownServerError      no server by that name
    │   ├── UnknownToolError        no tool by that name
    │   ├── ServerCrashedError      the server died (during a call)
    │   ├── ServerDownError         too many restarts; the server stays down
    │   ├── UiResourceError         a tool's View is not an MCP Apps resource (uri, mime_type)
    │   ├── SkillError              a server's skill cannot be loaded: unknown, or it fails verification (uri)
    │   ├── TaskError               an MCP task ended without a result: failed or cancelled (task_id, status)
    │   │   └── TaskLostError       the server no longer knows the task: expired or forgotten (-32602)
    │   ├── TaskDetachedError       the caller left a task running on the server (task_id)
    │   └── ToolCallTimeout         a call ran past its timeout
    ├── ProviderError               an LLM provider failed (provider, status)
    │   ├── MissingKeyError         no API key in the environment (variable)
    │   ├── AuthenticationError     401 / 403
    │   ├── RateLimitError          429 after bounded retries (retry_after)
    │   ├── ProviderUnavailableError 5xx / overloaded after bounded retries
    │   ├── ProviderTimeout         connect or read timeout
    │   └── StreamError             the stream broke half way or did not parse
    ├── AgentError                  the tool-call loop could not finish
    │   ├── MaxIterationsError      the model kept asking for tools (iterations)
    │   └── BudgetExceededError     the next model call would pass a budget (limit, spent, unit)
    └── CassetteError               a record/replay cassette cannot be read or written (path, line)
        └── ReplayMismatchError     a request is not in the cassette (index of the first differing message)

Messages are one line that names the problem and, where there is one, the fix. Errors carry their
context as attributes so callers never parse the text.
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AuthenticationError",
    "BudgetExceededError",
    "CassetteError",
    "ConfigError",
    "HistoryError",
    "LakeError",
    "MaxIterationsError",
    "McpError",
    "MigrationError",
    "MissingKeyError",
    "OAuthError",
    "ProviderError",
    "ProviderTimeout",
    "ProviderUnavailableError",
    "RateLimitError",
    "ReplayMismatchError",
    "SchemaTooNewError",
    "ServerCrashedError",
    "ServerDownError",
    "SkillError",
    "ServerStartError",
    "StreamError",
    "SynapseError",
    "TaskDetachedError",
    "TaskError",
    "TaskLostError",
    "ToolCallTimeout",
    "UiResourceError",
    "UnknownServerError",
    "UnknownToolError",
]


class SynapseError(Exception):
    """Base of every error synapse_nb raises on purpose."""


class ConfigError(SynapseError):
    """A configuration file or setting is invalid."""

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column


class HistoryError(SynapseError):
    """The history file cannot be opened, read or written."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class LakeError(HistoryError):
    """The Iceberg lake cannot be used: a bad lake spec, its catalog or its storage unreachable or full, a
    publish that kept losing the race; `lake` names it (secrets masked). Nothing was half written."""

    def __init__(self, message: str, *, lake: str | None = None) -> None:
        super().__init__(message, path=lake)
        self.lake = lake


class MigrationError(HistoryError):
    """A migration failed; the transaction was rolled back so nothing of it applied."""

    def __init__(self, message: str, *, path: str | None = None, version: int, name: str) -> None:
        super().__init__(message, path=path)
        self.version = version
        self.name = name


class SchemaTooNewError(HistoryError):
    """The file's schema is newer than this code knows; it is refused, not touched."""

    def __init__(self, message: str, *, path: str | None = None, file_version: int, known_version: int) -> None:
        super().__init__(message, path=path)
        self.file_version = file_version
        self.known_version = known_version


class McpError(SynapseError):
    """Something went wrong talking to an MCP server."""

    def __init__(self, message: str, *, server: str | None = None) -> None:
        super().__init__(message)
        self.server = server


class ServerStartError(McpError):
    """A server could not be started or did not complete the handshake."""

    def __init__(self, message: str, *, server: str, reason: str, stderr_tail: str = "") -> None:
        super().__init__(message, server=server)
        self.reason = reason
        self.stderr_tail = stderr_tail


class OAuthError(ServerStartError):
    """Authorising with a server did not work; the message says what happened and what to do.

    `kind`: "denied" (consent declined), "refused" (another error on the redirect), "no_code" (a pasted
    URL without a code), "invalid_client" (wrong client ID or secret), "unreachable" (the
    authorization server), "timeout" (nobody signed in in time), "failed" (anything else).
    """

    def __init__(self, message: str, *, server: str, kind: str) -> None:
        super().__init__(message, server=server, reason=message)
        self.kind = kind


class UnknownServerError(McpError):
    """No connected or configured server has that name."""


class UnknownToolError(McpError):
    """No tool has that (qualified) name."""

    def __init__(self, message: str, *, server: str | None = None, tool: str) -> None:
        super().__init__(message, server=server)
        self.tool = tool


class ServerCrashedError(McpError):
    """The server process exited or its connection broke."""


class ServerDownError(McpError):
    """The server crashed too often and is no longer restarted automatically."""


class UiResourceError(McpError):
    """A `ui://` View cannot be shown: not a `ui://` URI, or not served as `text/html;profile=mcp-app`."""

    def __init__(self, message: str, *, server: str, uri: str, mime_type: str | None = None) -> None:
        super().__init__(message, server=server)
        self.uri = uri
        self.mime_type = mime_type


class SkillError(McpError):
    """A skill a server offers (SEP-2640) cannot be loaded or read: it is not known, it is over the extension's
    limits, or what was read does not match its entry (digest, size, front matter, an unlisted file)."""

    def __init__(self, message: str, *, server: str, uri: str) -> None:
        super().__init__(message, server=server)
        self.uri = uri


class TaskError(McpError):
    """An MCP task ended without a result: the server says it `failed` (a JSON-RPC error) or was `cancelled`."""

    def __init__(self, message: str, *, server: str | None = None, task_id: str, status: str) -> None:
        super().__init__(message, server=server)
        self.task_id = task_id
        self.status = status


class TaskLostError(TaskError):
    """The server does not know the task (-32602): it expired, or the server restarted and forgot it."""


class TaskDetachedError(McpError):
    """The caller stopped waiting and left the task running on the server; `task_id` comes back to it."""

    def __init__(self, message: str, *, server: str | None = None, task_id: str) -> None:
        super().__init__(message, server=server)
        self.task_id = task_id


class ToolCallTimeout(McpError):
    """A tool call did not finish within its timeout."""

    def __init__(self, message: str, *, server: str | None = None, timeout: float) -> None:
        super().__init__(message, server=server)
        self.timeout = timeout


class ProviderError(SynapseError):
    """An LLM provider call failed."""

    def __init__(self, message: str, *, provider: str, status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class MissingKeyError(ProviderError):
    """The provider needs an API key that is not set."""

    def __init__(self, message: str, *, provider: str, variable: str) -> None:
        super().__init__(message, provider=provider)
        self.variable = variable


class AuthenticationError(ProviderError):
    """The provider rejected the key (401 or 403)."""


class RateLimitError(ProviderError):
    """The provider kept answering 429 after bounded retries."""

    def __init__(
        self, message: str, *, provider: str, status: int | None = 429, retry_after: float | None = None
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class ProviderUnavailableError(ProviderError):
    """The provider kept failing with 5xx or overload after bounded retries."""


class ProviderTimeout(ProviderError):
    """The provider did not answer in time."""


class StreamError(ProviderError):
    """The response stream broke half way or could not be parsed."""


class AgentError(SynapseError):
    """The agent loop could not finish the turn."""


class MaxIterationsError(AgentError):
    """The model still asked for tools after the maximum number of iterations."""

    def __init__(self, message: str, *, iterations: int) -> None:
        super().__init__(message)
        self.iterations = iterations


class CassetteError(SynapseError):
    """A record/replay cassette cannot be read or written (see synapse_nb/cassette.py)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class ReplayMismatchError(CassetteError):
    """A model request (or tool call) being replayed is not in the cassette.

    `message_index` is the 0-based index of the first message that differs from the nearest recorded
    request (None when the messages agree and the system prompt, tools or parameters differ).
    """

    def __init__(self, message: str, *, path: str | None = None, message_index: int | None = None) -> None:
        super().__init__(message, path=path)
        self.message_index = message_index


class BudgetExceededError(AgentError):
    """The next model call could pass a budget (USD or tokens); the turn stopped before making it."""

    def __init__(self, message: str, *, limit: float, spent: float, unit: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.spent = spent
        self.unit = unit  # "USD" or "tokens"
