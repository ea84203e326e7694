# shellcheck shell=bash
# Sourced by hack/*.sh: make sure .venv exists and has this package (with test extras) installed.
# Every dependency comes from requirements-test.lock (exact versions, sha256-checked, wheels only;
# hack/lock.sh writes it), so a fresh clone gets the versions the suite was run with, not whatever
# PyPI has that day. Re-installs when pyproject.toml or the lock is newer than the last install.
# Says what it does, one line per phase on stderr (with progress while pip works); pip's own output
# is shown only when it fails.
PYTHON="${PYTHON:-python3}"
FD_LOCK=requirements-test.lock

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

# fd_quiet for a pip install of TOTAL packages: while pip works, says how many it has fetched so
# far (every FD_PROGRESS_EVERY seconds, default 5, when the count moved) and when it starts
# installing them, so a first install on a slow link is not a silent minute.
fd_pip_progress() {
  local total=$1 log rc=0 pid shown=0 fetched last=$SECONDS installing=0
  shift
  log="$(mktemp "${TMPDIR:-/tmp}/fake-dra-setup.XXXXXX")"
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.5
    fetched=$(grep -cE '^(Collecting|Processing|Ignoring) ' "$log" || true)
    if [ "$installing" -eq 0 ] && grep -q '^Installing collected packages' "$log"; then
      installing=1
      fd_say "  fetched $fetched of $total; installing them"
    elif [ "$installing" -eq 0 ] && [ "$fetched" -gt "$shown" ] && [ $((SECONDS - last)) -ge "${FD_PROGRESS_EVERY:-5}" ]; then
      fd_say "  fetched $fetched of $total packages"
      shown=$fetched last=$SECONDS
    fi
  done
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    fd_say "failed (exit $rc): $*"
    sed 's/^/    | /' "$log" >&2
  fi
  rm -f "$log"
  return "$rc"
}

fd_ensure_venv() {
  local stamp=.venv/.fake-dra-installed started=$SECONDS total
  if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] && [ ! "$FD_LOCK" -nt "$stamp" ]; then
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
  if [ ! -f "$FD_LOCK" ]; then
    fd_say "$FD_LOCK is missing; it comes with the source (hack/lock.sh writes it)"
    return 1
  fi
  if [ ! -x .venv/bin/python ]; then
    fd_say "creating .venv with $("$PYTHON" -V 2>&1)"
    fd_quiet "$PYTHON" -m venv .venv || return
  fi
  total=$(grep -c '^[A-Za-z0-9]' "$FD_LOCK")
  fd_say "installing $total pinned packages from $FD_LOCK into .venv (the first time takes a minute or two)"
  fd_pip_progress "$total" .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off \
    --require-hashes --no-deps --only-binary :all: -r "$FD_LOCK" || return
  # fake-dra itself, editable, built with the locked setuptools (no index, nothing unpinned).
  fd_say "installing fake-dra (editable) into .venv"
  fd_quiet .venv/bin/python -m pip install --disable-pip-version-check --no-deps --no-build-isolation --no-index -e . || return
  # A lock that misses a dependency of a locked package (or pins one it cannot use) fails here, not in a test.
  fd_quiet .venv/bin/python -m pip check || return
  touch "$stamp"
  fd_say ".venv ready ($((SECONDS - started)) s)"
}

fd_ensure_venv
