#!/usr/bin/env bash
# Remove fake-dra from the current kubectl context. Example workloads go first so the kubelet can
# unprepare their claims while the plugin still runs; then everything the overlay installed
# (FAKE_DRA_OVERLAY, default kind, which holds every object any bundled overlay creates); the
# plugin's slices are deleted by the kubelet once the plugin is gone (and explicitly here, in case
# the node is unreachable).
set -euo pipefail
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
need "$KUBECTL"
dir="$(overlay_dir)"
"$KUBECTL" delete namespace fake-dra-e2e --ignore-not-found --wait=true
"$KUBECTL" delete -k "$dir" --ignore-not-found
"$KUBECTL" delete resourceslices --field-selector spec.driver=fake-dra.example.com --ignore-not-found
