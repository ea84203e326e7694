"""What can be checked about the image and the kind scripts without a container engine or cluster."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(ROOT.glob("hack/kind-*.sh")) + [ROOT / "hack" / n for n in ("install.sh", "uninstall.sh", "e2e.sh")]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_parse_and_are_executable(script: Path) -> None:
    assert script.is_file(), script
    if script.name != "kind-common.sh":
        assert script.stat().st_mode & 0o111, f"{script} is not executable"
    bash = shutil.which("bash")
    assert bash
    done = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_dockerfile_contract() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "FROM ${PYTHON_IMAGE}" in text and "ARG PYTHON_IMAGE=python:3.11-slim" in text
    assert 'ENTRYPOINT ["fake-dra"]' in text and 'CMD ["run"]' in text
    assert "hack/gen_protos.sh /tmp/regen" in text and "diff -r" in text, "stubs verified at build"
    for forbidden in ("curl ", "wget ", "ADD http"):
        assert forbidden not in text, "no downloads outside the package registries"
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") + 1:][:1] == ["!pyproject.toml"]
    for copied in ("pyproject.toml", "README.md", "proto/", "hack/gen_protos.sh", "driver/"):
        assert f"!{copied}" in ignore, f"{copied} must be in the build context"


def test_stub_check_passes_from_a_clean_copy(tmp_path: Path) -> None:
    """The build's stub verification step, run on a copy of exactly the build context."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, ctx / name)
    shutil.copytree(ROOT / "proto", ctx / "proto")
    shutil.copytree(ROOT / "driver", ctx / "driver", ignore=shutil.ignore_patterns("__pycache__"))
    (ctx / "hack").mkdir()
    shutil.copy(ROOT / "hack" / "gen_protos.sh", ctx / "hack" / "gen_protos.sh")
    venv_python = ctx / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    import sys

    venv_python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    venv_python.chmod(0o755)
    regen = tmp_path / "regen"
    gen = subprocess.run(["bash", "hack/gen_protos.sh", str(regen)], cwd=ctx, capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    diff = subprocess.run(["diff", "-r", "-x", "__init__.py", "-x", "__pycache__",
                           str(regen / "driver/plugin/gen"), str(ctx / "driver/plugin/gen")], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout[:2000]
