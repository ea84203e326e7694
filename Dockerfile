# fake-dra kubelet plugin image: `fake-dra run` as the DaemonSet entrypoint.
#
# Two stages so the runtime image carries only the installed virtualenv: the builder installs the
# package from the source tree (wheels from PyPI only; nothing else is downloaded) and proves that the
# committed gRPC stubs are exactly what hack/gen_protos.sh regenerates from proto/ with the pinned
# grpcio-tools, so an image can never ship stubs that drifted from the vendored kubelet protos.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/fake-dra
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY hack/gen_protos.sh ./hack/gen_protos.sh
COPY driver ./driver
# hack/gen_protos.sh runs "$PYTHON" relative to the source tree (default .venv/bin/python), so a
# two-line wrapper points that path at the image's virtualenv.
RUN /opt/fake-dra/bin/pip install . \
 && mkdir -p .venv/bin \
 && printf '#!/bin/sh\nexec /opt/fake-dra/bin/python "$@"\n' > .venv/bin/python && chmod +x .venv/bin/python \
 && bash hack/gen_protos.sh /tmp/regen \
 && diff -r -x __init__.py -x __pycache__ /tmp/regen/driver/plugin/gen driver/plugin/gen \
 && /opt/fake-dra/bin/fake-dra --help >/dev/null \
 && /opt/fake-dra/bin/python -c "import driver.plugin.gen.dra_v1_pb2_grpc, driver.plugin.gen.pluginregistration_v1_pb2_grpc"

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="fake-dra" \
      org.opencontainers.image.description="DRA driver and kubelet plugin for simulated or real GPUs and SR-IOV NICs" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/fake-dra/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /opt/fake-dra /opt/fake-dra
# Root inside the container is needed only to write into the kubelet's root-owned hostPath
# directories; the DaemonSet drops every capability and makes the root filesystem read-only.
ENTRYPOINT ["fake-dra"]
CMD ["run"]
