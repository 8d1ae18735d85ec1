#!/usr/bin/env bash
# Run the offline suite (everything not marked live) under each Python version
# given, in its own virtualenv (.venv-X.Y).  Versions come from pyenv when it
# is installed, else from pythonX.Y on PATH.  Fails if any version fails or if
# none was found.
set -u
cd "$(dirname "$0")/.."
ran=0 failed=()
for v in "$@"; do
  py=""
  if command -v pyenv >/dev/null 2>&1; then
    full=$(pyenv versions --bare 2>/dev/null | grep -E "^${v//./\\.}(\.[0-9]+)?$" | sort -V | tail -n 1)
    [ -n "$full" ] && py="$(pyenv root)/versions/$full/bin/python"
  fi
  [ -z "$py" ] && py=$(command -v "python$v" || true)
  if [ -z "$py" ] || [ ! -x "$py" ]; then echo "== Python $v: not found, skipped"; continue; fi
  venv=".venv-$v"
  echo "== Python $v ($py)"
  if [ ! -f "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
    "$py" -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]' && touch "$venv/.installed" || { failed+=("$v (install)"); continue; }
  fi
  ran=$((ran + 1))
  "$venv/bin/python" -m pytest -q -n "${JOBS:-2}" -m "not live" -p no:cacheprovider || failed+=("$v")
done
if [ "$ran" -eq 0 ]; then echo "no Python version found"; exit 1; fi
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED under: ${failed[*]}"; exit 1; fi
echo "offline suite passed under $ran Python version(s)"
