"""Resource templates filled in: RFC 6570 URI templates (`demo://table/{name}`) through the SDK's own parser,
so that `%mcp read` and the inspector send a URI, never a template with its `{variables}` left in.

The SDK is imported when a template is first read, not with this module: `%load_ext` imports the `%mcp read`
command, and must not import the SDK (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import McpError

if TYPE_CHECKING:
    from mcp.shared.uri_template import UriTemplate

__all__ = ["expand", "is_template", "variables"]


def is_template(uri: str) -> bool:
    """Whether `uri` holds `{...}` expressions to fill (a plain URI does not)."""
    from mcp.shared.uri_template import UriTemplate

    return UriTemplate.is_template(uri)


def variables(template: str) -> list[str]:
    """The names of the template's variables, in order; McpError when it is no valid RFC 6570 template."""
    return _parse(template).variable_names


def expand(template: str, values: Mapping[str, str]) -> str:
    """The URI the template names with `values` filled in (each encoded as RFC 6570 says for its operator).

    McpError naming the variables left without a value, or the ones the template does not have."""
    parsed = _parse(template)
    names = parsed.variable_names
    unknown = [k for k in values if k not in names]
    if unknown:
        raise McpError(f"the template {template} has no variable {', '.join(unknown)}; its variables: "
                       f"{', '.join(names) or 'none'}")
    missing = [n for n in names if n not in values and n not in parsed.query_variable_names]
    if missing:
        raise McpError(f"the template {template} needs {', '.join(missing)}")
    return parsed.expand(dict(values))


def _parse(template: str) -> UriTemplate:
    from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

    try:
        return UriTemplate.parse(template)
    except InvalidUriTemplate as exc:
        raise McpError(f"{template} is no valid URI template: {exc}") from None
