#!/usr/bin/env bash
# Install fake-dra into the current kubectl context: `kubectl apply -k deploy/overlays/<overlay>`
# (FAKE_DRA_OVERLAY, default kind: the overlay matching hack/kind-config.yaml; docs/deploy.md lists
# the others), then wait until every node runs the plugin and has published its slices.
set -euo pipefail
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
need "$KUBECTL"
if [ -n "${FAKE_DRA_FEATURES:-}" ]; then
  echo "error: install.sh no longer reads FAKE_DRA_FEATURES; pick an overlay with the gates you need" \
    "(FAKE_DRA_OVERLAY=groups-on|groups-off|partitionable-off|...) or write one (docs/deploy.md)" >&2
  exit 2
fi
dir="$(overlay_dir)"
# The image the nodes were given (hack/kind-load.sh loads $IMAGE) must be the one the overlay runs.
if ! "$KUBECTL" kustomize "$dir" | grep -q "image: $IMAGE\$"; then
  echo "error: overlay $dir does not run image $IMAGE (set IMAGE, or add kustomize images: to the overlay)" >&2
  exit 2
fi
"$KUBECTL" apply -k "$dir"
"$KUBECTL" -n fake-dra rollout status daemonset/fake-dra-kubelet-plugin --timeout=180s
echo "ResourceSlices published by fake-dra:"
for _ in $(seq 1 30); do
  if "$KUBECTL" get resourceslices -o name | grep -q .; then break; fi
  sleep 2
done
"$KUBECTL" get resourceslices -o wide
