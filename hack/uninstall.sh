#!/usr/bin/env bash
# Remove fake-dra from the current kubectl context. Example workloads go first so the kubelet can
# unprepare their claims while the plugin still runs; the plugin's slices are deleted by the
# kubelet once the plugin is gone (and explicitly here, in case the node is unreachable).
set -euo pipefail
source "$(dirname "$0")/kind-common.sh"
need "$KUBECTL"
"$KUBECTL" delete namespace fake-dra-e2e --ignore-not-found --wait=true
"$KUBECTL" delete -f "$REPO_ROOT/deploy/" --ignore-not-found
"$KUBECTL" delete resourceslices --field-selector spec.driver=fake-dra.example.com --ignore-not-found
