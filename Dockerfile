# fake-dra kubelet plugin image: `fake-dra run` as the DaemonSet entrypoint.
#
# Reproducible and small:
# - dependencies come from requirements.lock only, the build tools for fake-dra's own wheel from
#   requirements-build.lock (both by hack/lock.sh): exact versions, sha256-checked, wheels only, no
#   resolver at build time (--no-deps; `pip check` proves the lock is complete);
# - two stages: the build stage fills the virtualenv and then removes pip, setuptools and wheel
#   from it; the runtime stage gets only that finished /opt/fake-dra.
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
RUN python3 -m venv /opt/fake-dra
COPY requirements.lock requirements-build.lock /src/
RUN /opt/fake-dra/bin/pip install --require-hashes --no-deps --only-binary :all: \
      -r /src/requirements.lock -r /src/requirements-build.lock
COPY pyproject.toml README.md /src/
COPY driver /src/driver
# fake-dra itself, built from the source tree with the locked build tools (no index, no
# dependencies); the build tools leave the venv and `pip check` proves the rest complete.
# Then the asyncio twin of the Kubernetes client goes: kubernetes >= 37 ships kubernetes.aio (68
# of its 126 MB) and requires aiohttp for it, but fake-dra uses only the synchronous client
# (driver.kube). Removed: kubernetes/aio and the packages only aiohttp needs (tests/deploy keeps
# this list equal to what requirements.lock says only aiohttp brings, and driver/ free of both).
# Last, pip leaves, and everything fake-dra imports must still import.
WORKDIR /src
RUN sed -n 's/==.*//p' requirements.lock > /tmp/runtime.txt \
 && { sed -n 's/==.*//p' requirements-build.lock | grep -vxF -f /tmp/runtime.txt > /tmp/build-only.txt || true; } \
 && /opt/fake-dra/bin/pip install --no-index --no-deps --no-build-isolation /src \
 && /opt/fake-dra/bin/pip uninstall --yes -r /tmp/build-only.txt \
 && /opt/fake-dra/bin/pip check \
 && /opt/fake-dra/bin/pip uninstall --yes aiohttp aiohttp-retry aiohappyeyeballs aiosignal attrs frozenlist multidict propcache yarl \
 && rm -r /opt/fake-dra/lib/python3*/site-packages/kubernetes/aio \
 && /opt/fake-dra/bin/pip uninstall --yes pip \
 && rm -f /opt/fake-dra/bin/activate* \
 && /opt/fake-dra/bin/fake-dra --help >/dev/null \
 && /opt/fake-dra/bin/python -c "import kubernetes, driver.kube.claims, driver.kube.slices, driver.kube.e2e_client" \
 && /opt/fake-dra/bin/python -c "import driver.commands.run, driver.plugin.server, driver.celexpr, driver.discovery.udev, pyudev" \
 && for m in pip setuptools wheel grpc_tools aiohttp kubernetes.aio; do \
      ! /opt/fake-dra/bin/python -c "import $m" 2>/dev/null || { echo "runtime venv still has $m" >&2; exit 1; }; \
    done

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
