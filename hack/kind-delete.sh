#!/usr/bin/env bash
# Delete the kind cluster created by hack/kind-create.sh.
set -euo pipefail
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
need "$KIND"
"$KIND" delete cluster --name "$KIND_CLUSTER_NAME"
