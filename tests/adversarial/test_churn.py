"""The churn soak (adversarial.churn), a small seeded instance: documented commands only, `fake-dra
cluster` and two `fake-dra schedule` loops running throughout, hostile rows planted mid-churn; once
settled nothing is double-booked, stale or lost, and no command crashed. `hack/soak.sh --mode churn`
runs the same for longer."""

from __future__ import annotations

from adversarial.churn import ChurnConfig, run_churn
from adversarial.churn_figures import classify
from adversarial.churn_manifests import claim_template, solo_pod
from adversarial.invariants import shortfalls, violations
from schedule.conftest import add, fleet, store  # noqa: F401 - fixtures


def test_a_seeded_churn_with_concurrent_schedulers_and_hostile_rows_settles_with_nothing_broken(tmp_path):
    figures = run_churn(ChurnConfig(seed=2026, steps=6, max_nodes=2, row_checks=2), tmp_path)
    report = figures.report()
    assert figures.ok, report
    assert figures.steps == 6 and figures.schedule_runs >= 2 and figures.hostile_rows >= 6, report
    assert figures.exits[70] == 0 and figures.settled["nodes"] >= 1, report
    assert "double-booked: 0\nstale: 0\nlost: 0" in report


def test_the_counts_see_a_double_booking_a_stale_reservation_and_a_lost_workload(store, fleet):
    """The checks the soak counts with can fail: each breakage planted by hand is counted where it belongs."""
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, claim_template("mig-1g", "1g.5gb"))
    device = {"request": "gpu", "driver": "fake-dra.example.com", "pool": "a100-0000", "device": "gpu-0-mig-1g5gb-0"}
    for name in ("a", "b"):
        store.create("resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "mig.fake-dra.example.com"}}]}},
            "status": {"allocation": {"devices": {"results": [device]}},
                       "reservedFor": [{"resource": "pods", "name": "gone", "uid": "u-gone"}] if name == "b" else []}})
    store.create("replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
                 "template": {"metadata": {"labels": {"app": "x"}}, "spec": solo_pod("t", template="mig-1g")["spec"]}}})
    double, stale, lost = classify(violations(store))
    assert len(double) == 1 and "gpu-0-mig-1g5gb-0" in double[0]
    assert any("reserves pod gone" in s for s in stale)
    assert lost == [] and shortfalls(store) == ["replicaset rs wants 2 pods and has 0"]
