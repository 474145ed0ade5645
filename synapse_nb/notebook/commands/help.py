"""Help texts of the magics (`%synapse help`, `%%synapse --help`, `%mcp help`); option lines come from args.py."""

from __future__ import annotations

from .args import ASK_OPTIONS, CONNECT_OPTIONS

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

  QUESTION                   a one-line question to the agent, e.g. %synapse What tables are there?
  ask PROMPT                 the same, for a question that starts with a subcommand's name
  status                     model, session, servers, history file
  model [ID]                 show the model, or use ID (provider:model) in this kernel
  session                    the current session
  session new [NAME]         start a fresh session
  session list               sessions in the history file
  session switch NAME        continue session NAME (resumed from the history file if recorded)
  history [-n N]             the last N turns (DataFrame)
  cost [--by B] [--since W]  what model calls cost (DataFrame); B: model (default), server, tool, session,
                             day; W: 7d, 24h, today, 2026-11-01. --by server: which server's tool results
                             cost the most (their tokens in every later prompt)
  sql QUERY                  SQL over the history (DataFrame); multi-line: %%synapse_sql
  sql --lake LAKE QUERY      the same over the team's Iceberg lake (LAKE: a folder, s3://bucket/prefix
                             with SYNAPSE_LAKE_CATALOG, a catalog URI or a lake config .json)
  publish [LAKE]             publish this kernel's history into LAKE now, exactly once (default: the
                             SynapseMagics.publish_to lake, else SYNAPSE_LAKE; publish_to does it after each turn)
  lake compact [LAKE]        rewrite each day's small files as one file
  lake expire [LAKE] [--older-than 7d]
                             drop older snapshots and the data files only they used
  lake migrate OLD_DIR NEW_LAKE
                             move a Parquet lake of the retired format into an Iceberg lake
  inspect                    trace widget of the current session
  reset                      forget the current conversation (the next cell starts a new session)
  record PATH | off          write every model exchange and tool result to a cassette (JSON lines)
  replay PATH [--live-tools] | off
                             answer every model request (and tool call, unless --live-tools) from a
                             cassette: no network, no key; a request it does not hold fails the cell
                             (SYNAPSE_RECORD / SYNAPSE_REPLAY do the same from %load_ext on)
  help                       this help

%%synapse [options] + a prompt asks the agent: see %%synapse --help.
Settings: %config SynapseMagics (model, approve, max_iterations, format, system, history, session_budget, ...).
Prices: bundled, overridden by ~/.config/synapse/prices.json or SYNAPSE_PRICES (see the README).
History relations: sessions, messages, tool_calls, llm_calls, turns, server_events, schema_migrations.
"""

MCP_HELP = """\
%mcp SUBCOMMAND

  connect NAME [--env K=V] [--cwd DIR] -- COMMAND [ARGS...]
                                        start a stdio server; connect options go BEFORE `--` (every word
                                        after it is the server's), for example the bundled demo server:
                                        %mcp connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server
  connect NAME URL [--header K=V]       a streamable-HTTP server (--transport sse for SSE)
  connect                               every enabled server of the config file
  connect --config PATH                 every enabled server of PATH
  connect NAME [--config PATH]          only the config file's entry NAME (even if disabled)
      options (a config file's entry takes the same keys: timeout, approve, tools, log_level ...):
{connect_options}
  list                                  servers: transport, state, tools, pid
  tools [SERVER]                        tools as offered to the model (DataFrame)
  call SERVER.TOOL {"key": "value"}     call a tool by hand (JSON object,
  call SERVER.TOOL key=value ...        or key=value words, typed by the tool's schema: a string
                                        parameter gets the word as written; never asks for approval)
  call --detach SERVER.TOOL ...         a call run as an MCP task: leave it running on the server
  tasks [--all]                         this notebook's MCP tasks (--all: every notebook's): status, age, cell
  tasks result ID | cancel ID           wait for a task's result | cancel it on its server
  disconnect NAME | --all               stop servers
  restart NAME                          restart a server (also one that crashed too often)
  inspect [NAME]                        inspector widget: servers, tools, forms to call them
  resources [SERVER]                    resources and resource templates (DataFrame)
  read SERVER URI                       read a resource, e.g. %mcp read demo demo://schema
  read SERVER TEMPLATE k=v ...          fill a template's {variables} and read it (the URI as written:
                                        no {expr} expansion), e.g. %mcp read ev demo://item/{id} id=3
  prompt SERVER NAME [k=v ...]          render a prompt template, e.g. %mcp prompt demo explore_table table=orders
  logs NAME [-n N] [--level LEVEL]      the server's last log messages (DataFrame)
  logs NAME --stderr [-n N]             what the server's process wrote to stderr since it started
  roots NAME [PATH...]                  the folders the server may see; with PATHs, replace them
  subscribe NAME URI                    watch a resource: updates show in the running cell and are recorded
  subscribe NAME                        the updates received so far
  unsubscribe NAME URI                  stop watching it
  auth NAME                             sign in to an OAuth-protected HTTP server again
  logout NAME                           forget its tokens (keyring or token file) and disconnect it
  help                                  this help

Config file: SYNAPSE_MCP_CONFIG, else ./.synapse/mcp_servers.json, else ~/.config/synapse/mcp_servers.json
({"mcpServers": {...}} as in Claude Desktop, or VS Code's {"servers": {...}}). Header values, and env values
that are secret (named *TOKEN*, *KEY*, *SECRET*, *PASS*..., key-like, URL passwords), are never shown or recorded.
When a server asks for input (a form, a link) or to use the model (sampling), a card shows in the running
cell and the question is asked in the input box; where no one can answer (no stdin) it is declined.
A server that asks for OAuth shows "Sign in to NAME" in the cell; the connect goes on once you signed in.
If the browser cannot reach the kernel (JupyterHub, SSH), paste the address it ended on into the input box
(offered on kernels that look remote; %config SynapseMagics.oauth_redirect = "paste" | "loopback" | "auto").
Tokens stay in the OS keyring, else in a 0600 file under ~/.local/share/synapse, never in the notebook.
""".replace("{connect_options}", CONNECT_OPTIONS.help(indent=8, column=24))
