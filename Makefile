# synapse_nb — `make demo` runs the quickstart offline; `make test` runs the whole suite.
# Both start from a machine with only Python 3.11+ and the package registries.

PYTHON ?= python3
VENV   := .venv
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
NPM_TOOLS  := $(TOOLS)/.npm-$(EVERYTHING_VERSION)-$(REFERENCE_NPM_VERSION)
PYSERVERS  := $(TOOLS)/pyservers/.installed-$(REFERENCE_PY_VERSION)
CHROMIUM ?= /usr/bin/chromium

.PHONY: test lint typecheck pytest demo bench venv tools browser clean help

help:
	@echo "make demo    run notebooks/quickstart.ipynb offline and show the answer"
	@echo "make test    lint, typecheck and run the whole test suite"
	@echo "make bench   run the benchmarks and write bench/results.md"

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "synapse_nb needs Python 3.11+; set PYTHON=python3.x")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

# The third-party reference MCP servers, from the npm registry and PyPI, into a project-local folder.
tools: $(NPM_TOOLS) $(PYSERVERS)

# One npm install for all three (the stamp's name carries the versions: a bump installs again).
$(NPM_TOOLS):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 18+ with npm (e.g. apt-get install nodejs npm), then rerun make test" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(TOOLS) \
	  @modelcontextprotocol/server-everything@$(EVERYTHING_VERSION) $(REFERENCE_NPM)
	@touch $@

$(PYSERVERS):
	@test -x $(TOOLS)/pyservers/bin/python || $(PYTHON) -m venv $(TOOLS)/pyservers
	$(TOOLS)/pyservers/bin/python -m pip install --quiet $(REFERENCE_PY)
	@touch $@

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

test: lint typecheck pytest

clean:
	rm -rf $(VENV) $(TOOLS) dist build
