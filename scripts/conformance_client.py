"""The client under test for the official MCP conformance suite (`@modelcontextprotocol/conformance`).

    conformance client --command "python scripts/conformance_client.py" --scenario NAME

The suite appends the server URL as the last argument and names the scenario in
MCP_CONFORMANCE_SCENARIO (its context, when it has one, is JSON in MCP_CONFORMANCE_CONTEXT). This
driver writes the server as an entry of an MCP servers file (the context, e.g. a pre-registered
client or client credentials, becomes its `oauth` object, secrets as `${env:...}` references) and
connects it with McpHub.connect_config, the path a user's config file takes, with the same
ClientHandlers a notebook injects and a TokenStore in a temporary data directory. Where a scenario
asks the user something, the driver's answer ("accept with the defaults") goes through the same
elicitation code path as a user's; where it asks the user to sign in, the driver's `sign_in` does
what a browser does: it GETs the authorization URL and follows the redirects, which end at the
loopback listener. Then it calls tools as a user would: the calls the scenario's context lists
(`toolCalls`, with their arguments), the calls its description asks for (`SCENARIO_CALLS`), else
every tool the server offers. A server that offers skills (SEP-2640) has them listed as it connects; the
skill scenarios other than `sep-2640-client-no-prefetch` (where a user only looks at the list) then load each
skill as the model would, and read its other files once it loaded. No protocol code here: what the suite
checks is synapse_nb's MCP client. Exit status 0 when everything answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any

import httpx2

from synapse_nb.errors import SynapseError
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.oauth.storage import TokenStore
from synapse_nb.types import ToolSpec

SERVER = "conformance"
TIMEOUT = 20.0
ARGUMENTS: Mapping[str, Mapping[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
"""Arguments for the scenarios' tools that take any; every other tool is called with {}."""
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's CIMD scenario expects (configured as a user would)."""
SECRETS = {"client_secret": "CONFORMANCE_CLIENT_SECRET", "private_key_pem": "CONFORMANCE_PRIVATE_KEY",
           "idp_id_token": "CONFORMANCE_IDP_ID_TOKEN", "valid_jwt": "CONFORMANCE_WORKLOAD_JWT"}
"""Context values that are secrets: they reach the config file as `${env:VAR}` references, as a user's would."""

Call = tuple[str, dict[str, Any]]
"""A tool call the driver makes: the tool's name on the server, and its arguments."""


def echo_schema(tools: Mapping[str, ToolSpec]) -> list[Call]:
    """json-schema-2020-12-preservation: pass the focal tool's inputSchema, as the client holds it, to the echo tool."""
    return [("json_schema_echo", {"schema": dict(tools["json_schema_2020_12_tool"].input_schema)})]


SCENARIO_CALLS: Mapping[str, Any] = {
    "json-schema-2020-12-preservation": echo_schema,
    # the scenario serves tools/list only: it checks that listing never fetches the schema's network $ref
    "json-schema-ref-no-deref": lambda tools: [],
}
"""The calls a scenario's description asks for, from the tools as listed, where calling every tool is not it."""


def planned_calls(scenario: str, context: Mapping[str, Any], tools: Mapping[str, ToolSpec]) -> list[Call]:
    """The tool calls to make: the context's `toolCalls`, else the scenario's own plan, else every tool once."""
    if isinstance(context.get("toolCalls"), list):
        return [(str(c["name"]), dict(c.get("arguments") or {})) for c in context["toolCalls"]]
    if scenario in SCENARIO_CALLS:
        return list(SCENARIO_CALLS[scenario](tools))
    return [(name, dict(ARGUMENTS.get(name, {}))) for name in tools]


SKILLS_LISTED_ONLY = frozenset({"sep-2640-client-no-prefetch"})
"""Skill scenarios where the user only lists the skills: loading one would read its files."""


async def use_skills(hub: McpHub, scenario: str) -> int:
    """List the skills (done on connect); unless the scenario only lists, load each and read its other files, as the
    model would. Returns how many could not be loaded or read (each said on one line)."""
    failed = 0
    for entry in hub.skills.listed():
        print(f"skill {entry.key}: {entry.description}", file=sys.stderr)
        if scenario in SKILLS_LISTED_ONLY:
            continue
        try:
            loaded = await hub.skills.load_skill(entry.key)
            for path in loaded.files:
                await hub.skills.read_skill_file(loaded.entry, path)
        except SynapseError as exc:
            print(f"not loaded: {exc}", file=sys.stderr)
            failed += 1
    return failed


def oauth_entry(scenario: str, context: Mapping[str, Any]) -> dict[str, Any]:
    """The `oauth` object a user would write for what the scenario's context gives."""
    secret = {key: f"${{env:{var}}}" for key, var in SECRETS.items() if context.get(key)}
    if "idp_id_token" in context:  # enterprise-managed (cross-app) access, SEP-990
        return {"grant": "identity_assertion", "client_id": context["client_id"],
                "client_secret": secret["client_secret"], "idp_token_endpoint": context["idp_token_endpoint"],
                "idp_client_id": context["idp_client_id"], "idp_id_token": secret["idp_id_token"]}
    if "valid_jwt" in context:  # workload identity federation: the platform-issued JWT is the grant
        return {"grant": "jwt_bearer", "client_id": context["client_id"], "assertion": secret["valid_jwt"]}
    if "private_key_pem" in context:
        return {"grant": "client_credentials", "client_id": context["client_id"],
                "private_key": secret["private_key_pem"],
                "signing_algorithm": context.get("signing_algorithm", "ES256")}
    if "client-credentials" in scenario:
        return {"grant": "client_credentials", "client_id": context["client_id"],
                "client_secret": secret["client_secret"]}
    entry: dict[str, Any] = {"client_metadata_url": CLIENT_METADATA_URL}
    if scenario.startswith("auth/dpop"):  # the DPoP extension's scenarios: a user turns it on for such a server
        entry["dpop"] = True
    if context.get("client_id"):  # a pre-registered client
        entry["client_id"] = context["client_id"]
        if "client_secret" in secret:
            entry["client_secret"] = secret["client_secret"]
    return entry


async def browse(server: str, authorization_url: str, loopback_redirect: Awaitable[str]) -> str:
    """What a user's browser does: open the link, follow the redirects (to the loopback listener)."""
    print(f"signing in to {server}", file=sys.stderr)
    async with httpx2.AsyncClient(follow_redirects=True, timeout=TIMEOUT) as browser:
        await browser.get(authorization_url)
    return await loopback_redirect


async def accept_defaults(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
    """What a user pressing Enter at every prompt gives: the form's defaults, or consent to open the URL."""
    if isinstance(request, ElicitationForm):
        return request.accept_defaults()
    return request.consent()


async def run(url: str, scenario: str, context: Mapping[str, Any], data: Path) -> int:
    print(f"scenario {scenario}: connecting to {url}", file=sys.stderr)
    entry: dict[str, Any] = {"url": url, "connect_timeout": TIMEOUT}
    if scenario.startswith("auth/"):
        entry["oauth"] = oauth_entry(scenario, context)
    for key, var in SECRETS.items():
        if context.get(key):
            os.environ[var] = str(context[key])
    config = data / "mcp_servers.json"
    config.write_text(json.dumps({"mcpServers": {SERVER: entry}}), encoding="utf-8")
    store = TokenStore(data, backend="file")
    async with McpHub(handlers=ClientHandlers(elicit=accept_defaults), default_timeout=TIMEOUT,
                      token_store=store, sign_in=browse) as hub:
        outcome = (await hub.connect_config(config))[SERVER]
        if isinstance(outcome, SynapseError):
            raise outcome
        tools = {spec.original_name or spec.name: spec for spec in hub.tools}
        failed = await use_skills(hub, scenario)
        for name, arguments in planned_calls(scenario, context, tools):
            if name not in tools:
                print(f"{name}: the server did not list this tool", file=sys.stderr)
                failed += 1
                continue
            result = await hub.call(tools[name].name, arguments)
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
        with tempfile.TemporaryDirectory(prefix="synapse-conformance-data-") as data:
            return asyncio.run(run(argv[-1], scenario, context, Path(data)))
    except SynapseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
