#!/usr/bin/env bash
# Run the test suite: creates .venv if missing, installs the package with test extras, runs pytest.
# Usage: hack/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.fake-dra-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[test]'
  touch "$stamp"
fi
exec .venv/bin/python -m pytest "$@"
