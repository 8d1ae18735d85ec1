# codexmini — every target installs what it needs first (make setup is idempotent and quiet).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The one pinned version lives in codexmini/__init__.py.
CODEX_VERSION := $(shell sed -n 's/^CODEX_VERSION = "\(.*\)"/\1/p' codexmini/__init__.py)
CODEX_STAMP := .codex/.installed-$(CODEX_VERSION)
VENV_STAMP := $(VENV)/.installed
MATRIX ?= 3.9 3.10 3.11 3.12 3.13
TO ?= 0.171.0

.PHONY: setup test test-offline test-matrix smoke record schema drift bench clean

setup: $(VENV_STAMP) $(CODEX_STAMP)

$(VENV_STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

$(CODEX_STAMP):
	@echo "installing codex $(CODEX_VERSION) from the npm registry into .codex/"
	@npm install --silent --no-audit --no-fund --prefix .codex @openai/codex@$(CODEX_VERSION)
	@touch $@

# coverage (not pytest-cov's --cov) so that the conformance plugin, loaded
# before pytest-cov would start, does not hide codexmini's import-time lines.
test: setup
	$(PY) -m coverage erase
	$(PY) -m coverage run -m pytest -q
	$(PY) -m coverage report --fail-under=100

test-offline: setup
	$(PY) -m pytest -q -m "not live"

# The offline suite under every Python 3.9–3.13 that pyenv (or PATH) has.
test-matrix:
	@bash tools/test_matrix.sh $(MATRIX)

smoke: setup
	$(PY) -m codexmini smoke

record: setup
	$(PY) tools/record_fixtures.py

schema: setup
	$(PY) tools/schema_fixtures.py --write

drift: setup
	$(PY) tools/schema_drift.py $(CODEX_VERSION) $(TO)

# Every figure a ratio to a baseline measured in the same run (tools/bench.py).
# make bench [QUICK=1] [JSON=FILE] [PYTHON=python3.9] [ARGS="--only stream,large"]
# A PYTHON other than the default is the interpreter measured (the bench runs from the venv).
bench: setup
	$(PY) tools/bench.py $(if $(QUICK),--quick) $(if $(JSON),--json $(JSON)) \
		$(if $(filter-out python3,$(PYTHON)),--python $(PYTHON)) $(ARGS)

clean:
	rm -rf $(VENV) .venv-* .coverage .coverage.* .pytest_cache
