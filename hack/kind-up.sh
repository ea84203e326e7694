#!/usr/bin/env bash
# Everything from nothing to a passing kind e2e: create the cluster, build and load the image,
# install the driver, run every scenario against the cluster, write out/e2e-kind.xml.
set -euo pipefail
here="$(dirname "$0")"
"$here/kind-create.sh"
"$here/kind-load.sh"
"$here/install.sh"
mkdir -p "$here/../out"
KUBECONFIG="${KUBECONFIG:-$HOME/.kube/config}" "$here/e2e.sh" --backend kind --junit "$here/../out/e2e-kind.xml" "$@"
