#!/usr/bin/env bash
# Create the kind cluster described in hack/kind-config.yaml (1 control plane, 2 workers, DRA gates).
# Usage: hack/kind-create.sh            (env: KIND_CLUSTER_NAME, KIND_NODE_IMAGE)
set -euo pipefail
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
need "$KIND" "$KUBECTL"
# Every component refuses to start on a gate its release lacks (1.38 removed
# DynamicResourceAllocation): check the config's gates against the node image's release first.
"${PYTHON:-python3}" "$REPO_ROOT/hack/kind_gates.py" --image "$KIND_NODE_IMAGE" "$REPO_ROOT/hack/kind-config.yaml"
if "$KIND" get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; then
  echo "kind cluster '$KIND_CLUSTER_NAME' already exists"
else
  "$KIND" create cluster --name "$KIND_CLUSTER_NAME" --image "$KIND_NODE_IMAGE" \
    --config "$REPO_ROOT/hack/kind-config.yaml" --wait 120s
fi
"$KUBECTL" --context "kind-$KIND_CLUSTER_NAME" get nodes -o wide
