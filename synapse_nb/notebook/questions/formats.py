"""Format checks of a server's form fields (`email`, `uri`, `date`, `date-time`), for the stdin prompt and widgets.

The MCP spec lets a form's string field name one of these formats; the server expects a value of that
shape. A value that does not have it is refused at the prompt (asked again, with what is wrong), not sent.
Other formats are not checked (the server checks what it asked for).
"""

from __future__ import annotations

import datetime as _dt
import re
from urllib.parse import urlsplit

__all__ = ["CHECKED", "format_problem"]

_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")
CHECKED = ("email", "uri", "date", "date-time")


def format_problem(fmt: str | None, value: str) -> str | None:
    """What is wrong with `value` for the string format `fmt` (`is not an email address, e.g. ...`), or None."""
    if fmt == "email" and not _EMAIL.fullmatch(value):
        return "is not an email address, e.g. ada@example.org"
    if fmt == "uri":
        parts = urlsplit(value)
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme or "") or not (parts.netloc or parts.path) \
                or " " in value:
            return "is not a URI, e.g. https://example.org/page"
    if fmt == "date":
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
                raise ValueError
            _dt.date.fromisoformat(value)
        except ValueError:
            return "is not a date as YYYY-MM-DD, e.g. 2026-03-31"
    if fmt == "date-time":
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*", value):
                raise ValueError
            _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "is not a date and time as YYYY-MM-DDTHH:MM:SS, e.g. 2026-03-31T14:30:00Z"
    return None
