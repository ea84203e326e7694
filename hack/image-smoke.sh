#!/usr/bin/env bash
# Build the image and run it the way the DaemonSet does, then play the kubelet from the host.
# Opt-in (not part of hack/test.sh); needs root, Debian's podman + runc (installed when missing)
# and, when no registry is reachable, mmdebstrap to create the Dockerfile's base image locally.
#
#   hack/image-smoke.sh                 build localhost/fake-dra:dev, run, check, clean up
#   FAKE_DRA_SMOKE_OVERLAY=metrics ...  take the DaemonSet from another overlay (default: kind)
#   FAKE_DRA_LOCAL_BASE=1 ...           create the base with mmdebstrap even if a registry answers
#   FAKE_DRA_SMOKE_KEEP=1 ...           keep the work directory (logs, sockets, store, CDI specs)
#
# What runs: the init container (`fake-dra node-sysfs`) and the plugin container with the
# DaemonSet's securityContext (read-only root filesystem, every capability dropped,
# no-new-privileges), env, mounts (hostPath dirs bind-mounted from a work dir, the tmpfs /tmp) and
# memory limit, all read from `kubectl kustomize deploy/overlays/$FAKE_DRA_SMOKE_OVERLAY` by
# hack/image_smoke.py. Then from the host, over the bind-mounted sockets: registration (GetInfo +
# NotifyRegistrationStatus), the DRA socket, one health update, the published ResourceSlices, one
# prepare and unprepare of a claim allocated by the reference allocator (CDI spec written and
# removed); the liveness probe is the manifest's exec command via `podman exec`; the metrics
# endpoint answers inside the pod's network namespace; SIGTERM ends the plugin with exit 0 and
# its sockets removed. Prints the time taken and the image size.
set -euo pipefail
start=$SECONDS
# shellcheck source=hack/kind-common.sh
source "$(dirname "$0")/kind-common.sh"
# shellcheck source=hack/lib/image.sh
source "$REPO_ROOT/hack/lib/image.sh"
cd "$REPO_ROOT"
. hack/lib/venv.sh
OVERLAY="${FAKE_DRA_SMOKE_OVERLAY:-kind}"
NODE=smoke-node
PY=.venv/bin/python
work="$(mktemp -d /tmp/fdsmoke.XXXXXX)"
plugin=""
cleanup() {
  local rc=$?
  if [ -n "$plugin" ]; then
    if [ "$rc" -ne 0 ]; then
      echo "--- plugin container log (last 40 lines)" >&2
      podman logs --tail 40 "$plugin" >&2 2>&1 || true
    fi
    podman rm --force --time 5 "$plugin" >/dev/null 2>&1 || true
  fi
  if [ "${FAKE_DRA_SMOKE_KEEP:-0}" = 1 ]; then
    echo "kept $work" >&2
  else
    rm -rf "$work"
  fi
  [ "$rc" -eq 0 ] || echo "image-smoke: FAILED after $((SECONDS - start)) s" >&2
}
trap cleanup EXIT

podman_setup "$work"
ensure_base_image "$work"
base_ready=$SECONDS
image_log "building $IMAGE"
build_image podman "$IMAGE" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
built=$SECONDS

.venv/bin/kubectl kustomize "deploy/overlays/$OVERLAY" > "$work/rendered.yaml"
podman_args() {
  "$PY" hack/image_smoke.py podman-args --rendered "$work/rendered.yaml" --container "$1" \
    --work "$work" --image "$IMAGE" --node-name "$NODE"
}
mapfile -d '' init_args < <(podman_args fake-sysfs)
mapfile -d '' plugin_args < <(podman_args plugin)
mapfile -d '' probe < <("$PY" hack/image_smoke.py probe-command --rendered "$work/rendered.yaml")
[ "${#init_args[@]}" -gt 0 ] && [ "${#plugin_args[@]}" -gt 0 ] && [ "${#probe[@]}" -gt 1 ] \
  || { echo "error: could not derive the podman arguments from deploy/overlays/$OVERLAY" >&2; exit 1; }

image_log "init container: ${init_args[*]}"
podman run --rm --name "fdsmoke-init-$$" "${init_args[@]}"
image_log "plugin container: ${plugin_args[*]}"
plugin="$(podman run --detach --name "fdsmoke-$$" "${plugin_args[@]}")"

"$PY" hack/image_smoke.py check --work "$work" --node-name "$NODE"

timeout_s="${probe[0]}"
image_log "liveness probe: ${probe[*]:1}"
timeout "$timeout_s" podman exec "$plugin" "${probe[@]:1}"
echo "liveness: exit 0"

metrics_addr="$(podman exec "$plugin" printenv FAKE_DRA_METRICS_ADDR || true)"
if [ -n "$metrics_addr" ]; then
  podman exec "$plugin" python3 -c "
import sys, urllib.request
body = urllib.request.urlopen('http://127.0.0.1:${metrics_addr##*:}/metrics', timeout=5).read().decode()
assert 'fake_dra_plugin_registered 1.0' in body, 'plugin not reported as registered'
print('metrics:', sum(1 for l in body.splitlines() if l.startswith('fake_dra_')), 'fake_dra_* samples')"
fi

podman stop --time 20 "$plugin" >/dev/null
rc="$(podman inspect --format '{{.State.ExitCode}}' "$plugin")"
[ "$rc" = 0 ] || { echo "error: the plugin exited with $rc on SIGTERM" >&2; exit 1; }
left="$(find "$work/host" -name '*.sock' | wc -l)"
[ "$left" = 0 ] || { echo "error: $left socket(s) left behind after SIGTERM" >&2; exit 1; }
echo "shutdown: SIGTERM -> exit 0, sockets removed"

absent="$(podman run --rm --entrypoint /opt/fake-dra/bin/python "$IMAGE" -c "
import importlib.util as u
print(' '.join(m for m in ('pip', 'setuptools', 'wheel', 'grpc_tools', 'aiohttp', 'typer', 'rich', 'prompt_toolkit',
                            'pygments', 'tzdata') if u.find_spec(m)) or 'none')")"
size="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
echo "image: $IMAGE, $((size / 1000000)) MB ($size bytes); build tools or pruned packages in its venv: $absent"
[ "$absent" = none ] || { echo "error: the runtime image carries $absent" >&2; exit 1; }
echo "image-smoke: PASSED in $((SECONDS - start)) s (base image $((base_ready - start)) s, build $((built - base_ready)) s, run and checks $((SECONDS - built)) s)"
