"""The OAuth secrets seen in this process (tokens, codes, client secrets, keys), masked in logs and messages.

Tokens arrive at run time, so they cannot be listed in a server's config; every OAuth value that
passes through storage or the sign-in step is added to one process-wide SecretMask (masking.py's
rules), and a logging filter on the SDK's and our loggers masks every record, its arguments and
its traceback text with it before any handler sees the record.
"""

from __future__ import annotations

import functools
import logging
import re

from ...masking import MASK, SecretMask

__all__ = ["MASKED_LOGGERS", "install_log_masking", "mask_oauth", "oauth_mask"]

MASKED_LOGGERS = ("mcp", "mcp.client.auth", "mcp.client.auth.oauth2", "mcp.client.streamable_http",
                  "mcp.client.sse", "mcp.client.auth.extensions.client_credentials",
                  "mcp.client.auth.extensions.identity_assertion", "httpx2", "httpcore2.http11",
                  "httpcore2.connection",
                  "synapse_nb.mcp", "synapse_nb.mcp.oauth")
"""Loggers whose records are masked (a filter sits on a logger, not on its children: each is listed)."""


_GRANT_PARAMS = re.compile(r"(?P<keep>[?&](?:code|code_verifier|refresh_token|assertion|client_assertion|"
                           r"subject_token)=)[^&#\s\"'\\]+")
"""OAuth values in a URL query or form body that may be logged before they are known to the mask (e.g. the
code in a redirect's Location header, logged by the HTTP library that follows it)."""


def mask_oauth(text: str) -> str:
    """`text` with every known OAuth value and every grant parameter in a query or form masked."""
    text = oauth_mask()(text)
    return _GRANT_PARAMS.sub(lambda m: m.group("keep") + MASK, text) if "=" in text else text


@functools.cache
def oauth_mask() -> SecretMask:
    """The one mask of OAuth values for this process (it only grows; values are never shown)."""
    return SecretMask(environ={})


class _MaskRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        mask = mask_oauth
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: leave it to the handler to complain
            return True
        record.msg, record.args = mask(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = mask(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = mask(record.exc_text)
        return True


@functools.cache
def install_log_masking() -> None:
    """Put the masking filter on every logger of MASKED_LOGGERS (once per process)."""
    masking = _MaskRecords()
    for name in MASKED_LOGGERS:
        logging.getLogger(name).addFilter(masking)
