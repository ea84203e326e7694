# shellcheck shell=bash
# Sourced by hack/*.sh: make sure .venv exists and has this package (with test extras) installed.
# Re-installs when pyproject.toml is newer than the last install, so a fresh clone needs nothing else.
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
