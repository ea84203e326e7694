#!/usr/bin/env bash
# The image's virtualenv, built by the Dockerfile (two RUN steps) and measured by hack/image-size.sh
# with exactly these commands, so the size docs/deploy.md states is the size the image holds.
#
#   hack/image-venv.sh deps   PREFIX SRC   # the locked wheels (a layer of its own: changes rarely)
#   hack/image-venv.sh finish PREFIX SRC   # fake-dra itself, then everything the DaemonSet never runs leaves
#
# deps: every wheel of requirements.lock and requirements-build.lock, hash-checked, wheels only,
# no resolver (--no-deps; `pip check` below proves the lock complete).
# finish, in order, each cut with its reason:
# - fake-dra from SRC with the locked build tools (no index, no dependencies); the build tools leave;
# - kubernetes.aio, the asyncio twin of the client (68 of kubernetes' 126 MB), and the packages only
#   aiohttp needs: driver.kube uses the synchronous client only;
# - the CEL library's interactive shell (`cel` console script, cel.cli) and the packages only it
#   needs (typer, rich, prompt_toolkit, pygments, ...; ~24 MB): driver.celexpr loads the evaluator
#   without the package __init__ that imports the shell;
# - tests the dependencies ship (kubernetes' *_test.py, websocket/tests);
# - tzdata (3 MB, 650 files): python-dateutil's fallback for named time zones (dateutil.tz.gettz),
#   which neither the Kubernetes client (it parses RFC 3339 timestamps with offsets) nor fake-dra calls;
# - the dependencies' sources: their bytecode is compiled next to them (legacy layout) and the .py
#   files removed, so Python imports the bytecode alone (41 MB of source, 34 of it kubernetes'; the
#   bytecode is needed anyway: the root filesystem is read-only and `import kubernetes` loads ~1,000
#   modules). Their tracebacks then lack source lines; fake-dra's own code keeps its sources;
# - pip and the activate scripts.
# Then every module the DaemonSet's two containers run must still import, and one CEL selector compile.
set -euo pipefail
phase=${1:?usage: image-venv.sh deps|finish PREFIX SRC} prefix=${2:?PREFIX} src=${3:?SRC}
py="$prefix/bin/python"
pip() { "$py" -m pip --disable-pip-version-check --no-input "$@"; }

if [ "$phase" = deps ]; then
  python3 -m venv "$prefix"
  pip install --no-cache-dir --require-hashes --no-deps --only-binary :all: \
    -r "$src/requirements.lock" -r "$src/requirements-build.lock"
  exit 0
fi
[ "$phase" = finish ] || { echo "image-venv.sh: unknown phase '$phase' (deps or finish)" >&2; exit 2; }

site="$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed -n 's/==.*//p' "$src/requirements.lock" > "$tmp/runtime.txt"
{ sed -n 's/==.*//p' "$src/requirements-build.lock" | grep -vxF -f "$tmp/runtime.txt" > "$tmp/build-only.txt" || true; }
pip install --no-cache-dir --no-index --no-deps --no-build-isolation "$src"
pip uninstall --yes -r "$tmp/build-only.txt"
pip check
pip uninstall --yes aiohttp aiohttp-retry aiohappyeyeballs aiosignal attrs frozenlist multidict propcache yarl
rm -r "$site/kubernetes/aio"
pip uninstall --yes annotated-doc markdown-it-py mdurl prompt-toolkit pygments rich shellingham typer wcwidth
rm -f "$prefix/bin/cel" "$site/cel/cli.py" "$site/cel/__main__.py"
find "$site/kubernetes" -name '*_test.py' -delete
rm -rf "$site/websocket/tests"
pip uninstall --yes tzdata
"$py" -m compileall -q -b -f -x '/driver/' "$site" >/dev/null
find "$site" -path "$site/driver" -prune -o -name '*.py' -type f -print0 | xargs -0 rm -f
find "$site" -path "$site/driver" -prune -o -name __pycache__ -type d -print0 | xargs -0 rm -rf
pip uninstall --yes pip
rm -f "$prefix"/bin/activate* "$prefix"/bin/Activate.ps1
"$prefix/bin/fake-dra" --help >/dev/null
"$py" -c "import kubernetes, driver.kube.claims, driver.kube.slices, driver.kube.e2e_client, dateutil.parser"
"$py" -c "import driver.commands.run, driver.commands.node_sysfs, driver.plugin.server, driver.discovery.udev, pyudev"
"$py" -c "import sys; from driver.celexpr import compile_selector; compile_selector('device.driver == \"x\"', 'image check'); assert 'cel.cel' in sys.modules"
for m in pip setuptools wheel grpc_tools aiohttp kubernetes.aio typer rich prompt_toolkit pygments; do
  ! "$py" -c "import $m" 2>/dev/null || { echo "image-venv.sh: the runtime venv still has $m" >&2; exit 1; }
done
