#!/usr/bin/env bash
# Regenerate the pinned dependency locks the Dockerfile installs from, with hashes, wheels only:
# - requirements.lock: every runtime dependency (pyproject.toml [project.dependencies], not the
#   extras); offered to users too: `pip install --require-hashes --no-deps -r requirements.lock`;
# - requirements-build.lock: the [build-system] requirements, to build fake-dra's own wheel in the
#   image's build stage (they never reach the runtime stage).
# Each pin carries the sha256 of every wheel of that version on every platform (the lock installs
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
compile pyproject.toml --output-file requirements.lock "$@"
.venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' \
  | compile - --output-file requirements-build.lock "$@"
echo "wrote requirements.lock ($(grep -c '^[a-z]' requirements.lock) packages)," \
  "requirements-build.lock ($(grep -c '^[a-z]' requirements-build.lock) packages)"
