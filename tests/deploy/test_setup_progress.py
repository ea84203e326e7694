"""hack/lib/venv.sh installs from requirements-test.lock, says what it does (one line per phase, progress
while pip fetches), and shows pip's output only when pip fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Stands in for python3 and for .venv/bin/python: `-m venv DIR` copies itself into DIR/bin/python,
# `-m pip ...` prints pip-like noise (a "Collecting" line per package of a -r file, SLOW_PIP seconds
# apart; fails when PIP_FAILS names the step: "lock" or "editable"), -V / -c answer like 3.12.
# Every pip command line is appended to pip.log.
FAKE_PYTHON = textwrap.dedent("""\
    #!/usr/bin/env bash
    case "$1" in
      -V) echo "Python 3.12.1" ;;
      -c) exit "${TOO_OLD:-0}" ;;
      -m)
        case "$2" in
          venv) mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
          pip) shift 2; echo "$*" >> pip.log
               echo "WARNING: Location 'file:///opt/pypi/simple/x/' is ignored"
               case " $* " in
                 *" -r "*) for p in $(sed -n 's/==.*//p' requirements-test.lock); do
                             echo "Collecting $p"; sleep "${SLOW_PIP:-0}"; done
                           echo "Installing collected packages: ..."
                           [ "${PIP_FAILS:-}" = lock ] && { echo "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES" >&2; exit 1; } ;;
                 *" -e "*) [ "${PIP_FAILS:-}" = editable ] && { echo "ERROR: setuptools>=68 is not installed" >&2; exit 1; } ;;
               esac
               echo "Successfully installed noise-1.0" >&2 ;;
        esac ;;
    esac
    """)


def project(tmp_path: Path) -> Path:
    (tmp_path / "hack" / "lib").mkdir(parents=True)
    shutil.copy(ROOT / "hack" / "lib" / "venv.sh", tmp_path / "hack" / "lib" / "venv.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "requirements-test.lock").write_text("a==1 \\\n    --hash=sha256:00\nb==2 \\\n    --hash=sha256:11\n"
                                                    "c==3 ; sys_platform == 'win32' \\\n    --hash=sha256:22\n")
    fake = tmp_path / "python3-fake"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return tmp_path


def source(root: Path, script: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f"set -euo pipefail; . hack/lib/venv.sh; {script}"], cwd=root,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                               "PYTHON": str(root / "python3-fake"), **env})


def test_fresh_install_prints_one_line_per_phase_and_no_pip_noise(tmp_path):
    root = project(tmp_path)
    done = source(root)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[:2] == ["fake-dra: creating .venv with Python 3.12.1",
                         "fake-dra: installing 3 pinned packages from requirements-test.lock into .venv "
                         "(the first time takes a minute or two)"]
    assert lines[-2] == "fake-dra: installing fake-dra (editable) into .venv"
    assert lines[-1].startswith("fake-dra: .venv ready (")
    assert "WARNING" not in done.stderr + done.stdout and "Successfully" not in done.stderr + done.stdout
    assert (root / ".venv" / ".fake-dra-installed").is_file()
    again = source(root)
    assert again.returncode == 0 and again.stderr == "", "nothing to do: nothing said"


def test_every_package_comes_from_the_lock_with_hashes_and_fake_dra_from_no_index(tmp_path):
    root = project(tmp_path)
    assert source(root).returncode == 0
    pip = (root / "pip.log").read_text().splitlines()
    (locked,) = [c for c in pip if "-r requirements-test.lock" in c]
    assert "--require-hashes" in locked and "--no-deps" in locked and "--only-binary :all:" in locked
    (editable,) = [c for c in pip if " -e ." in c]
    assert "--no-deps" in editable and "--no-index" in editable and "--no-build-isolation" in editable
    assert any(c.startswith("check") for c in pip), "pip check proves the lock is complete"
    assert not any("--upgrade" in c for c in pip), "nothing unpinned (pip itself included)"


def test_a_newer_lock_reinstalls(tmp_path):
    root = project(tmp_path)
    assert source(root).returncode == 0
    stamp = root / ".venv" / ".fake-dra-installed"
    os.utime(stamp, (1, 1))
    again = source(root)
    assert again.returncode == 0 and "installing 3 pinned packages" in again.stderr


def test_a_slow_fetch_shows_progress(tmp_path):
    root = project(tmp_path)
    done = source(root, SLOW_PIP="0.7", FD_PROGRESS_EVERY="0")
    assert done.returncode == 0, done.stderr
    progress = [ln for ln in done.stderr.splitlines() if ln.startswith("fake-dra:   fetched")]
    assert progress and progress[-1] == "fake-dra:   fetched 3 of 3; installing them", done.stderr
    assert any(ln.endswith(" of 3 packages") for ln in progress), done.stderr


def test_missing_lock_is_named(tmp_path):
    root = project(tmp_path)
    (root / "requirements-test.lock").unlink()
    done = source(root)
    assert done.returncode == 1 and "requirements-test.lock is missing" in done.stderr


@pytest.mark.parametrize("step, command", [
    ("lock", "pip install --disable-pip-version-check --progress-bar off --require-hashes --no-deps"),
    ("editable", "pip install --disable-pip-version-check --no-deps --no-build-isolation --no-index -e ."),
])
def test_pip_failure_shows_its_output_and_fails(tmp_path, step, command):
    root = project(tmp_path)
    done = source(root, "echo not-reached", PIP_FAILS=step)
    assert done.returncode == 1 and "not-reached" not in done.stdout
    assert f"fake-dra: failed (exit 1): .venv/bin/python -m {command}" in done.stderr
    assert "    | ERROR: " in done.stderr
    assert not (root / ".venv" / ".fake-dra-installed").exists(), "a failed install is retried next time"


def test_missing_or_old_python_is_named(tmp_path):
    root = project(tmp_path)
    done = source(root, PYTHON="python3-does-not-exist")
    assert done.returncode == 1 and "python3-does-not-exist not found; install Python 3.11 or newer" in done.stderr
    done = source(root, TOO_OLD="1")
    assert done.returncode == 1 and "fake-dra needs Python 3.11 or newer" in done.stderr
    done = source(root, PYTHON="/bin/false")  # found, but not a Python: said so, not "is ;"
    assert done.returncode == 1 and "/bin/false is not a working Python; fake-dra needs Python 3.11" in done.stderr


def test_quiet_helper(tmp_path):
    root = project(tmp_path)
    assert source(root).returncode == 0
    done = source(root, "fd_quiet sh -c 'echo out; echo err >&2; exit 3' || echo rc=$?")
    assert "rc=3" in done.stdout
    assert "fake-dra: failed (exit 3)" in done.stderr and "    | out" in done.stderr and "    | err" in done.stderr
    done = source(root, "fd_quiet sh -c 'echo chatty'")
    assert done.returncode == 0 and done.stderr == "" and done.stdout == ""
