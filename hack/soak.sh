#!/usr/bin/env bash
# Soak (opt-in, minutes): kill loop + hostile-input generators + leak check against a real plugin
# process; prints inputs tried, kills survived, claims lost, double-bookings, RSS and fd growth.
# Exit 1 if any invariant broke. Usage: hack/soak.sh [--cycles N] [--leak-cycles N] [--threads N]
#   [--seed S] [--generators a,b]   (see tests/adversarial/soak.py; docs/robustness.md)
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/venv.sh
PYTHONPATH="$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" exec nice .venv/bin/python -m adversarial.soak "$@"
