"""Help texts of the magics (`%synapse help`, `%%synapse --help`, `%mcp help`) around what is generated: option
lines come from args.py, the subcommands' lines from the subcommand tables in magics.py (commands/table.py)."""

from __future__ import annotations

from .args import ASK_OPTIONS

__all__ = ["ASK_HELP", "MCP_HELP", "SYNAPSE_HELP"]


ASK_HELP = """\
%%synapse [options]
<prompt>

Ask the agent; it may call the tools of connected MCP servers and @synapse_nb.tool functions.
{name}, {obj.attr}, {rows[0]} in the prompt insert values from the notebook ({{ and }} for braces).
The result is in _synapse: .text, .messages, .tool_calls (DataFrame), .session_id, .usage (tokens and
.usage.cost_usd, None when the model has no price).

{options}

A one-line question needs no cell: %synapse What tables are there? (default options).
Interrupt the kernel to cancel a turn: it is recorded as cancelled and servers stay connected.
""".replace("{options}", ASK_OPTIONS.help())

SYNAPSE_HELP = """\
%synapse SUBCOMMAND  (or %synapse QUESTION)

  QUESTION                  a one-line question to the agent, e.g. %synapse What tables are there?
{subcommands}

%%synapse [options] + a prompt asks the agent: see %%synapse --help.
%%synapse_sql [--out NAME] [--lake LAKE] + SQL: multi-line SQL over the history (or a lake), a DataFrame
{sql_options}
Settings: %config SynapseMagics (model, approve, max_iterations, format, system, history, session_budget, ...).
Prices: bundled, overridden by ~/.config/synapse/prices.json or SYNAPSE_PRICES (see the README).
History relations: sessions, messages, tool_calls, llm_calls, turns, server_events, schema_migrations.
"""
"""`%synapse help`: `{subcommands}` is filled from the magics' subcommand table (magics.py), `{sql_options}` from
`%%synapse_sql`'s options."""

MCP_HELP = """\
%mcp SUBCOMMAND

{subcommands}

Config file: SYNAPSE_MCP_CONFIG, else ./.synapse/mcp_servers.json, else ~/.config/synapse/mcp_servers.json
({"mcpServers": {...}} as in Claude Desktop, or VS Code's {"servers": {...}}). Header values, and env values
that are secret (named *TOKEN*, *KEY*, *SECRET*, *PASS*..., key-like, URL passwords), are never shown or recorded.
When a server asks for input (a form, a link) or to use the model (sampling), a card shows in the running
cell and the question is asked in the input box; where no one can answer (no stdin) it is declined.
A server that asks for OAuth shows "Sign in to NAME" in the cell; the connect goes on once you signed in.
If the browser cannot reach the kernel (JupyterHub, SSH), paste the address it ended on into the input box
(offered on kernels that look remote; %config SynapseMagics.oauth_redirect = "paste" | "loopback" | "auto").
Tokens stay in the OS keyring, else in a 0600 file under ~/.local/share/synapse, never in the notebook.
"""
"""`%mcp help`: `{subcommands}` is filled from the magics' subcommand table (magics.py)."""
