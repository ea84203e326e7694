#!/usr/bin/env bash
# Run the main job on the embedded default (local mode, no cluster). Installs into .venv if needed.
# Usage: hack/demo.sh [extra args for `fake-dra demo`]
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/venv.sh
fd_say "running fake-dra demo${*:+ $*}"
exec .venv/bin/fake-dra demo "$@"
