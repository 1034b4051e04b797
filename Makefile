# The README's two commands: `make demo` and `make test`. Everything else is a step they use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# pytest caches its rewritten test modules as bytecode; where PYTHONDONTWRITEBYTECODE is set (some images set it),
# every run would recompile ~200 test modules and every library (5 s of CPU per run). The installed libraries are
# compiled once by `uv pip install --compile-bytecode` below; the tests' own caches live in gitignored __pycache__.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

.PHONY: install demo test unit browser lint stack-up stack-down stack-status bench clean demo-record demo-stack-install \
	dbt-install

install: $(STAMP)

# The modules mypyc compiles (pyproject.toml [tool.pareis] compiled): their extensions shadow the sources, so a
# change to one reinstalls (uv rebuilds an editable install each time it installs it).
COMPILED := $(shell $(PYTHON) -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['tool']['pareis']['compiled'])")

# uv at the version the image pins (deploy/Dockerfile: one place), not whatever PyPI released today.
UV_PIN := $(shell sed -n 's/^RUN pip install "\(uv==[0-9.]*\)"$$/\1/p' deploy/Dockerfile)

$(STAMP): pyproject.toml setup.py $(COMPILED) deploy/Dockerfile
	deploy/local/compiler.sh $(PYTHON)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -n "$(UV_PIN)" || { echo "no uv pin found in deploy/Dockerfile" >&2; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip "$(UV_PIN)"
	$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode -e '.[dev]'
	touch $(STAMP)

## Runs the main job on embedded defaults: no Kafka, Redis or Postgres needed.
demo: install
	$(BIN)/pareis demo

## Installs, starts Kafka, Redis and Postgres (deploy/local), installs chromium for the browser tests and dbt for the
## dbt-snippet test, lints, runs every test tier.
test: install dbt-install stack-up browser lint
	$(PYTEST)

## Debian's chromium for tests/browser (Playwright drives it; its own browser download can't work here).
browser:
	deploy/local/browser.sh

## The pure tier: no service (Kafka, Redis, Postgres) and nothing slow.
unit: install
	$(PYTEST) tests/unit -m "unit and not slow" -q -n auto --dist loadfile

# $(wildcard): a folder with no tracked file yet (bench/) doesn't exist in a fresh clone, and ruff fails on it.
LINT_DIRS := $(wildcard pareis tests bench)

# The GitHub Actions workflows: actionlint (built through the Go module proxy, deploy/local/actionlint.sh) and zizmor.
WORKFLOWS := .github/workflows/ci.yml deploy/ci/github/retrain-gate.yml

lint: install
	$(BIN)/ruff check $(LINT_DIRS)
	$(BIN)/ruff format --check $(LINT_DIRS)
	$(BIN)/mypy
	$(BIN)/lint-imports
	"$$(deploy/local/actionlint.sh)" $(WORKFLOWS)
	$(BIN)/zizmor --offline --quiet $(WORKFLOWS)
	$(BIN)/agentskills validate skills/pareis-ml-incidents

## The real demo stack (deploy/demo): a 1M-row Postgres warehouse, dbt, MLflow and DataHub's own connectors,
## run as one scenario that rewrites deploy/demo/recorded/ (≈ 6 min; needs Postgres, which it starts).
demo-record: demo-stack-install
	deploy/local/stack.sh up postgres
	OMP_NUM_THREADS=1 $(BIN)/python deploy/demo/scenario.py --dbt $(DEMO_VENV)/bin/dbt
	$(BIN)/pytest -q tests/e2e/test_scenario_recording.py

# The connectors, MLflow and scikit-learn go into .venv (the [demo-stack] extra); dbt into its own venv, since
# dbt-core's pins clash with acryl-datahub[postgres,mlflow]'s (sqlparse, protobuf: see pyproject.toml).
DEMO_VENV  := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed
DBT_PINS   := 'dbt-core==1.11.16' 'dbt-postgres==1.11.0'

demo-stack-install: $(DEMO_STAMP)

# dbt alone in .venv-demo, for the test that parses `pareis protect`'s dbt snippets in the demo project.
dbt-install: $(DEMO_VENV)/bin/dbt

$(DEMO_VENV)/bin/dbt: $(STAMP)
	test -x $(DEMO_VENV)/bin/python || $(BIN)/uv venv -q --python $(BIN)/python $(DEMO_VENV)
	$(BIN)/uv pip install -q --python $(DEMO_VENV)/bin/python $(DBT_PINS)

$(DEMO_STAMP): $(STAMP)
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev,demo-stack]'
	test -x $(DEMO_VENV)/bin/python || $(BIN)/uv venv -q --python $(BIN)/python $(DEMO_VENV)
	$(BIN)/uv pip install -q --python $(DEMO_VENV)/bin/python $(DBT_PINS)
	touch $(DEMO_STAMP)

stack-up:
	deploy/local/stack.sh up

stack-down:
	deploy/local/stack.sh down

stack-status:
	deploy/local/stack.sh status

clean:
	rm -rf $(VENV) .stack .pytest_cache .mypy_cache .ruff_cache $(DEMO_VENV) deploy/demo/.work pareis-demo-output
