#!/bin/sh
# Run (some of) the reliability suite against the old code: branch `main`'s
# codexmini/, with this tree's fake app-server (codexmini/testing) and this
# suite.  Shows that each issue-10 class fails there.  Usage, from the repo:
#   sh tests/reliability/against_main.sh [pytest args, e.g. -k approval_params_null]
# The copy lives in ${OLD:-/tmp/codexmini-main}.  The conformance plugin is
# replaced by a conftest that only registers its marker (frame validation is
# not what is shown), and AgentConfig(close_timeout=...), which main lacks, is
# dropped from the copied tests (the faults then wait codex's default 5 s).
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OLD=${OLD:-/tmp/codexmini-main}
rm -rf "$OLD" && mkdir -p "$OLD/tests"
git -C "$ROOT" archive main | tar -x -C "$OLD"
rm -rf "$OLD/codexmini/testing" && cp -r "$ROOT/codexmini/testing" "$OLD/codexmini/testing"
cp -r "$ROOT/tests/reliability" "$OLD/tests/reliability"
cp "$ROOT/pyproject.toml" "$OLD/pyproject.toml"
printf 'def pytest_configure(config):\n    config.addinivalue_line("markers", "frame_problems(*s): not checked here")\n' > "$OLD/conftest.py"
sed -i 's/^            close_timeout=0.5,$//; s/, close_timeout=0.5)/)/' "$OLD/tests/reliability/test_faults.py" "$OLD/tests/reliability/test_secrets.py"
find "$OLD" -name __pycache__ -prune -exec rm -rf {} +
cd "$OLD" && exec "$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider --tb=line \
  tests/reliability/test_bad_input.py tests/reliability/test_faults.py tests/reliability/test_secrets.py "$@"
