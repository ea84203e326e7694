#!/usr/bin/env bash
# Run the test suite: creates .venv if missing, installs the package with test extras, runs pytest.
# Usage: hack/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/venv.sh
fd_say "running the tests: pytest${*:+ $*}"
exec .venv/bin/python -m pytest "$@"
