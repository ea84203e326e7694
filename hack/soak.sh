#!/usr/bin/env bash
# Soak (opt-in, minutes): kill loop + hostile-input generators + leak check against a real plugin
# process; prints inputs tried, kills survived, claims lost, double-bookings, RSS and fd growth.
# Exit 1 if any invariant broke. Usage: hack/soak.sh [--cycles N] [--leak-cycles N] [--threads N]
#   [--seed S] [--generators a,b]   (see tests/adversarial/soak.py; docs/robustness.md)
# hack/soak.sh --mode churn [--steps N] [--schedulers N] [--nodes N] [--seed S] [--keep]: the local control
# plane under churn, concurrent schedulers and hostile store rows (tests/adversarial/churn.py); prints
# double-booked, stale and lost counts, exit 1 when any is not 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/venv.sh
PYTHONPATH="$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" exec nice .venv/bin/python -m adversarial.soak "$@"
