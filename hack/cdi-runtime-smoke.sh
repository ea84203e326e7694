#!/usr/bin/env bash
# A real container runtime consumes the plugin's CDI specs: tests/deploy/test_cdi_runtime.py with
# podman. Opt-in (not part of hack/test.sh); needs root and Debian's podman + runc (installed when
# missing, configured as for hack/image-smoke.sh).
#
#   hack/cdi-runtime-smoke.sh                     workload image: the Dockerfile's base image
#   FAKE_DRA_CDI_RUNTIME_IMAGE=IMG ...            another image (needs sh and cat)
#
# The plugin runs on the host in local mode and writes its CDI specs to /var/run/cdi (podman 4.3
# reads no other directory); the test removes the specs it made. Each prepared claim's CDI device
# IDs go to `podman run --device`, and the container must see the spec's env and every device
# metadata file, read-only and identical to the plugin's.
set -euo pipefail
start=$SECONDS
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
# shellcheck source=hack/lib/image.sh
source "$REPO_ROOT/hack/lib/image.sh"
cd "$REPO_ROOT"
. hack/lib/venv.sh
[ "$(id -u)" -eq 0 ] || { echo "error: needs root (podman reads CDI specs from /var/run/cdi only)" >&2; exit 1; }
work="$(mktemp -d /tmp/fdcdirt.XXXXXX)"
trap 'rm -rf "$work"' EXIT
podman_setup "$work"
if [ -z "${FAKE_DRA_CDI_RUNTIME_IMAGE:-}" ]; then
  ensure_base_image "$work"
  FAKE_DRA_CDI_RUNTIME_IMAGE="$(dockerfile_base_image)"
fi
export FAKE_DRA_CDI_RUNTIME_IMAGE
image_log "workload image $FAKE_DRA_CDI_RUNTIME_IMAGE, $(podman --version)"
.venv/bin/python -m pytest -p no:cacheprovider -q -rsw tests/deploy/test_cdi_runtime.py
echo "cdi-runtime-smoke: PASSED in $((SECONDS - start)) s"
