"""The built-in "demo" script: answers questions about the demo MCP server's shop data by picking its tools."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._script import OFFLINE_ANSWER, Conversation, Reply, ToolOutcome

__all__ = ["DemoScript"]

# The demo server's tables and columns (synapse_nb/mcp_client/demo_data/*.csv), to spot names in a prompt.
TABLES: Mapping[str, tuple[str, ...]] = {
    "orders": ("order_id", "customer_id", "product_id", "quantity", "unit_price", "order_date", "status", "channel"),
    "products": ("product_id", "name", "category", "unit_price", "unit_cost", "launched_on"),
    "customers": ("customer_id", "name", "email", "country", "city", "segment", "signup_date"),
}
MAX_STEPS = 4  # a question never takes more replies than this; then the script answers with what it has
SEARCH = "tools__search"
"""The tool search a turn offers instead of every tool when many are connected (agent/tool_search.py)."""
SEARCH_QUERY = "list the shop's tables, describe a table, query it with SQL, summarize a column"

REVENUE = "o.quantity * o.unit_price"
SOLD = "o.status IN ('delivered', 'shipped')"
REVENUE_NOTE = "Revenue is quantity times unit price, over orders delivered or shipped (not cancelled or returned)."


@dataclass(frozen=True, slots=True)
class Question:
    """A canned analysis: when its pattern matches the prompt, run this SQL and title the answer."""

    pattern: str
    title: str
    sql: str
    note: str = REVENUE_NOTE


QUESTIONS: tuple[Question, ...] = (
    Question(
        r"(best[- ]?sell|most (popular|sold)|units)\b.*product|product.*\b(units|sold|popular)",
        "Best-selling products by units",
        "SELECT p.name AS product, p.category, SUM(o.quantity) AS units, "
        f"ROUND(SUM({REVENUE}), 2) AS revenue\nFROM orders o JOIN products p ON p.product_id = o.product_id\n"
        f"WHERE {SOLD}\nGROUP BY p.product_id\nORDER BY units DESC, revenue DESC\nLIMIT 5",
    ),
    Question(
        r"\b(top|best|most|highest|biggest|leading)\b.*\bproducts?\b|\bproducts?\b.*\b(revenue|sales)\b",
        "Top products by revenue",
        "SELECT p.name AS product, p.category, SUM(o.quantity) AS units, "
        f"ROUND(SUM({REVENUE}), 2) AS revenue\nFROM orders o JOIN products p ON p.product_id = o.product_id\n"
        f"WHERE {SOLD}\nGROUP BY p.product_id\nORDER BY revenue DESC\nLIMIT 5",
    ),
    Question(
        r"\b(top|best|most|highest|biggest|leading|loyal)\b.*\bcustomers?\b|\bcustomers?\b.*\b(spen[dt]|revenue)\b",
        "Top customers by spend",
        "SELECT c.name AS customer, c.country, COUNT(*) AS orders, ROUND(SUM("
        f"{REVENUE}), 2) AS spent\nFROM orders o JOIN customers c ON c.customer_id = o.customer_id\n"
        f"WHERE {SOLD}\nGROUP BY c.customer_id\nORDER BY spent DESC\nLIMIT 5",
    ),
    Question(
        r"\b(month|monthly|trend|over time|per month|by month)\b",
        "Revenue by month",
        "SELECT strftime('%Y-%m', o.order_date) AS month, COUNT(*) AS orders, "
        f"ROUND(SUM({REVENUE}), 2) AS revenue\nFROM orders o\nWHERE {SOLD}\nGROUP BY month\nORDER BY month",
    ),
    Question(
        r"\b(countr(y|ies)|nations?|where .*customers)\b",
        "Revenue by country",
        "SELECT c.country, COUNT(DISTINCT c.customer_id) AS customers, COUNT(*) AS orders, "
        f"ROUND(SUM({REVENUE}), 2) AS revenue\nFROM orders o JOIN customers c ON c.customer_id = o.customer_id\n"
        f"WHERE {SOLD}\nGROUP BY c.country\nORDER BY revenue DESC",
    ),
    Question(
        r"\bcategor(y|ies)\b",
        "Revenue by product category",
        "SELECT p.category, SUM(o.quantity) AS units, ROUND(SUM("
        f"{REVENUE}), 2) AS revenue\nFROM orders o JOIN products p ON p.product_id = o.product_id\n"
        f"WHERE {SOLD}\nGROUP BY p.category\nORDER BY revenue DESC",
    ),
    Question(
        r"\bchannels?\b",
        "Orders and revenue by sales channel",
        f"SELECT o.channel, COUNT(*) AS orders, ROUND(SUM({REVENUE}), 2) AS revenue\nFROM orders o\n"
        f"WHERE {SOLD}\nGROUP BY o.channel\nORDER BY revenue DESC",
    ),
    Question(
        r"\b(status|statuses|cancel+ed|returned|returns)\b",
        "Orders by status",
        "SELECT status, COUNT(*) AS orders, ROUND(SUM(quantity * unit_price), 2) AS value\nFROM orders\n"
        "GROUP BY status\nORDER BY orders DESC",
        note="Value is quantity times unit price of the orders in each status.",
    ),
    Question(
        r"\b(revenue|sales|turnover|total|average order)\b",
        "Revenue overall",
        f"SELECT COUNT(*) AS orders, SUM(o.quantity) AS units, ROUND(SUM({REVENUE}), 2) AS revenue, "
        f"ROUND(SUM({REVENUE}) / COUNT(*), 2) AS avg_order_value\nFROM orders o\nWHERE {SOLD}",
    ),
)

_HOW_MANY = re.compile(r"\bhow many (orders|products|customers)\b")
# SQL in a prompt: in backticks (any case), or starting with an upper-case SELECT / WITH.
_RAW_SQL = (
    re.compile(r"(?is)`+(?:sql\s)?\s*((?:select|with)\s.+?)\s*;?\s*`+"),
    re.compile(r"(?s)\b((?:SELECT|WITH)\s.+?)\s*[;?]?\s*$"),
)
_TABLES_Q = re.compile(r"\btables?\b|\bdata ?sets?\b|\bwhat data\b|\bwhich data\b|\bdatabase\b|\bschema\b")
_DESCRIBE_Q = re.compile(r"\b(describe|columns?|fields?|structure|schema of|look like)\b")
_SUMMARY_Q = re.compile(r"\b(summari[sz]e|summary|stats|statistics|distribution|range of)\b")
_LIST_LINE = re.compile(r"^\s*[-*]\s*(\w+)\s*\((\d+) rows?\)(?::\s*(.*))?$", re.M)
_TABLE_HEAD = re.compile(r"Table (\w+): (\d+) rows")
_COLUMN_LINE = re.compile(r"^\s*-\s*(\w+)\s*\((\w+)\)\s*$", re.M)


def _mentioned_table(prompt: str) -> str | None:
    for table in TABLES:
        if re.search(rf"\b{table[:-1]}s?\b", prompt):
            return table
    return None


def _mentioned_column(prompt: str, table: str | None) -> tuple[str, str] | None:
    for t in [table] if table else list(TABLES):
        for column in TABLES[t]:
            if re.search(rf"\b{column}\b|\b{column.replace('_', ' ')}\b", prompt):
                return t, column
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _tables_from_list(text: str) -> list[tuple[str, int | None, list[str]]]:
    """(name, rows, columns) per table from list_tables' text (its bullet lines, or JSON)."""
    found: list[tuple[str, int | None, list[str]]] = [
        (m.group(1), int(m.group(2)), [c.strip() for c in (m.group(3) or "").split(",") if c.strip()])
        for m in _LIST_LINE.finditer(text)
    ]
    if found:
        return found
    data = _json(text)
    items = data.get("tables", []) if isinstance(data, dict) else data if isinstance(data, list) else []
    if not items:
        items = [line.strip(" -*") for line in text.splitlines() if re.fullmatch(r"\s*[-*]?\s*\w+\s*", line)]
    tables: list[tuple[str, int | None, list[str]]] = []
    for item in items:
        if isinstance(item, str):
            tables.append((item, None, []))
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            rows = item.get("rows")
            tables.append((item["name"], rows if isinstance(rows, int) else None, list(item.get("columns") or [])))
    return tables


def _described(outcome: ToolOutcome) -> tuple[str, int | None, list[str]] | None:
    """(name, rows, 'column (TYPE)' list) from describe_table's text."""
    head = _TABLE_HEAD.search(outcome.text)
    table = head.group(1) if head else str(outcome.call.arguments.get("table", ""))
    if not table or outcome.is_error:
        return None
    columns = [f"{name} ({kind.lower()})" for name, kind in _COLUMN_LINE.findall(outcome.text)]
    return table, int(head.group(2)) if head else None, columns


def _markdown_table(text: str) -> str:
    """The result as a Markdown table: as is when it is one already, rendered when it is JSON rows."""
    if text.lstrip().startswith("|"):
        return text.strip()
    data = _json(text)
    if isinstance(data, dict) and isinstance(data.get("rows"), list) and isinstance(data.get("columns"), list):
        columns, rows = [str(c) for c in data["columns"]], data["rows"]
    elif isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        columns = list(dict.fromkeys(k for r in data for k in r))
        rows = [[r.get(c) for c in columns] for r in data]
    else:
        return f"```\n{text.strip()}\n```"
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


class DemoScript:
    """Picks the demo server's tools (any server name: matched by the `__TOOL` suffix) to answer shop questions."""

    def reply(self, c: Conversation) -> Reply:
        tools = {name: c.find_tool(name) for name in ("list_tables", "describe_table", "query", "summarize_column")}
        if not any(tools.values()):
            # many tools connected: the shop's are found by the tool search first
            if any(t.name == SEARCH for t in c.tools) and not c.done("search"):
                return Reply("Let me find the shop's tools.", ((SEARCH, {"query": SEARCH_QUERY}),))
            return Reply(OFFLINE_ANSWER)
        failed = [o for o in c.latest if o.is_error]
        if failed:
            return Reply(self._failure(failed))
        prompt = c.prompt.lower()
        table = _mentioned_table(prompt)
        if c.step >= MAX_STEPS:
            return Reply("I have looked as far as this script goes; here is what the tools said:\n\n"
                         + "\n\n".join(o.text for o in c.outcomes))

        sql_match = _RAW_SQL[0].search(c.prompt) or _RAW_SQL[1].search(c.prompt)
        if tools["query"] and sql_match:
            return self._query(c, tools["query"], sql_match.group(1).strip(), "Your query", "")
        column = _mentioned_column(prompt, table)
        if tools["summarize_column"] and _SUMMARY_Q.search(prompt) and column:
            return self._summary(c, tools["summarize_column"], *column)
        if tools["describe_table"] and table and _DESCRIBE_Q.search(prompt):
            return self._describe(c, tools["describe_table"], table)
        how_many = _HOW_MANY.search(prompt)
        if tools["query"] and how_many:
            counted = how_many.group(1)
            return self._query(c, tools["query"], f"SELECT COUNT(*) AS {counted} FROM {counted}",
                               f"Number of {counted}", "")
        if tools["query"]:
            for question in QUESTIONS:
                if re.search(question.pattern, prompt):
                    return self._query(c, tools["query"], question.sql, question.title, question.note)
        if tools["list_tables"] and _TABLES_Q.search(prompt):
            return self._tables(c, tools["list_tables"], tools["describe_table"])
        if tools["describe_table"] and table:
            return self._describe(c, tools["describe_table"], table)
        return Reply(self._help([t for t in tools.values() if t]))

    # -- flows: each is "call the tool(s)" until the results are in, then "answer from them"

    def _tables(self, c: Conversation, list_tool: str, describe_tool: str | None) -> Reply:
        listed = c.done("list_tables")
        if not listed:
            return Reply("Let me look at the tables.", ((list_tool, {}),))
        tables = _tables_from_list(listed[-1].text)
        if not tables:
            return Reply(f"The server lists its tables as:\n\n{listed[-1].text.strip()}")
        described = [d for o in c.done("describe_table") if (d := _described(o))]
        if describe_tool and tables and not c.done("describe_table"):
            # One reply asking for every table at once: the agent runs these calls concurrently.
            return Reply("", tuple((describe_tool, {"table": name}) for name, _, _ in tables))
        details = {name: (rows, columns) for name, rows, columns in described}
        lines = [f"The demo shop database has **{len(tables)} tables**:", "", "| table | rows | columns |",
                 "|---|---:|---|"]
        for name, rows, columns in tables:
            rows_d, columns_d = details.get(name, (None, []))
            count = rows_d if rows_d is not None else rows
            lines.append(f"| `{name}` | {'' if count is None else f'{count:,}'} | {', '.join(columns_d or columns)} |")
        lines += ["", "Ask me for example *top products by revenue*, *revenue by month* or *describe customers*."]
        return Reply("\n".join(lines))

    def _describe(self, c: Conversation, tool: str, table: str) -> Reply:
        done = [o for o in c.done("describe_table") if o.call.arguments.get("table") == table]
        if not done:
            return Reply("", ((tool, {"table": table}),))
        described = _described(done[-1])
        if described is None:
            return Reply(done[-1].text)
        name, rows, columns = described
        head = f"**`{name}`** has {rows:,} rows" if rows is not None else f"**`{name}`**"
        listed = "\n".join(f"- {col}" for col in columns) or done[-1].text
        sample = done[-1].text.split("Sample rows:", 1)
        extra = f"\n\nA few rows:\n\n{sample[1].strip()}" if len(sample) == 2 else ""
        return Reply(f"{head} and {len(columns)} columns:\n\n{listed}{extra}")

    def _summary(self, c: Conversation, tool: str, table: str, column: str) -> Reply:
        if not c.done("summarize_column"):
            return Reply("", ((tool, {"table": table, "column": column}),))
        lines = [line.split(":", 1) for line in c.done("summarize_column")[-1].text.splitlines() if ":" in line]
        rows = "\n".join(f"| {k.strip()} | {v.strip()} |" for k, v in lines if k.strip() not in ("table", "column"))
        return Reply(f"Summary of **`{table}.{column}`**:\n\n| statistic | value |\n|---|---|\n{rows}")

    def _query(self, c: Conversation, tool: str, sql: str, title: str, note: str) -> Reply:
        if not c.done("query"):
            return Reply("", ((tool, {"sql": sql}),))
        parts = [f"**{title}**", "", _markdown_table(c.done("query")[-1].text)]
        if note:
            parts += ["", note]
        parts += ["", "```sql", sql, "```"]
        return Reply("\n".join(parts))

    def _failure(self, failed: list[ToolOutcome]) -> str:
        lines = [f"The tool `{o.call.name}` reported an error: {o.text.strip()}" for o in failed]
        return "\n\n".join(lines) + "\n\n(I am the offline scripted model, so I cannot try another way.)"

    def _help(self, found: list[str]) -> str:
        names = ", ".join(f"`{name}`" for name in found)
        return (
            "I'm the offline **scripted** model: I can answer a few questions about the demo shop data with "
            f"the tools I see ({names}). Try:\n\n"
            "- *What tables are there?*\n- *Describe the orders table*\n- *Top products by revenue*\n"
            "- *Revenue by month* / *by country* / *by category*\n- *Top customers*\n"
            "- *Summarize unit_price in products*\n- or a query: *SELECT status, COUNT(*) FROM orders GROUP BY status*"
            "\n\nFor open questions, set `SYNAPSE_MODEL` and an API key to use a real model."
        )
