# One entry point for every gate. A fresh clone needs only python3 and make:
#   make chat   - install the runtime into .venv and chat with the bot on a local (moto) stack
#   make cli    - only install the runtime into .venv: the operator CLI, .venv/bin/nanobot-lambda
#   make test   - install dev tools into .venv and run every gate (lint, format, types, template, tests)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-installed
DEV_STAMP := $(VENV)/.dev-installed
UV_COMPILE = $(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes --no-header

.PHONY: chat cli test lint typecheck template unit integration contract e2e soak bench load lock build build-check clean chromium

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): requirements/run.lock | $(VENV)/bin/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/run.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(DEV_STAMP): requirements/dev.lock | $(VENV)/bin/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/dev.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@ $(RUN_STAMP)

chat: $(RUN_STAMP)
	$(BIN)/nanobot-lambda chat $(ARGS)

cli: $(RUN_STAMP)
	@echo "The operator CLI: $(BIN)/nanobot-lambda --help"

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The three handlers are all called app.py, so mypy checks each on its own. The test fakes are
# checked too: each is its port, with no cast; and the contract tests, which use each port only
# as it is declared. tests/typecheck/ holds code that must type-check only as it stands (e.g. a
# misspelt setting is an error there).
typecheck: $(DEV_STAMP)
	$(BIN)/mypy layers/nanobot_lambda
	for handler in functions/*/app.py; do $(BIN)/mypy $$handler || exit 1; done
	$(BIN)/mypy tests/support/fakes.py tests/contract tests/typecheck
	$(BIN)/mypy tests/soak

template: $(DEV_STAMP)
	$(BIN)/cfn-lint infra/template.yaml

# The tests run in one process per core (pytest-xdist), with work stealing: each process starts
# with its share of the tests in order and, once done, takes half of what another has left, so
# both end together even when the slow end-to-end tests fall to one. A file's tests mostly stay
# in one process (shares are runs of neighbouring tests), so a file's shared fixtures (a local
# stack) are made once or twice; the chaos soak's run is made once (tests/e2e/test_chaos_soak.py).
# The suites are named fast ones first, so the progress moves from the start. One run packs the
# processes better than a run per suite.
TEST_SUITES := unit contract integration e2e
test: lint typecheck template chromium
	$(BIN)/pytest -n auto --dist worksteal $(addprefix tests/,$(TEST_SUITES))

unit: $(DEV_STAMP)
	$(BIN)/pytest tests/unit

integration: $(DEV_STAMP)
	$(BIN)/pytest tests/integration

# One suite of expectations per storage port, run on its fake and on its adapter (moto server).
contract: $(DEV_STAMP)
	$(BIN)/pytest tests/contract

e2e: $(DEV_STAMP) chromium
	$(BIN)/pytest tests/e2e

# The console's browser tests drive Debian's chromium (tests/support/browser.py), never a
# browser of Playwright's: installed here when missing and this runs as root (as CI does);
# otherwise those tests fail, saying how to install it.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] \
		|| { echo "installing Debian's chromium for the console's browser tests"; \
		     apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The chaos soak at size (tests/soak/, issue 25): per seed, a fresh local stack, agent_turn in a
# worker process killed at journal boundaries, one figure line; `make test` runs a small slice.
SEEDS ?= 1 2 3
CHATS ?= 30
MSGS  ?= 8
soak: $(DEV_STAMP)
	$(BIN)/python -m tests.soak --seeds $(SEEDS) --chats $(CHATS) --msgs $(MSGS)

# load.py is left to `make load`: at its sizes it runs for many minutes.
bench: $(RUN_STAMP)
	for script in $(filter-out bench/load.py,$(wildcard bench/[!_]*.py)); do \
		$(BIN)/python $$script || exit 1; done

# The load simulation (bench/load.py, issue 41): 1, 100, 1,000 and 10,000 people at a day's
# peak on the local stack, against Telegram's limits; e.g. ARGS="--people 1,100 --seconds 30".
load: $(RUN_STAMP)
	$(BIN)/python bench/load.py $(ARGS)

# Regenerate the hash-locked requirement files after changing pins in pyproject.toml.
lock: $(DEV_STAMP)
	$(UV_COMPILE) pyproject.toml requirements/build.in --extra llm --extra local --extra dev -o requirements/dev.lock
	$(UV_COMPILE) pyproject.toml requirements/build.in --extra llm --extra local -c requirements/dev.lock -o requirements/run.lock
	$(MAKE) -C layers lock UV=$(abspath $(BIN)/uv)

# Lambda artifacts (python3.12, manylinux wheels): the same targets `sam build` runs.
build: $(DEV_STAMP)
	$(MAKE) -C layers build

# The built layers as Lambda loads them (python3.12, nothing else on the path): the handlers
# import, a completion with tools parses, tokens are counted offline (layers/smoke_test.py).
build-check: build
	$(MAKE) -C layers check

clean:
	rm -rf $(VENV) .aws-sam build .mypy_cache .pytest_cache .ruff_cache
