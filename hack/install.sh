#!/usr/bin/env bash
# Install fake-dra into the current kubectl context: namespace, RBAC, admission policy, DeviceClasses,
# DaemonSet; then wait until every worker runs the plugin and has published its slices.
# FAKE_DRA_FEATURES (default: DRASharedConsumableCapacity=false, because 1.37 has no such gate, so
# no scheduler would honour valueFrom) is passed to the plugin as its --features override.
set -euo pipefail
source "$(dirname "$0")/kind-common.sh"
need "$KUBECTL"
FAKE_DRA_FEATURES="${FAKE_DRA_FEATURES:-DRASharedConsumableCapacity=false}"
"$KUBECTL" apply -f "$REPO_ROOT/deploy/00-namespace.yaml"
"$KUBECTL" apply -f "$REPO_ROOT/deploy/"
"$KUBECTL" -n fake-dra set env daemonset/fake-dra-kubelet-plugin -c plugin \
  "FAKE_DRA_FEATURES=$FAKE_DRA_FEATURES"
"$KUBECTL" -n fake-dra rollout status daemonset/fake-dra-kubelet-plugin --timeout=180s
echo "ResourceSlices published by fake-dra:"
for _ in $(seq 1 30); do
  if "$KUBECTL" get resourceslices -o name | grep -q .; then break; fi
  sleep 2
done
"$KUBECTL" get resourceslices -o wide
