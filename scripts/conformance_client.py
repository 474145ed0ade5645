"""The client under test for the official MCP conformance suite (`@modelcontextprotocol/conformance`).

    conformance client --command "python scripts/conformance_client.py" --scenario NAME

The suite appends the server URL as the last argument and names the scenario in
MCP_CONFORMANCE_SCENARIO (its context, when it has one, is JSON in MCP_CONFORMANCE_CONTEXT). This
driver connects through McpHub, with the same ClientHandlers a notebook injects; where a scenario
asks the user something, the driver's answer ("accept with the defaults") goes through the same
elicitation code path as a user's. Then it calls every tool the server offers. No protocol code
here: what the suite checks is synapse_nb's MCP client. Exit status 0 when everything answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from synapse_nb.errors import SynapseError
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub

SERVER = "conformance"
TIMEOUT = 20.0
ARGUMENTS: Mapping[str, Mapping[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
"""Arguments for the scenarios' tools that take any; every other tool is called with {}."""


async def accept_defaults(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
    """What a user pressing Enter at every prompt gives: the form's defaults, or consent to open the URL."""
    if isinstance(request, ElicitationForm):
        return request.accept_defaults()
    return request.consent()


async def run(url: str, scenario: str) -> int:
    print(f"scenario {scenario}: connecting to {url}", file=sys.stderr)
    async with McpHub(handlers=ClientHandlers(elicit=accept_defaults), default_timeout=TIMEOUT) as hub:
        await hub.connect(SERVER, url=url, connect_timeout=TIMEOUT)
        failed = 0
        for spec in hub.tools:
            name = spec.original_name or spec.name
            result = await hub.call(spec.name, ARGUMENTS.get(name, {}))
            print(f"{name}: {'error: ' if result.is_error else ''}{result.text[:300]}", file=sys.stderr)
            failed += result.is_error
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: conformance_client.py [...] SERVER_URL (the conformance suite appends it)", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if context:
        print(f"context keys: {sorted(context)}", file=sys.stderr)  # values may be credentials: never printed
    try:
        return asyncio.run(run(argv[-1], scenario))
    except SynapseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
