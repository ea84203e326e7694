# Shared settings for the hack/kind-*.sh scripts (sourced, not run).
# Every value can be overridden from the environment.
KIND="${KIND:-kind}"
KUBECTL="${KUBECTL:-kubectl}"
CONTAINER_TOOL="${CONTAINER_TOOL:-docker}"
KIND_CLUSTER_NAME="${KIND_CLUSTER_NAME:-fake-dra}"
# A kindest/node image with Kubernetes 1.37; build one with `kind build node-image` if no release
# image exists for your kind version.
KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-kindest/node:v1.37.0}"
IMAGE="${IMAGE:-fake-dra:dev}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "error: '$tool' is required but not on PATH" >&2; exit 1; }
  done
}
