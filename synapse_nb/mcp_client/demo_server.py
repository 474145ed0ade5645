"""The demo MCP server `synapse-demo`: a small shop data set behind read-only SQL (what the quickstart uses).

    python -m synapse_nb.mcp_client.demo_server                      # stdio (default)
    python -m synapse_nb.mcp_client.demo_server --http --port 8765   # streamable HTTP on 127.0.0.1:8765/mcp
    python -m synapse_nb.mcp_client.demo_server --sse --port 8765    # SSE on 127.0.0.1:8765/sse

Data tools: list_tables, describe_table, query, summarize_column (read-only), drop_table (destructive
by its annotations; it only pretends). Resource `demo://schema`; prompt `explore_table`; skill `shop-revenue`
(SEP-2640: `skills/list`, `skills/get`, its files as `skill://` resources; demo_skills.py). The tables (products,
customers, orders) load from the CSV files in `demo_data/` into an in-memory SQLite database. The test suite's
misbehaving tools (echo, sleep, crash, garbage, ...) are not in the wheel: tests/support/tools_server.py adds them to
this server.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import re
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib import resources
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.mcpserver import MCPServer

from .demo_skills import DemoSkills

__all__ = ["NAME", "build_server", "load_database", "main", "serve"]

NAME = "synapse-demo"
MAX_ROWS = 200
_READ_ONLY = mt.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
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
    """The database, open while a session of the server runs.

    The database is open while at least one session of the server runs (the server's lifespan; an SSE
    server runs one per connection) and closed when the last one ends, so that no sqlite3 connection is
    left to the garbage collector (a ResourceWarning from Python 3.13 on). The data is read-only, so a
    later session simply loads it again.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
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


def build_server() -> MCPServer:
    """The shop server (the tests add their misbehaving tools to it: tests/support/tools_server.py)."""
    shop = _Shop()
    skills = DemoSkills.bundled(add_files=False)  # its files are listed after the schema (added below)
    server = MCPServer(
        NAME,
        instructions="A small coffee-and-tea shop: tables products, customers and orders. Use list_tables, "
        "describe_table and query (read-only SQLite SQL).",
        version="1.0",
        log_level="WARNING",
        lifespan=shop.open,
        extensions=[skills],
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

    @server.resource("demo://schema", name="schema", description="The tables and their columns",
                     mime_type="text/markdown")
    def schema() -> str:
        parts = []
        for t in shop.tables:
            parts.append(f"## {t}\n" + "\n".join(f"- {c} ({k})" for c, k in shop.columns(t)))
        return "\n\n".join(parts)

    for skill_file in skills.file_resources():
        server.add_resource(skill_file)

    @server.prompt(description="Explore one table of the demo shop")
    def explore_table(table: str) -> str:
        return (f"Describe the table {table} of the synapse-demo shop: what one row means, the columns that matter, "
                "and three questions worth asking of it. Use describe_table and query.")

    return server


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the shop over stdio, or HTTP/SSE (see the module's docstring)."""
    serve(lambda wire_fd: build_server(), argv, prog="python -m synapse_nb.mcp_client.demo_server", doc=__doc__)


def serve(build: Callable[[int], MCPServer], argv: Sequence[str] | None = None, *, prog: str, doc: str | None,
          legacy: Callable[[MCPServer], Awaitable[None]] | None = None) -> None:
    """The command line of a server built by `build(wire_fd)`: `--http`/`--sse` (`--host`, `--port`), else stdio,
    where `wire_fd` is a duplicate of the real stdout. `legacy`, if given, serves stdio with `--legacy`."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    mode.add_argument("--sse", action="store_true", help="serve SSE at http://HOST:PORT/sse")
    if legacy is not None:
        parser.add_argument("--legacy", action="store_true",
                            help="stdio in the 2025 handshake era only (protocol 2025-11-25)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port for --http / --sse (default 8765)")
    options = parser.parse_args(argv)
    if options.http or options.sse:
        server = build(1)
        kind, path = ("streamable HTTP", "/mcp") if options.http else ("SSE", "/sse")
        print(f"{NAME}: serving {kind} on http://{options.host}:{options.port}{path} (pid {os.getpid()})",
              file=sys.stderr, flush=True)
        server.run("streamable-http" if options.http else "sse", host=options.host, port=options.port)
        return
    # The SDK points fd 1 at stderr while it serves, so that stray prints miss the protocol stream;
    # a server that writes to the protocol stream on purpose gets a duplicate of the real stdout.
    server = build(os.dup(1))
    print(f"{NAME}: serving stdio (pid {os.getpid()})", file=sys.stderr, flush=True)
    if legacy is not None and options.legacy:
        anyio.run(legacy, server)
    else:
        server.run()


if __name__ == "__main__":
    main()
