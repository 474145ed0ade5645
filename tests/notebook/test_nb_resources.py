"""Resources and resource templates from a magic (issue 38, item 8), against the reference server-everything:
`%mcp resources` lists both, `%mcp read` fills a template's variables (and names a missing one) instead of
sending `{resourceId}` as written."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from tests.support.npm_servers import EVERYTHING, node_for

pytestmark = [pytest.mark.process, pytest.mark.node]

TEXT_TEMPLATE = "demo://resource/dynamic/text/{resourceId}"


def test_resources_lists_resources_and_templates_and_read_fills_a_template(ip: Any) -> None:
    ip.line("mcp", f"connect ev -- {node_for(EVERYTHING)} {EVERYTHING} stdio")
    frame = ip.line("mcp", "resources ev")
    assert list(frame.columns) == ["server", "kind", "uri", "name", "description", "mime_type", "variables"]
    templates = frame[frame["kind"] == "template"]
    assert set(templates["uri"]) >= {TEXT_TEMPLATE, "demo://resource/dynamic/blob/{resourceId}"}
    assert set(templates["variables"]) == {"resourceId"}
    assert (frame["kind"] == "resource").any()  # the static resources are listed beside them
    assert frame.equals(ip.line("mcp", "resources"))  # every server's: the one connected

    ip.ns["resourceId"] = 99  # a Python name like the variable is not what fills it
    read = ip.line("mcp", f"read ev {TEXT_TEMPLATE} resourceId=3")
    assert read.uri == "demo://resource/dynamic/text/3"
    assert "Resource 3" in read.text

    with pytest.raises(UsageError) as missing:
        ip.line("mcp", f"read ev {TEXT_TEMPLATE}")
    assert str(missing.value) == (f"%mcp read: the template {TEXT_TEMPLATE} needs resourceId; "
                                  f"e.g. %mcp read ev {TEXT_TEMPLATE} resourceId=VALUE")
    with pytest.raises(UsageError, match="has no variable id; its variables: resourceId"):
        ip.line("mcp", f"read ev {TEXT_TEMPLATE} id=3")
