"""The device taint eviction controller against upstream's rules (kubernetes/kubernetes
pkg/controller/devicetainteviction/device_taint_eviction.go: addConditionAndDeletePod,
emitPodDeletionEvent, maybeUpdateRuleStatus), over the store and `fake-dra cluster`'s runner."""

from __future__ import annotations

from adversarial.invariants import violations
from driver.errors import NotFoundError
from driver.store.apply import commit, plan
from schedule.conftest import DRIVER, add, mig_template, pod

A100 = {"name": "a100", "count": 2, "profile": "dgx-a100"}


def _apply(store, *docs):
    with store.locked():
        return commit(store, plan(store, [("rule.yaml", i, d) for i, d in enumerate(docs, start=1)]))


def rule(name, pool, effect="NoExecute"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": pool},
                     "taint": {"key": "example.com/gpu-down", "value": "xid79", "effect": effect}}}


def _condition(store, name):
    status = store.get("devicetaintrules", None, name).get("status") or {}
    (cond,) = [c for c in status.get("conditions") or () if c["type"] == "EvictionInProgress"]
    return cond


def _node_of(store, name):
    return store.get("pods", "default", name)["spec"].get("nodeName")


def test_a_noexecute_rule_evicts_the_pod_on_the_tainted_pool_and_says_so(store, fleet, settle):
    fleet(A100)
    add(store, mig_template(), pod("victim"))
    settle()
    node = _node_of(store, "victim")
    _apply(store, rule("gpu-down", node))
    settle()
    try:
        gone = store.get("pods", "default", "victim")
    except NotFoundError:
        gone = None
    assert gone is None, "the evicted pod's deletion completes on its kwok node"
    events = [e for e in store.list("events", "default") if e.get("reason") == "DeviceTaintManagerEviction"]
    assert [(e["involvedObject"]["name"], e["message"], e["type"]) for e in events] == [
        ("victim", "Marking for deletion", "Normal")]
    cond = _condition(store, "gpu-down")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "Completed", "1 pod evicted since starting the controller.")
    assert violations(store) == []


def test_a_pod_tolerating_the_taint_stays_and_the_rule_has_not_started(store, fleet, settle):
    fleet(A100)
    template = mig_template()
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "example.com/gpu-down", "operator": "Exists", "effect": "NoExecute"}]
    add(store, template, pod("stays"))
    settle()
    node = _node_of(store, "stays")
    _apply(store, rule("gpu-down", node))
    settle()
    assert _node_of(store, "stays") == node and not store.get("pods", "default", "stays")["metadata"].get(
        "deletionTimestamp")
    cond = _condition(store, "gpu-down")
    assert (cond["status"], cond["reason"]) == ("False", "NotStarted")


def test_a_deployments_pod_is_evicted_and_replaced_on_the_untainted_node(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    template = pod("unused")["spec"]
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}}, "spec": template}}}
    _apply(store, deployment)
    settle()
    (first,) = store.list("pods", "default")
    tainted = first["spec"]["nodeName"]
    _apply(store, rule("gpu-down", tainted))
    settle()
    (second,) = store.list("pods", "default")
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert second["spec"]["nodeName"] not in (None, tainted), "NoExecute keeps the scheduler off the tainted pool"
    assert violations(store) == []


def test_a_dry_run_rule_counts_what_it_would_evict_and_evicts_nothing(store, fleet, settle):
    fleet(A100)
    add(store, mig_template(), pod("p"))
    settle()
    node = _node_of(store, "p")
    _apply(store, rule("what-if", node, effect="None"))
    settle()
    assert _node_of(store, "p") == node
    published = sum(len(s["spec"].get("devices") or ()) for s in store.find("resourceslices", "node", node))
    cond = _condition(store, "what-if")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "NoEffect", (
        f"{published} published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 "
        "namespace if the effect was NoExecute. This information will not be updated again. Recreate the "
        "DeviceTaintRule to trigger an update."))


def test_a_taint_the_slice_itself_publishes_evicts_too(store, fleet, settle):
    # The driver taints the device in its ResourceSlice (a health event); the store indexes the
    # slice by its taint's effect, so the controller finds it without reading every slice.
    fleet(A100)
    add(store, mig_template(), pod("victim"))
    settle()
    (claim,) = store.list("resourceclaims", "default")
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    (owner,) = [s for s in store.find("resourceslices", "pool", f"{DRIVER}/{result['pool']}")
                if any(d["name"] == result["device"] for d in s["spec"].get("devices") or ())]
    for device in owner["spec"]["devices"]:
        if device["name"] == result["device"]:
            device["taints"] = [{"key": "example.com/xid", "value": "79", "effect": "NoExecute"}]
    store.update("resourceslices", owner)
    assert [s["metadata"]["name"] for s in store.find("resourceslices", "taint", "NoExecute")] == [owner["metadata"]["name"]]
    settle()
    assert [p["metadata"]["name"] for p in store.list("pods", "default")] == []
    assert violations(store) == []
