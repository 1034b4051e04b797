# The README's two commands: `make demo` and `make test`. Everything else is a step they use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test unit lint stack-up stack-down stack-status bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

## Runs the main job on embedded defaults: no Kafka, Redis or Postgres needed.
demo: install
	$(BIN)/pareis demo

## Installs, starts Kafka, Redis and Postgres (deploy/local), lints, runs every test tier.
test: install stack-up lint
	$(BIN)/pytest

unit: install
	$(BIN)/pytest tests/unit

# $(wildcard): a folder with no tracked file yet (bench/) doesn't exist in a fresh clone, and ruff fails on it.
LINT_DIRS := $(wildcard pareis consumers tests bench)

lint: install
	$(BIN)/ruff check $(LINT_DIRS)
	$(BIN)/ruff format --check $(LINT_DIRS)
	$(BIN)/mypy

stack-up:
	deploy/local/stack.sh up

stack-down:
	deploy/local/stack.sh down

stack-status:
	deploy/local/stack.sh status

clean:
	rm -rf $(VENV) .stack .pytest_cache .mypy_cache .ruff_cache
