#!/usr/bin/env bash
# Regenerate the Python gRPC stubs for the vendored kubelet protos (proto/*.proto) into
# driver/plugin/gen/ (or into $1, which tests/plugin/test_protos.py uses to prove the committed
# stubs are exactly what this script produces).
#
# Why the copy into a temporary tree: protoc derives the Python import of the *_pb2 module from
# the .proto path relative to -I, so staging the files as driver/plugin/gen/<name>.proto makes
# the generated *_pb2_grpc.py import `from driver.plugin.gen import <name>_pb2` (a package-relative
# import that works when installed) instead of a bare top-level `import <name>_pb2`.
# The output depends on the grpcio-tools version, which pyproject.toml pins exactly.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
case "$PYTHON" in /*) ;; */*) PYTHON="$PWD/$PYTHON" ;; esac
out="${1:-.}"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/driver/plugin/gen" "$out/driver/plugin/gen"
cp proto/*.proto "$stage/driver/plugin/gen/"
(cd "$stage" && "$PYTHON" -m grpc_tools.protoc -I . \
  --python_out="$stage" --pyi_out="$stage" --grpc_python_out="$stage" driver/plugin/gen/*.proto) 2>&1 \
  || { echo "gen_protos: protoc failed" >&2; exit 1; }
for f in "$stage"/driver/plugin/gen/*_pb2*.py*; do
  cp "$f" "$out/driver/plugin/gen/"
done
if [ ! -f "$out/driver/plugin/gen/__init__.py" ]; then
  printf '"""Generated gRPC stubs for the kubelet protos in proto/ (hack/gen_protos.sh); do not edit."""\n' \
    > "$out/driver/plugin/gen/__init__.py"
fi
