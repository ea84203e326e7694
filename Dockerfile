# fake-dra kubelet plugin image: `fake-dra run` as the DaemonSet entrypoint.
#
# Reproducible and small:
# - dependencies come from requirements.lock only, the build tools for fake-dra's own wheel from
#   requirements-build.lock (both by hack/lock.sh): exact versions, sha256-checked, wheels only, no
#   resolver at build time (--no-deps; `pip check` proves the lock is complete);
# - two stages: the build stage fills the virtualenv and then removes from it what the DaemonSet
#   never runs (hack/image-venv.sh); the runtime stage gets only that finished /opt/fake-dra.
#   grpcio-tools is not needed at all: the gRPC stubs are committed and CI checks them against
#   proto/ (tests/plugin/test_protos.py).
#
# Build: `podman build -t localhost/fake-dra:dev .` (or docker). hack/image-smoke.sh builds and runs
# it with the DaemonSet's security settings; without a registry it first creates BASE_IMAGE locally
# (Debian bookworm minbase + python3, python3-venv, ca-certificates). A TLS-re-signing proxy only
# needs its CA in /etc/ssl/certs/ca-certificates.crt during the build (`-v host-bundle:that:ro`).
ARG BASE_IMAGE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
# hack/image-venv.sh holds every build command (hack/image-size.sh runs the same ones to measure the
# venv without a container engine). deps: the locked wheels, a layer that changes only with the locks.
COPY hack/image-venv.sh requirements.lock requirements-build.lock /src/
RUN bash /src/image-venv.sh deps /opt/fake-dra /src
# finish: fake-dra itself, then what the DaemonSet never runs leaves (each cut and its reason are in
# the script: build tools, kubernetes.aio and aiohttp's packages, the CEL library's interactive
# shell, tests shipped by dependencies, tzdata, the dependencies' sources beside their bytecode,
# pip), and every module the two containers run must still import.
COPY pyproject.toml README.md /src/
COPY driver /src/driver
RUN bash /src/image-venv.sh finish /opt/fake-dra /src

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="fake-dra" \
      org.opencontainers.image.description="DRA driver and kubelet plugin for simulated or real GPUs and SR-IOV NICs" \
      org.opencontainers.image.licenses="Apache-2.0"
# The root filesystem is read-only in the DaemonSet: no bytecode writes (pip compiled it at install).
ENV PATH=/opt/fake-dra/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /opt/fake-dra /opt/fake-dra
# Root inside the container is needed only to write into the kubelet's root-owned hostPath
# directories; the DaemonSet drops every capability and makes the root filesystem read-only.
ENTRYPOINT ["fake-dra"]
CMD ["run"]
