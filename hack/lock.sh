#!/usr/bin/env bash
# Regenerate the pinned dependency locks, with hashes, wheels only. The one command to run after
# changing a dependency in pyproject.toml (tests/deploy/test_locks.py fails until it has run):
# - requirements.lock: every runtime dependency (pyproject.toml [project.dependencies], not the
#   extras); the image installs it; offered to users too:
#   `pip install --require-hashes --no-deps -r requirements.lock`;
# - requirements-build.lock: the [build-system] requirements, to build fake-dra's own wheel in the
#   image's build stage (they never reach the runtime stage);
# - requirements-test.lock: the runtime, build and test (+dev) dependencies together, at the same
#   versions as the two locks above; hack/lib/venv.sh installs .venv from it (hack/test.sh,
#   hack/demo.sh, CI).
# Each pin carries the sha256 of every wheel of that version on every platform (the locks install
# on arm64 too). Pins already in a lock are kept while they satisfy pyproject.toml, so a rerun is
# reproducible; pass --upgrade (or --upgrade-package NAME) to move them. Needs PyPI.
# The resolver is uv (dev extra): it hashes all platforms' wheels in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/venv.sh
# The image's Python: Debian bookworm and python:3.11 both ship 3.11. --universal keeps the markers
# of platform-specific dependencies instead of resolving for this machine only.
compile() {
  .venv/bin/uv pip compile --quiet --universal --python-version 3.11 --only-binary :all: --generate-hashes \
    --custom-compile-command 'hack/lock.sh' "$@"
}
build_reqs="$(mktemp "${TMPDIR:-/tmp}/fake-dra-build-reqs.XXXXXX.txt")"
trap 'rm -f "$build_reqs"' EXIT
.venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' \
  > "$build_reqs"
compile pyproject.toml --output-file requirements.lock "$@"
compile "$build_reqs" --output-file requirements-build.lock "$@"
# Constrained by the two above, so a package in several locks has one version everywhere.
compile pyproject.toml "$build_reqs" --extra test -c requirements.lock -c requirements-build.lock \
  --output-file requirements-test.lock "$@"
# The build requirements came from a temp file: name their real source instead.
sed -i "s|-r $build_reqs|pyproject.toml [build-system]|" requirements-build.lock requirements-test.lock
count() { grep -c '^[a-z]' "$1"; }
echo "wrote requirements.lock ($(count requirements.lock) packages)," \
  "requirements-build.lock ($(count requirements-build.lock) packages)," \
  "requirements-test.lock ($(count requirements-test.lock) packages)"
