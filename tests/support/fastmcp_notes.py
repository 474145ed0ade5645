"""A fastmcp (PyPI) server whose tool asks the user before it deletes, the documented way (`await
ctx.elicit(...)`), and one that logs (`ctx.debug`, `ctx.info`); run by the fastmcp venv under .tools (make
fastmcp): `python fastmcp_notes.py` over stdio, `python fastmcp_notes.py http PORT` over streamable HTTP on
127.0.0.1."""

from __future__ import annotations

import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("notes")
NOTES = {"groceries": "milk, eggs", "todo": "write the report"}


@mcp.tool
async def delete_note(name: str, ctx: Context) -> str:
    """Delete a note, after asking the user to confirm."""
    answer = await ctx.elicit(f"Delete the note {name!r}?", response_type=bool)
    if answer.action == "accept" and answer.data:
        NOTES.pop(name, None)
        return f"deleted {name}"
    return f"kept {name} ({answer.action})"


@mcp.tool
async def count_notes(ctx: Context) -> int:
    """How many notes there are (it logs what it does, at debug and info)."""
    await ctx.debug("counting the notes")
    await ctx.info(f"{len(NOTES)} notes")
    return len(NOTES)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(show_banner=False)
