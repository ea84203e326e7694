"""The kind backend: skips cleanly without a cluster; runs every scenario when one is there (opt-in).

Run against a real cluster with:
    hack/kind-create.sh && hack/kind-load.sh && hack/install.sh
    KUBECONFIG=~/.kube/config hack/test.sh -m kind tests/e2e/test_kind.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from driver.cli import main
from driver.e2e.kind import KindBackend, unreachable_reason
from driver.e2e.manifests import claim_object
from driver.e2e.report import summarize_failures
from driver.e2e.runner import run_all
from driver.e2e.scenario import load_scenarios


def _dead_kubeconfig(tmp_path: Path) -> str:
    """A kubeconfig pointing at a port nothing listens on."""
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": "dead",
        "clusters": [{"name": "dead", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_no_cluster_reasons(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert "no KUBECONFIG" in unreachable_reason(None)
    assert "does not exist" in unreachable_reason(str(tmp_path / "missing"))
    assert "not reachable" in unreachable_reason(_dead_kubeconfig(tmp_path))


def test_cli_skips_cleanly_without_a_cluster(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("KUBECONFIG", _dead_kubeconfig(tmp_path))
    assert main(["e2e", "--backend", "kind"]) == 0
    assert "skipped: cluster from" in capsys.readouterr().err


def test_which_scenarios_run_on_kind(tmp_path) -> None:
    backend = KindBackend(kubeconfig=_dead_kubeconfig(tmp_path))
    reasons = {s.name: backend.skip_reason(s) for s in load_scenarios()}
    assert reasons["mig-then-vgpu"] is None and reasons["podgroup-shared-claim"] is None
    assert "local only" in reasons["vf-bandwidth"] and "local only" in reasons["tour"]
    assert "DRADeviceCompatibilityGroups" in reasons["gate-off-single-mode"]


@pytest.mark.kind
def test_every_scenario_on_kind() -> None:
    why = unreachable_reason(None)
    if why is not None:
        pytest.skip(f"kind backend: {why}")
    backend = KindBackend(kubeconfig=os.environ.get("KUBECONFIG"))
    report = run_all(load_scenarios(), lambda: backend, claim_object, skip=backend.skip_reason)
    assert report.ok, "\n".join(summarize_failures(report.scenarios))
