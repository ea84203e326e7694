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


class _Cluster:
    """The two calls multi_node_skip_reason makes, answered from a list of nodes."""

    def __init__(self, profiles: list[str], kwok: bool) -> None:
        self.nodes = [{"metadata": {"name": f"w{i}", "labels": {"fake-dra.example.com/profile": p}}}
                      for i, p in enumerate(profiles)]
        self.kwok = kwok


def test_multi_node_scenarios_on_kind_need_kwok_and_workers_of_their_profiles(tmp_path, monkeypatch) -> None:
    from driver.e2e import kindmulti

    scenarios = {s.name: s for s in load_scenarios() if s.nodes}
    assert {"fleet-one-group", "fleet-pack-then-pending", "fleet-node-deleted"} <= set(scenarios)
    cluster = _Cluster(["demo", "dgx-a100"], kwok=False)
    monkeypatch.setattr(kindmulti.k, "get_or_none", lambda api, kind, name, ns=None: {} if cluster.kwok else None)
    monkeypatch.setattr(kindmulti.k, "list_items", lambda api, kind, *a, **kw: cluster.nodes)
    why = kindmulti.multi_node_skip_reason(None, scenarios["fleet-one-group"])
    assert why == "its kubelet-less nodes need kwok in the cluster (docs/fleet.md: kind + kwok)"
    cluster.kwok = True
    assert kindmulti.multi_node_skip_reason(None, scenarios["fleet-one-group"]) is None
    assert kindmulti.multi_node_skip_reason(None, scenarios["fleet-node-deleted"]) is None
    cluster.nodes = cluster.nodes[:1]  # no dgx-a100 worker
    assert "needs 1 kind worker(s) labelled fake-dra.example.com/profile=dgx-a100, the cluster has 0" in \
        kindmulti.multi_node_skip_reason(None, scenarios["fleet-pack-then-pending"])


def test_a_dead_cluster_is_a_reason_not_a_crash(tmp_path) -> None:
    backend = KindBackend(kubeconfig=_dead_kubeconfig(tmp_path))
    reason = backend.skip_reason(next(s for s in load_scenarios() if s.name == "fleet-one-group"))
    assert reason.startswith("cannot see the cluster's nodes")
