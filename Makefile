PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench clean

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

demo: venv
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo --token
	$(BIN)/python manage.py mcp_sync --enable
	exec $(BIN)/uvicorn project.asgi:application --host 127.0.0.1 --port 8000 --no-access-log

test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy mcp_tools

bench: venv
	$(BIN)/python bench/load.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3 .mypy_cache .ruff_cache .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
