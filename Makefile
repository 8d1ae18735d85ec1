# codexmini — every target installs what it needs first (make setup is idempotent and quiet).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The supported range lives in codexmini/_version.py: the pin and the oldest.
CODEX_VERSION := $(shell sed -n 's/^CODEX_VERSION = "\(.*\)"/\1/p' codexmini/_version.py)
OLDEST_CODEX_VERSION := $(shell sed -n 's/^OLDEST_CODEX_VERSION = "\(.*\)"/\1/p' codexmini/_version.py)
CODEX_STAMP := .codex/.installed-$(CODEX_VERSION)
# The version a target works on (record, schema, test-live); default the pin.
# Any other version is installed into .cache/codex/<version>/ once, by
# tools/codex_bin.py, which prints the native binary's path.
CODEX ?= $(CODEX_VERSION)
WITH_CODEX_BIN = bin="$$($(PY) tools/codex_bin.py $(CODEX))" &&
# The venv remembers which Python made it: `make test PYTHON=python3.9` after a
# 3.11 run rebuilds it instead of testing the wrong interpreter.
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
VENV_STAMP := $(VENV)/.installed-$(PYVER)
MATRIX ?= 3.9 3.10 3.11 3.12 3.13
# pytest-xdist workers for the suite (make test JOBS=0 runs it in one process).
JOBS ?= 2
TO ?= 0.171.0

.PHONY: setup test lint test-offline test-live test-matrix smoke record schema protocol drift bench clean

setup: $(VENV_STAMP) $(CODEX_STAMP)

$(VENV_STAMP): pyproject.toml
	@test -n "$(PYVER)" || { echo "make: $(PYTHON) does not run; set PYTHON=/path/to/python3.X"; exit 2; }
	@$(PYTHON) -m venv --clear $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

$(CODEX_STAMP):
	@echo "installing codex $(CODEX_VERSION) from the npm registry into .codex/"
	@npm install --silent --no-audit --no-fund --prefix .codex @openai/codex@$(CODEX_VERSION)
	@touch $@

# The gates, each of which fails the target: mypy --strict on codexmini/ and examples/, ruff
# lint and format on the whole repo, the suite (live tests included) under
# coverage with 100% of lines and branches of codexmini/, in $(JOBS) pytest-xdist
# workers.  coverage run (not pytest-cov's --cov) measures the controller; each
# worker starts its own measurement in the root conftest.py, before the
# conformance plugin imports codexmini (so import-time lines count); each
# process writes its own data file and combine adds them up.
test: setup lint
	$(PY) -m coverage erase
	$(PY) -m coverage run -m pytest -q -n $(JOBS)
	$(PY) -m coverage combine -q
	$(PY) -m coverage report --fail-under=100

lint: setup
	$(PY) -m mypy
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test-offline: setup
	$(PY) -m pytest -q -n $(JOBS) -m "not live"

# The live suite against one installed version: make test-live CODEX=0.149.1.
# (make test runs it against the pin, with everything else.)
test-live: setup
	@$(WITH_CODEX_BIN) echo "live suite against codex $(CODEX): $$bin" && CODEXMINI_CODEX_BIN="$$bin" $(PY) -m pytest -q -n $(JOBS) -m live

# The offline suite under every Python 3.9–3.13 that pyenv (or PATH) has.
test-matrix:
	@JOBS=$(JOBS) bash tools/test_matrix.sh $(MATRIX)

smoke: setup
	$(PY) -m codexmini smoke

# fixtures/<version>/ from a binary of that version: make record CODEX=0.149.1
# (all scenarios), or only some: make record CODEX=0.149.1 NAMES="resume fork".
record: setup
	@$(WITH_CODEX_BIN) $(PY) tools/record_fixtures.py --version $(CODEX) --codex "$$bin" $(NAMES)

schema: setup
	@$(WITH_CODEX_BIN) $(PY) tools/schema_fixtures.py --write --version $(CODEX) --codex "$$bin"

# codexmini/protocol.py (+ _protocol_types.py) from the pinned stable schema.
protocol: setup
	$(PY) tools/gen_protocol.py

# The type checkers' view of codexmini/__init__.py from its _EXPORTS table.
.PHONY: public
public: setup
	$(PY) tools/gen_public.py

# docs/api.md, the API reference, from the docstrings of the public names
# (tests/test_apiref.py fails when it is stale).
.PHONY: apiref
apiref: setup
	$(PY) tools/gen_apiref.py

# Schema drift from the pin to TO, and every recorded scenario run live against TO.
drift: setup
	$(PY) tools/schema_drift.py $(CODEX_VERSION) $(TO) --behaviour

# Every figure a ratio to a baseline measured in the same run (tools/bench.py).
# make bench [QUICK=1] [JSON=FILE] [BENCH_PYTHON=python3.9] [ARGS="--only stream,large"]
# BENCH_PYTHON is the interpreter measured (the bench itself runs from the venv).
bench: setup
	$(PY) tools/bench.py $(if $(QUICK),--quick) $(if $(JSON),--json $(JSON)) \
		$(if $(BENCH_PYTHON),--python $(BENCH_PYTHON)) $(ARGS)

# Several runs as one table, per interpreter: median (range), targets met:
# make bench-summary RUNS="a.json b.json c.json" (what the README's Speed table is made from).
.PHONY: bench-summary
bench-summary: setup
	$(PY) -m tools.benchlib.summary $(RUNS)

# The stream contenders' instructions, counted by valgrind: deterministic where
# the bench's times move with the machine (tools/benchlib/instructions.py).
.PHONY: bench-instructions
bench-instructions: setup
	$(PY) -m tools.benchlib.instructions $(ARGS)

# The reliability suite alone (issues 10, 27): hostile input, faults, soak, kills,
# secrets, fuzzing, session-log storage faults, one writer per log -- its figures are printed at the end (they also are in make test).
.PHONY: reliability
reliability: setup
	$(PY) -m pytest -q -n $(JOBS) tests/reliability

# Mutation testing of the pure modules (tools/mutation/), not part of make test:
# a few minutes on two cores.  Narrow or keep it: MUTATION_ARGS="--module _session --json m.json".
.PHONY: mutation
mutation: setup
	$(PY) -m tools.mutation $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) .venv-* .coverage .coverage.* .pytest_cache
