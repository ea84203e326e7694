#!/usr/bin/env bash
# Run the e2e harness.
#   hack/e2e.sh                    local backend: no cluster, plugin subprocess on fake sysfs trees
#   hack/e2e.sh --backend kind     against the cluster in $KUBECONFIG (after kind-create, kind-load
#                                  and install); predicts every outcome with the reference allocator
# Extra arguments go to `fake-dra e2e` (e.g. --scenario mig-then-vgpu --junit out/e2e.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/fake-dra ]; then
  echo "error: .venv missing; run hack/test.sh once to create it" >&2
  exit 1
fi
exec .venv/bin/fake-dra e2e "$@"
