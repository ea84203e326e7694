# shellcheck shell=bash
# Sourced by hack/*.sh: make sure .venv exists and has this package (with test extras) installed.
# Re-installs when pyproject.toml is newer than the last install, so a fresh clone needs nothing else.
# Says what it does, one line per phase on stderr; pip's own output is shown only when it fails.
PYTHON="${PYTHON:-python3}"

fd_say() { printf 'fake-dra: %s\n' "$*" >&2; }

# Run a command quietly; on failure print its whole output (indented) and return its exit code.
fd_quiet() {
  local log rc=0
  log="$(mktemp "${TMPDIR:-/tmp}/fake-dra-setup.XXXXXX")"
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    fd_say "failed (exit $rc): $*"
    sed 's/^/    | /' "$log" >&2
  fi
  rm -f "$log"
  return "$rc"
}

fd_ensure_venv() {
  local stamp=.venv/.fake-dra-installed started=$SECONDS
  if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ]; then
    return 0
  fi
  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    fd_say "$PYTHON not found; install Python 3.11 or newer (or set PYTHON=/path/to/python3)"
    return 1
  fi
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    local version
    version="$("$PYTHON" -V 2>&1 | head -n1 || true)"  # a non-Python (PYTHON=/bin/false) prints nothing
    fd_say "$PYTHON is ${version:-not a working Python}; fake-dra needs Python 3.11 or newer (set PYTHON=...)"
    return 1
  fi
  if [ ! -x .venv/bin/python ]; then
    fd_say "creating .venv with $("$PYTHON" -V 2>&1)"
    fd_quiet "$PYTHON" -m venv .venv || return
  fi
  fd_say "updating pip in .venv"
  fd_quiet .venv/bin/python -m pip install --upgrade pip || return
  fd_say "installing fake-dra and its test dependencies into .venv (the first time takes a minute or two)"
  fd_quiet .venv/bin/python -m pip install -e '.[test]' || return
  touch "$stamp"
  fd_say ".venv ready ($((SECONDS - started)) s)"
}

fd_ensure_venv
