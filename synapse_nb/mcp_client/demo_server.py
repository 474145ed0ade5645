"""The demo MCP server `synapse-demo`: a small shop data set behind read-only SQL, plus misbehaving test tools.

    python -m synapse_nb.mcp_client.demo_server                      # stdio (default)
    python -m synapse_nb.mcp_client.demo_server --http --port 8765   # streamable HTTP on 127.0.0.1:8765/mcp
    python -m synapse_nb.mcp_client.demo_server --sse --port 8765    # SSE on 127.0.0.1:8765/sse
    python -m synapse_nb.mcp_client.demo_server --test-tools         # the shop plus the test tools
    python -m synapse_nb.mcp_client.demo_server --legacy             # speak protocol 2025-11-25 only

Data tools: list_tables, describe_table, query, summarize_column (read-only), drop_table (destructive
by its annotations; it only pretends). Test tools, only with `--test-tools` (`build_server(test_tools=True)`)
so that a user's tool list shows the shop alone: echo, sleep, progress, fail, crash, garbage, image, large, env,
add_tool, cancellations. Resource `demo://schema`; prompt `explore_table`. The tables (products,
customers, orders) load from the CSV files in `demo_data/` into an in-memory SQLite database.

The test tools also include the ones that talk back while a call waits (progress_held, question, sign_in;
`fire` releases them: demo_waiting.py). `--legacy` serves stdio in the 2025 handshake era only, where a
server sends requests of its own (elicitation) and may cancel them.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import re
import sqlite3
import struct
import sys
import threading
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from importlib import resources
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .demo_waiting import add_waiting_tools, serve_legacy_stdio

__all__ = ["build_server", "load_database", "main"]

NAME = "synapse-demo"
MAX_ROWS = 200
_READ_ONLY = mt.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
_TEST = mt.ToolAnnotations(read_only_hint=True, open_world_hint=False)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ALLOWED_SQL = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


def load_database() -> sqlite3.Connection:
    """The bundled CSV tables in an in-memory SQLite database that refuses every write afterwards."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    for entry in sorted(resources.files(__package__ or "synapse_nb.mcp_client").joinpath("demo_data").iterdir(),
                        key=lambda e: e.name):
        if entry.name.endswith(".csv"):
            _load_csv(db, entry.name.removesuffix(".csv"), entry.read_text(encoding="utf-8"))
    db.commit()
    db.execute("PRAGMA query_only = ON")
    db.set_authorizer(lambda action, *_: sqlite3.SQLITE_OK if action in _ALLOWED_SQL else sqlite3.SQLITE_DENY)
    return db


def _load_csv(db: sqlite3.Connection, table: str, text: str) -> None:
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    kinds = [_column_type([r[i] for r in body]) for i in range(len(header))]
    columns = ", ".join(f'"{h}" {k}' for h, k in zip(header, kinds, strict=True))
    db.execute(f'CREATE TABLE "{table}" ({columns})')
    convert = [int if k == "INTEGER" else float if k == "REAL" else str for k in kinds]
    db.executemany(
        f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(header))})',
        [[None if v == "" else f(v) for f, v in zip(convert, r, strict=True)] for r in body],
    )


def _column_type(values: list[str]) -> str:
    present = [v for v in values if v != ""]
    for kind, parse in (("INTEGER", int), ("REAL", float)):
        try:
            for v in present:
                parse(v)
            return kind
        except ValueError:
            continue
    return "TEXT"


class _Shop:
    """The database plus what the test tools remember (cancelled sleeps).

    The database is open while at least one session of the server runs (the server's lifespan; an SSE
    server runs one per connection) and closed when the last one ends, so that no sqlite3 connection is
    left to the garbage collector (a ResourceWarning from Python 3.13 on). The data is read-only, so a
    later session simply loads it again; the counters live here and outlast sessions.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cancellations = 0
        self.tables: list[str] = []
        self._columns: dict[str, list[tuple[str, str]]] = {}
        self._db: sqlite3.Connection | None = None
        self._sessions = 0

    @contextlib.asynccontextmanager
    async def open(self, _server: MCPServer[None]) -> AsyncIterator[None]:
        """The server's lifespan: the database is open inside it."""
        with self.lock:
            if self._sessions == 0:
                self._db = load_database()
                self.tables = [r[0] for r in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
                # PRAGMA is refused by the read-only authorizer, so the columns come from a SELECT's description
                self._columns = {t: self._probe_columns(self._db, t) for t in self.tables}
            self._sessions += 1
        try:
            yield
        finally:
            with self.lock:
                self._sessions -= 1
                if self._sessions == 0 and self._db is not None:
                    self._db.close()
                    self._db = None

    @staticmethod
    def _probe_columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
        names = [d[0] for d in db.execute(f'SELECT * FROM "{table}" LIMIT 0').description]
        kinds = []
        for name in names:
            sql = f'SELECT typeof("{name}") FROM "{table}" WHERE "{name}" IS NOT NULL LIMIT 1'
            row = db.execute(sql).fetchone()
            kinds.append(str(row[0]).upper() if row else "TEXT")
        return list(zip(names, kinds, strict=True))

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self.lock:
            if self._db is None:
                raise RuntimeError("the demo database is closed: tools run only while a session is open")
            cursor = self._db.execute(sql, params)
            columns = [d[0] for d in cursor.description or ()]
            return columns, cursor.fetchall()

    def columns(self, table: str) -> list[tuple[str, str]]:
        return self._columns[table]

    def check_table(self, table: str) -> str | None:
        if table not in self.tables:
            return f"unknown table {table!r}; the tables are: {', '.join(self.tables)}"
        return None


def _table_text(columns: list[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table."""
    def cell(v: Any) -> str:
        return "" if v is None else str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _result(text: str, structured: dict[str, Any] | None = None, *, error: bool = False) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], structured_content=structured,
                             is_error=error)


def _png(width: int = 32, height: int = 32) -> bytes:
    """A small RGB gradient as PNG, written by hand (zlib + struct, no imaging library)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(
        b"\x00" + b"".join(bytes((x * 255 // (width - 1), y * 255 // (height - 1), 160)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def build_server(wire_fd: int = 1, *, test_tools: bool = False) -> MCPServer:
    """The server; `test_tools` adds the misbehaving tools tests use; `wire_fd` is where `garbage` writes
    (the stdio transport's real stdout)."""
    shop = _Shop()
    server = MCPServer(
        NAME,
        instructions="A small coffee-and-tea shop: tables products, customers and orders. Use list_tables, "
        "describe_table and query (read-only SQLite SQL).",
        version="1.0",
        log_level="WARNING",
        lifespan=shop.open,
    )

    @server.tool(annotations=_READ_ONLY)
    def list_tables() -> mt.CallToolResult:
        """List the tables with their row counts and columns."""
        tables = []
        for t in shop.tables:
            count = shop.run(f'SELECT COUNT(*) FROM "{t}"')[1][0][0]
            tables.append({"name": t, "rows": count, "columns": [c for c, _ in shop.columns(t)]})
        text = "\n".join(f"- {t['name']} ({t['rows']} rows): {', '.join(t['columns'])}" for t in tables)
        return _result(text, {"tables": tables})

    @server.tool(annotations=_READ_ONLY)
    def describe_table(table: str) -> mt.CallToolResult:
        """Describe one table: its columns with types, its row count and a few sample rows."""
        if problem := shop.check_table(table):
            return _result(problem, error=True)
        columns = shop.columns(table)
        count = shop.run(f'SELECT COUNT(*) FROM "{table}"')[1][0][0]
        names, sample = shop.run(f'SELECT * FROM "{table}" LIMIT 3')
        text = (f"Table {table}: {count} rows\n\n" + "\n".join(f"- {c} ({k})" for c, k in columns)
                + "\n\nSample rows:\n" + _table_text(names, sample))
        return _result(text, {"table": table, "rows": count, "columns": [{"name": c, "type": k} for c, k in columns],
                              "sample": [list(r) for r in sample]})

    @server.tool(annotations=_READ_ONLY)
    def query(sql: str) -> mt.CallToolResult:
        """Run one read-only SQL query (SQLite dialect: SELECT or WITH) and return at most 200 rows."""
        statement = re.sub(r"^\s*(--[^\n]*\n\s*|/\*.*?\*/\s*)*", "", sql, flags=re.S)
        if not re.match(r"(?i)(select|with)\b", statement):
            return _result("only read-only queries are allowed: start with SELECT or WITH", error=True)
        try:
            columns, rows = shop.run(sql)
        except sqlite3.Error as exc:
            return _result(f"SQL error: {exc}", error=True)
        shown = rows[:MAX_ROWS]
        text = _table_text(columns, shown)
        if len(rows) > MAX_ROWS:
            text += f"\n\n({len(rows)} rows; showing the first {MAX_ROWS})"
        return _result(text, {"columns": columns, "rows": [list(r) for r in shown], "row_count": len(rows),
                              "truncated": len(rows) > MAX_ROWS})

    @server.tool(annotations=_READ_ONLY)
    def summarize_column(table: str, column: str) -> mt.CallToolResult:
        """Summarise one column: count, nulls, distinct values, and min/max/mean or the most common values."""
        if problem := shop.check_table(table):
            return _result(problem, error=True)
        kinds = dict(shop.columns(table))
        if column not in kinds or not _IDENT.match(column):
            return _result(f"unknown column {column!r} in {table}; columns: {', '.join(kinds)}", error=True)
        q = f'"{column}"'
        count, nulls, distinct = shop.run(
            f'SELECT COUNT({q}), SUM({q} IS NULL), COUNT(DISTINCT {q}) FROM "{table}"')[1][0]
        summary: dict[str, Any] = {"table": table, "column": column, "type": kinds[column], "count": count,
                                   "nulls": nulls or 0, "distinct": distinct}
        if kinds[column] in ("INTEGER", "REAL"):
            lo, hi, mean, total = shop.run(f'SELECT MIN({q}), MAX({q}), AVG({q}), SUM({q}) FROM "{table}"')[1][0]
            summary.update(min=lo, max=hi, mean=round(mean, 4) if mean is not None else None, sum=total)
        else:
            top = shop.run(f'SELECT {q}, COUNT(*) AS n FROM "{table}" GROUP BY {q} ORDER BY n DESC, {q} LIMIT 5')[1]
            summary["top"] = [{"value": v, "count": n} for v, n in top]
        text = "\n".join(f"{k}: {v}" for k, v in summary.items())
        return _result(text, summary)

    @server.tool(annotations=mt.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    def drop_table(table: str) -> str:
        """Drop a table. (The demo only pretends: its data never changes.)"""
        if problem := shop.check_table(table):
            return problem
        return f"pretended to drop table {table} (the demo server never changes its data)"

    if test_tools:
        _add_test_tools(server, shop, wire_fd)
        add_waiting_tools(server, _TEST)

    @server.resource("demo://schema", name="schema", description="The tables and their columns",
                     mime_type="text/markdown")
    def schema() -> str:
        parts = []
        for t in shop.tables:
            parts.append(f"## {t}\n" + "\n".join(f"- {c} ({k})" for c, k in shop.columns(t)))
        return "\n\n".join(parts)

    @server.prompt(description="Explore one table of the demo shop")
    def explore_table(table: str) -> str:
        return (f"Describe the table {table} of the synapse-demo shop: what one row means, the columns that matter, "
                "and three questions worth asking of it. Use describe_table and query.")

    return server


def _add_test_tools(server: MCPServer, shop: _Shop, wire_fd: int) -> None:
    """The tools tests need: echo, sleep (counted cancellations), errors, a crash, garbage on the wire, ..."""
    @server.tool(annotations=_TEST, structured_output=False)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(annotations=_TEST, structured_output=False)
    async def sleep(seconds: float) -> str:
        """Sleep for that many seconds (at most an hour); a cancelled sleep is logged to stderr and counted."""
        started = time.monotonic()
        print(f"{NAME}: sleep started ({seconds:g} s)", file=sys.stderr, flush=True)
        try:
            await anyio.sleep(min(max(seconds, 0.0), 3600.0))
        except anyio.get_cancelled_exc_class():
            shop.cancellations += 1
            print(f"{NAME}: sleep cancelled after {time.monotonic() - started:.2f} s", file=sys.stderr, flush=True)
            raise
        return f"slept {seconds:g} s"

    @server.tool(annotations=_TEST, structured_output=False)
    async def progress(steps: int, seconds: float, ctx: Context) -> str:
        """Take `steps` steps of `seconds` each (at most 1000, an hour in all), reporting progress with a message."""
        steps = max(1, min(steps, 1000))
        pause = min(max(seconds, 0.0), 3600.0 / steps)
        for step in range(1, steps + 1):
            await anyio.sleep(pause)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"took {steps} steps"

    @server.tool(annotations=_TEST)
    def cancellations() -> int:
        """How many sleep calls were cancelled by the client so far."""
        return shop.cancellations

    @server.tool(annotations=_TEST)
    def fail(message: str) -> mt.CallToolResult:
        """Return an error result (is_error) carrying the message."""
        return _result(message, error=True)

    @server.tool(annotations=_TEST, structured_output=False)
    def crash() -> str:
        """Exit the server process at once, mid-call (exit status 3)."""
        print(f"{NAME}: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool(annotations=_TEST, structured_output=False)
    def garbage(lines: int = 3) -> str:
        """Write that many lines that are not JSON-RPC to the protocol stream (stdout), then answer."""
        for i in range(max(0, min(lines, 1000))):
            os.write(wire_fd, f"this is not JSON-RPC, line {i + 1}\n".encode())
        return f"wrote {lines} non-JSON lines to stdout"

    @server.tool(annotations=_TEST)
    def image() -> Image:
        """A small PNG image (a colour gradient)."""
        return Image(data=_png(), format="png")

    @server.tool(annotations=_TEST, structured_output=False)
    def large(kb: int) -> str:
        """That many kilobytes of text (lines of digits), at most 64 MB."""
        size = max(0, min(kb, 65536)) * 1024
        line = "0123456789" * 10 + "\n"
        return (line * (size // len(line) + 1))[:size]

    @server.tool(annotations=_TEST)
    def env(name: str) -> dict[str, Any]:
        """Whether an environment variable is set in the server process (its value is never returned)."""
        return {"name": name, "set": name in os.environ}

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Add a tool with that name (it echoes its text) and announce that the tool list changed."""

        def added(text: str) -> str:
            return text

        server.add_tool(added, name=name, description=f"Echo tool {name!r}, added at run time.",
                        structured_output=False)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added tool {name}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m synapse_nb.mcp_client.demo_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    mode.add_argument("--sse", action="store_true", help="serve SSE at http://HOST:PORT/sse")
    parser.add_argument("--legacy", action="store_true",
                        help="stdio in the 2025 handshake era only (protocol 2025-11-25)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port for --http / --sse (default 8765)")
    parser.add_argument("--test-tools", action="store_true",
                        help="also offer the test tools (echo, sleep, progress, fail, crash, large, ...)")
    options = parser.parse_args(argv)
    if options.http or options.sse:
        server = build_server(test_tools=options.test_tools)
        kind, path = ("streamable HTTP", "/mcp") if options.http else ("SSE", "/sse")
        print(f"{NAME}: serving {kind} on http://{options.host}:{options.port}{path} (pid {os.getpid()})",
              file=sys.stderr, flush=True)
        server.run("streamable-http" if options.http else "sse", host=options.host, port=options.port)
        return
    # The SDK points fd 1 at stderr while it serves, so that stray prints miss the protocol stream;
    # `garbage` writes to a duplicate of the real stdout on purpose.
    server = build_server(wire_fd=os.dup(1), test_tools=options.test_tools)
    print(f"{NAME}: serving stdio (pid {os.getpid()})", file=sys.stderr, flush=True)
    if options.legacy:
        anyio.run(serve_legacy_stdio, server)
    else:
        server.run()


if __name__ == "__main__":
    main()
