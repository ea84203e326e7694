#!/usr/bin/env bash
# Run the main job on the embedded default (local mode, no cluster). Installs into .venv if needed.
# Usage: hack/demo.sh [extra args for `fake-dra demo`]
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
exec .venv/bin/fake-dra demo "$@"
