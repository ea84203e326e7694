"""`schedule` and kube-scheduler's runtime cost limit: a selector that could cost more than the
limit on a node's devices leaves its pod pending with cel-go's words, without being evaluated."""

from __future__ import annotations

from driver.celexpr import COST_LIMIT_EXCEEDED
from schedule.conftest import DRIVER, add, pod

ATTRS = f'device.attributes["{DRIVER}"]'


def expensive_template(depth: int) -> dict:
    expression = "true"
    for i in reversed(range(depth)):
        expression = f"{ATTRS}.all(v{i}, {expression})"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "nested", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "mig.fake-dra.example.com", "selectors": [{"cel": {"expression": expression}}]}}]}}}}


def test_a_selector_over_the_runtime_limit_leaves_the_pod_pending_with_upstreams_words(store, fleet, schedule):
    # Planted in the store as an object written before the limit existed would be: no admission.
    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"})
    add(store, expensive_template(7), pod("p", "nested"), pod("q", "nested"))
    report = schedule()
    assert not report.scheduled and len(report.pending) == 2
    for outcome in report.pending:
        assert f"CEL runtime error: {COST_LIMIT_EXCEEDED}" in outcome.reason
        assert "selector #0 on device" in outcome.reason


def test_a_nested_selector_within_the_limit_schedules(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, expensive_template(2), pod("p", "nested"))
    (outcome,) = schedule().outcomes
    assert outcome.node == "a100-0000", outcome.reason
