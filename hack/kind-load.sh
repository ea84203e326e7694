#!/usr/bin/env bash
# Build the fake-dra image from ./Dockerfile and load it into every node of the kind cluster
# (no registry involved; the DaemonSet uses imagePullPolicy IfNotPresent).
set -euo pipefail
source "$(dirname "$0")/kind-common.sh"
need "$KIND" "$CONTAINER_TOOL"
"$CONTAINER_TOOL" build -t "$IMAGE" "$REPO_ROOT"
if [ "$CONTAINER_TOOL" = docker ]; then
  "$KIND" load docker-image "$IMAGE" --name "$KIND_CLUSTER_NAME"
else
  archive="$(mktemp --suffix=.tar)"
  trap 'rm -f "$archive"' EXIT
  "$CONTAINER_TOOL" save -o "$archive" "$IMAGE"
  "$KIND" load image-archive "$archive" --name "$KIND_CLUSTER_NAME"
fi
