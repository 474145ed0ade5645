"""The parts the tests share, imported as `tests.support.<module>` (tests/ is a package; pytest puts the checkout on
sys.path). Helpers that only one folder of tests uses stay beside those tests (tests/history/history_events.py...).

Servers, in process or run as a process by path (`python tests/support/tools_server.py`):
  llm_server (with llm_replies, llm_cache)  a local HTTP server speaking the OpenAI and Anthropic wire formats
  tools_server (with waiting_tools)         the demo MCP server plus the misbehaving tools the tests drive
  oauth_server                              an MCP server behind a real OAuth authorization server
  apps_server                               an MCP Apps server with the fixture Views
  local_servers, npm_servers                free ports, waits for a start, stopping; the npm reference servers
  lake_services                             PostgreSQL and moto's S3 server for the lake tests
Drivers of the notebook side:
  nb_shell      an InteractiveShell with the extension loaded and a recording display
  kernel_session, browser_lab               a real kernel through jupyter_client; JupyterLab in Chromium
  apps_host, list_comm, untrusted           the MCP Apps host outside a frontend; a comm that records; snapshots
Plugins of the suite (registered by tests/conftest.py):
  spawn_guard   `make quick`'s --forbid-spawn: a test that starts a process fails
  file_order    `make test` hands out the longest kinds of test file first
"""
