"""Ten real MCP servers connected at once (~160 tools), for the tool search: their catalogs as the hub sees them
(written to tests/agent/tool_search_eval/catalogs by scripts/snapshot_tool_catalogs.py, checked against the live
servers by tests/agent/test_tool_catalogs_live.py) and the bench row that offers them to a model.

The servers: from npm, server-everything, server-filesystem, server-memory, GitHub's server-github and Playwright's
server; from PyPI, mcp-server-time, mcp-server-git, mcp-server-motherduck (on a local DuckDB file) and
excel-mcp-server; and our demo server. Only their tool lists are read: no GitHub token, browser or workbook is
needed. Each is what `make tools` installs; a missing one fails naming the target (never skips).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.types import ToolSpec
from tests.support.npm_servers import EVERYTHING, FILESYSTEM, TOOLS, node_for
from tests.support.pypi_servers import motherduck

CATALOGS = Path(__file__).resolve().parents[1] / "agent" / "tool_search_eval" / "catalogs"
MEMORY = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
GITHUB = TOOLS / "catalog" / "node_modules" / "@modelcontextprotocol" / "server-github" / "dist" / "index.js"
PLAYWRIGHT = TOOLS / "catalog" / "node_modules" / "@playwright" / "mcp" / "cli.js"
EXCEL = TOOLS / "catalog" / "excel" / "bin" / "excel-mcp-server"
PYSERVERS = TOOLS / "pyservers" / "bin"
SERVERS = ("everything", "filesystem", "memory", "time", "git", "motherduck", "github", "playwright", "excel", "demo")


@contextlib.contextmanager
def server_entries(scratch: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """The ten servers' config entries (what `%mcp connect` or a config file would say), with a git repository,
    a folder and a DuckDB file made in `scratch`."""
    files, repo, db = scratch / "files", scratch / "repo", scratch / "shop.duckdb"
    files.mkdir(exist_ok=True)
    (files / "notes.txt").write_text("hello\n")
    if not (repo / ".git").exists():
        repo.mkdir(exist_ok=True)
        git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        subprocess.run([*git, "init", "-q"], check=True)
        (repo / "README").write_text("catalogs\n")
        subprocess.run([*git, "add", "README"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    command, python = motherduck()
    if not db.exists():
        make = "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('create table orders(id int, total double)')"
        subprocess.run([str(python), "-c", make, str(db)], check=True)
    node = node_for(EVERYTHING)
    for script in (FILESYSTEM, MEMORY, GITHUB, PLAYWRIGHT):
        node_for(script)
    if not EXCEL.is_file():
        pytest.fail(f"excel-mcp-server is not installed at {EXCEL}: run `make catalog-servers`")
    yield {
        "everything": {"command": node, "args": [str(EVERYTHING), "stdio"]},
        "filesystem": {"command": node, "args": [str(FILESYSTEM), str(files)]},
        "memory": {"command": node, "args": [str(MEMORY)], "env": {"MEMORY_FILE_PATH": str(scratch / "m.jsonl")}},
        "time": {"command": str(PYSERVERS / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(PYSERVERS / "mcp-server-git"), "args": ["--repository", str(repo)]},
        "motherduck": {"command": str(command), "args": ["--db-path", str(db)]},
        "github": {"command": node, "args": [str(GITHUB)]},
        "playwright": {"command": node, "args": [str(PLAYWRIGHT), "--headless", "--isolated"]},
        "excel": {"command": str(EXCEL), "args": ["stdio", "--allow-dir", str(files)]},
        "demo": {"command": sys.executable, "args": ["-m", "synapse_nb.mcp_client.demo_server"]},
    }


@contextlib.asynccontextmanager
async def connected(entries: Mapping[str, Mapping[str, Any]]) -> AsyncIterator[McpHub]:
    """A hub with every server of `entries` connected (one that fails to start fails here, naming it)."""
    async with McpHub() as hub:
        for name, entry in entries.items():
            await hub.connect(name, command=entry["command"], args=entry["args"], env=entry.get("env"),
                              connect_timeout=120)
        yield hub


def catalog_of(hub: McpHub, server: str, scratch: Path) -> dict[str, Any]:
    """One server's catalog as the tool search reads it: what the server says about itself and each tool
    (the SDK's view through the hub), in a stable order, without versions, timings or the `scratch` folder's
    path (a server that names its files says `<scratch>`)."""
    info = hub.server(server)
    tools = sorted((s for s in hub.all_tools if s.server == server), key=lambda s: s.original_name or s.name)
    catalog = {
        "server": server,
        "server_name": info.server_name,
        "title": info.server_title,
        "instructions": info.instructions,
        "tools": [{
            "name": s.original_name, "title": s.title, "description": s.description,
            "inputSchema": s.input_schema, "annotations": dict(s.annotations),
            "for_model": s.for_model,
        } for s in tools],
    }
    text = json.dumps(catalog, ensure_ascii=False).replace(json.dumps(str(scratch))[1:-1], "<scratch>")
    return dict(json.loads(text))


def read_catalogs() -> dict[str, dict[str, Any]]:
    """The snapshots in the repo, by server."""
    return {name: json.loads((CATALOGS / f"{name}.json").read_text(encoding="utf-8")) for name in SERVERS}


def catalog_specs(catalogs: Mapping[str, Mapping[str, Any]] | None = None) -> list[ToolSpec]:
    """The snapshots' tools as the hub offers them to the model (`SERVER__TOOL`; app-only tools left out)."""
    specs: list[ToolSpec] = []
    for server, catalog in (catalogs or read_catalogs()).items():
        for t in catalog["tools"]:
            if t["for_model"]:
                specs.append(ToolSpec(name=f"{server}__{t['name']}", description=t["description"],
                                      input_schema=t["inputSchema"], server=server, original_name=t["name"],
                                      annotations=t["annotations"], title=t["title"]))
    return specs


def catalog_about(catalogs: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, str]:
    """What each server of the snapshots says about itself (its name, title and instructions)."""
    return {server: " ".join(str(c[k]) for k in ("server_name", "title", "instructions") if c.get(k))
            for server, c in (catalogs or read_catalogs()).items()}
