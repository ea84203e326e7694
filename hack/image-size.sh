#!/usr/bin/env bash
# The size of the image's virtualenv without a container engine: builds it in a temporary
# directory with hack/image-venv.sh, the commands the Dockerfile runs, from the same locks, and
# prints its size and what is largest in it. docs/deploy.md states the figure it printed.
# Needs python3 (3.11, the image's) and PyPI (or a pip mirror). Usage: hack/image-size.sh [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d "${TMPDIR:-/tmp}/fake-dra-image-size.XXXXXX")"
[ "${1:-}" = --keep ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cp -r pyproject.toml README.md requirements.lock requirements-build.lock driver "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -r {} +
echo "building the image's venv in $work/venv ($(python3 -V))" >&2
hack/image-venv.sh deps "$work/venv" "$work/src" >"$work/deps.log" 2>&1 || { cat "$work/deps.log" >&2; exit 1; }
hack/image-venv.sh finish "$work/venv" "$work/src" >"$work/finish.log" 2>&1 || { cat "$work/finish.log" >&2; exit 1; }
site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
echo "venv: $(du -sm "$work/venv" | cut -f1) MB on disk, $(du -sm --apparent-size "$work/venv" | cut -f1) MB of files"
echo "largest in site-packages (MB):"
du -sm "$site"/* | sort -rn | head -12 | sed 's|'"$site"'/||'
