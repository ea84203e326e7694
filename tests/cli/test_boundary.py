"""The CLI's one error boundary: expected failures are one line and an exit code; a bug says so."""

from __future__ import annotations

import argparse
import errno
import subprocess
import sys
from pathlib import Path

import pytest

from driver import cli
from driver.errors import AllocationError, InputError


def _with_command(monkeypatch, func):
    """Make `fake-dra show` run `func` instead of its real body."""
    real = cli.build_parser

    def build(argv=None):
        parser = real(argv)
        for name, sub in cli._envflags.walk(parser):
            if name == "show":
                sub.set_defaults(func=func)
        return parser
    monkeypatch.setattr(cli, "build_parser", build)


def test_a_bug_shows_the_traceback_and_says_it_is_a_bug(monkeypatch, capsys):
    def broken(args: argparse.Namespace) -> int:
        return {}["missing"]
    _with_command(monkeypatch, broken)
    assert cli.main(["show"]) == cli.EXIT_BUG
    err = capsys.readouterr().err
    assert "fake-dra show: internal error: KeyError" in err
    assert "this is a bug in fake-dra; please report it" in err
    assert "Traceback (most recent call last)" in err and "broken" in err


@pytest.mark.parametrize("exc,code,needle", [
    (InputError("--thing: bad"), 2, "fake-dra show: --thing: bad"),
    (AllocationError("request gpu: no device fits"), 1, "fake-dra show: request gpu: no device fits"),
    (PermissionError(errno.EACCES, "Permission denied", "/var/lib/kubelet/plugins"), 2,
     "fake-dra show: /var/lib/kubelet/plugins: Permission denied"),
    (OSError(errno.ENOSPC, "No space left on device", "/tmp/x", None, "/tmp/y"), 2,
     "fake-dra show: /tmp/x -> /tmp/y: No space left on device"),
    (KeyboardInterrupt(), 130, "fake-dra show: interrupted"),
])
def test_expected_failures_are_one_line(monkeypatch, capsys, exc, code, needle):
    def fail(args):
        raise exc
    _with_command(monkeypatch, fail)
    assert cli.main(["show"]) == code
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_usage_errors_help_and_version_return_their_codes(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("fake-dra ")
    assert cli.main(["show", "--help"]) == 0
    assert "FAKE_DRA_SYSFS_ROOT" in capsys.readouterr().out
    assert cli.main(["no-such-command"]) == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err
    assert cli.main([]) == 2


def test_console_script_closed_pipe_is_quiet(tmp_path):
    # `fake-dra make-sysfs --list | head -1`: the reader leaves early; no BrokenPipeError traceback.
    code = ("import sys, os; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            "from driver.cli import main; sys.exit(main(['make-sysfs', '--list']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == cli.EXIT_BROKEN_PIPE and "Traceback" not in proc.stderr


def test_python_dash_m_and_console_script_agree(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "driver", "--log-level", "LOUD", "show"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "--log-level" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("module,code,needle", [
    ("yaml", 2, "Python package 'yaml' is not installed"),
    ("grpc._cython", 2, "Python package 'grpc._cython' is not installed"),
    ("driver.nothing_here", cli.EXIT_BUG, "this is a bug in fake-dra"),
])
def test_a_missing_dependency_is_the_environment_not_a_bug(monkeypatch, capsys, module, code, needle):
    def fail(args):
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)
    _with_command(monkeypatch, fail)
    assert cli.main(["show"]) == code
    err = capsys.readouterr().err
    assert needle in err
    if code == 2:
        assert "Traceback" not in err and ".venv" in err


def test_python_without_the_venv_says_how_to_set_up(tmp_path):
    # A newcomer's `python -m driver` in the clone without the venv: `-S` hides site-packages, so
    # only the standard library and the source tree are importable, as in a bare system Python.
    # (`make-sysfs --list` needs no third-party package: only the command named is loaded.)
    root = Path(cli.__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-S", "-m", "driver", "slices", "--help"], cwd=tmp_path,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "is not installed" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
