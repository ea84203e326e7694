# shellcheck shell=bash
# Image helpers shared by hack/image-smoke.sh and hack/kind-load.sh (sourced, not run): pick the
# container engine, make Debian's podman work on hosts like the CI machines, make sure the
# Dockerfile's base image exists, build the image. Needs REPO_ROOT (hack/kind-common.sh sets it).

image_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# The Dockerfile's base image: its one `ARG BASE_IMAGE=` line is the only place it is named.
dockerfile_base_image() {
  sed -n 's/^ARG BASE_IMAGE=//p' "$REPO_ROOT/Dockerfile"
}

# ensure_debian_packages CMD:PACKAGE... -- apt-get install the packages whose command is missing.
ensure_debian_packages() {
  local pair missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing ${missing[*]}; install them (Debian/Ubuntu: apt-get install ${missing[*]})" >&2
    return 1
  fi
  image_log "installing ${missing[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# podman_setup WORKDIR -- podman with runc and rlimits this host can grant, via a containers.conf
# in WORKDIR (a CONTAINERS_CONF set by the caller wins). Why: crun fails on hybrid cgroup
# hierarchies (v1 + v2 mounted side by side), runc does not; rootful podman asks the runtime for
# nofile 1048576, which fails where root cannot raise its hard limit; and podman lowers its own
# RLIMIT_NPROC to 32768 when it starts, so a container cannot be given more processes than that.
podman_setup() {
  ensure_debian_packages podman:podman runc:runc
  if [ -n "${CONTAINERS_CONF:-}" ]; then
    return 0
  fi
  local nofile nproc
  nofile="$(ulimit -Hn)"
  nproc="$(ulimit -Hu)"
  [ "$nofile" = unlimited ] && nofile=1048576
  { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
  cat > "$1/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
EOF
  export CONTAINERS_CONF="$1/containers.conf"
}

# The host's CA bundle, mounted over the build's during RUN steps only: a proxy that re-signs TLS
# is then trusted by pip in the build, and nothing of it lands in the image.
host_ca_bundle() {
  local f
  for f in "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    if [ -n "$f" ] && [ -f "$f" ]; then
      echo "$f"
      return 0
    fi
  done
}

# create_local_base NAME WORKDIR -- the Dockerfile's base made from Debian's packages and imported
# under NAME: bookworm minbase + python3, python3-venv, ca-certificates (what the build needs:
# python3 -m venv with ensurepip), docs, man pages and locales left out as Debian's slim images do.
create_local_base() {
  local name="$1" tar="$2/base.tar" suite=bookworm mirrors=()
  ensure_debian_packages mmdebstrap:mmdebstrap
  case "$name" in
    *-"$suite") ;;
    *) echo "error: the local base is Debian $suite; $name does not say $suite" >&2; return 1 ;;
  esac
  # The host's own Debian mirror when it is a $suite host (its proxy settings apply), else Debian's.
  if [ -f /etc/apt/sources.list.d/debian.sources ] && grep -q "^Suites:.*\b$suite\b" /etc/apt/sources.list.d/debian.sources; then
    mirrors=(/etc/apt/sources.list.d/debian.sources)
  else
    mirrors=("deb http://deb.debian.org/debian $suite main" "deb http://deb.debian.org/debian $suite-updates main"
             "deb http://deb.debian.org/debian-security $suite-security main")
  fi
  image_log "creating base image $name with mmdebstrap (no registry reachable)"
  mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    "$suite" "$tar" "${mirrors[@]}" </dev/null >"$2/mmdebstrap.log" 2>&1 \
    || { tail -20 "$2/mmdebstrap.log" >&2; return 1; }
  podman import --quiet \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
    --change "LABEL org.opencontainers.image.description=\"local stand-in for $name: Debian $suite minbase + python3, python3-venv, ca-certificates (hack/lib/image.sh)\"" \
    "$tar" "$name" >/dev/null
  rm -f "$tar"
}

# ensure_base_image WORKDIR -- the Dockerfile's base present locally: already there, else pulled,
# else created with create_local_base. FAKE_DRA_LOCAL_BASE=1 skips the pull.
ensure_base_image() {
  local base
  base="$(dockerfile_base_image)"
  if podman image exists "$base"; then
    return 0
  fi
  if [ "${FAKE_DRA_LOCAL_BASE:-0}" != 1 ] && podman pull --quiet "$base" >/dev/null 2>&1; then
    image_log "pulled base image $base"
    return 0
  fi
  create_local_base "$base" "$1"
}

# build_image ENGINE TAG -- build the Dockerfile. podman: host network for the build's pip (no
# bridge setup needed), the host CA bundle mounted for RUN steps only.
build_image() {
  local engine="$1" tag="$2" ca args=()
  ca="$(host_ca_bundle || true)"
  if [ "$engine" = podman ]; then
    args+=(--network=host)
    [ -n "$ca" ] && args+=("--volume=$ca:/etc/ssl/certs/ca-certificates.crt:ro")
  fi
  "$engine" build "${args[@]}" --tag "$tag" "$REPO_ROOT"
}
