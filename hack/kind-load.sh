#!/usr/bin/env bash
# Build the fake-dra image from ./Dockerfile as $IMAGE (localhost/fake-dra:dev, the name the
# DaemonSet runs) and load it into every node of the kind cluster; no registry involved, the
# DaemonSet uses imagePullPolicy IfNotPresent. docker: `kind load docker-image`. podman (used when
# no docker daemon answers, or CONTAINER_TOOL=podman): built with the same setup as
# hack/image-smoke.sh (runc, rlimits, base image created locally when no registry is reachable),
# saved as a docker archive and loaded with `kind load image-archive`, which keeps the name.
set -euo pipefail
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
# shellcheck source=hack/lib/image.sh
source "$REPO_ROOT/hack/lib/image.sh"
need "$KIND" "$CONTAINER_TOOL"
case "$IMAGE" in
  */*:*) ;;
  *) echo "error: IMAGE=$IMAGE must be fully qualified (e.g. localhost/fake-dra:dev): podman would" \
       "prefix a short name with localhost/ and the nodes would not find what the DaemonSet asks for" >&2
     exit 2 ;;
esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ "$CONTAINER_TOOL" = podman ]; then
  podman_setup "$work"
  ensure_base_image "$work"
fi
build_image "$CONTAINER_TOOL" "$IMAGE"
if [ "$CONTAINER_TOOL" = docker ]; then
  "$KIND" load docker-image "$IMAGE" --name "$KIND_CLUSTER_NAME"
else
  "$CONTAINER_TOOL" save --format docker-archive -o "$work/image.tar" "$IMAGE"
  "$KIND" load image-archive "$work/image.tar" --name "$KIND_CLUSTER_NAME"
fi
