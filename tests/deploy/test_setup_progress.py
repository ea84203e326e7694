"""hack/lib/venv.sh says what it does, one line per phase, and shows pip's output only when pip fails."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Stands in for python3 and for .venv/bin/python: `-m venv DIR` copies itself into DIR/bin/python,
# `-m pip ...` prints pip-like noise (and fails when PIP_FAILS is set), -V / -c answer like 3.12.
FAKE_PYTHON = textwrap.dedent("""\
    #!/usr/bin/env bash
    case "$1" in
      -V) echo "Python 3.12.1" ;;
      -c) exit "${TOO_OLD:-0}" ;;
      -m)
        case "$2" in
          venv) mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
          pip) echo "WARNING: Location 'file:///opt/pypi/simple/x/' is ignored"
               echo "Successfully installed noise-1.0" >&2
               if [ -n "${PIP_FAILS:-}" ] && [ "$3" = install ] && [ "$4" = -e ]; then
                 echo "ERROR: No matching distribution found for grpcio>=1.81.1" >&2; exit 1
               fi ;;
        esac ;;
    esac
    """)


def project(tmp_path: Path) -> Path:
    (tmp_path / "hack" / "lib").mkdir(parents=True)
    shutil.copy(ROOT / "hack" / "lib" / "venv.sh", tmp_path / "hack" / "lib" / "venv.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
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
    assert lines[:3] == ["fake-dra: creating .venv with Python 3.12.1", "fake-dra: updating pip in .venv",
                         "fake-dra: installing fake-dra and its test dependencies into .venv "
                         "(the first time takes a minute or two)"]
    assert len(lines) == 4 and lines[3].startswith("fake-dra: .venv ready (")
    assert "WARNING" not in done.stderr + done.stdout and "Successfully" not in done.stderr + done.stdout
    assert (root / ".venv" / ".fake-dra-installed").is_file()
    again = source(root)
    assert again.returncode == 0 and again.stderr == "", "nothing to do: nothing said"


def test_pip_failure_shows_its_output_and_fails(tmp_path):
    root = project(tmp_path)
    done = source(root, "echo not-reached", PIP_FAILS="1")
    assert done.returncode == 1 and "not-reached" not in done.stdout
    assert "fake-dra: failed (exit 1): .venv/bin/python -m pip install -e .[test]" in done.stderr
    assert "    | ERROR: No matching distribution found for grpcio>=1.81.1" in done.stderr
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
