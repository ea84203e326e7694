"""The device taint eviction rule and DeviceTaintRule conditions, held to upstream's own expectations.

Expected messages are copied from kubernetes/kubernetes pkg/controller/devicetainteviction
device_taint_eviction_test.go (cases "none-pod-rule", "evict-many-pods-many-namespaces") and the
controller's `maybeUpdateRuleStatus`; eviction timing from the API's DeviceToleration.tolerationSeconds
("<time when taint was added> + <toleration seconds>", zero or negative: at once, unset: never).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from driver.allocator.eviction import pods_to_evict, rule_condition
from driver.errors import InputError
from driver.features import parse_features

T0 = "2026-01-01T00:00:00Z"


def _slice(devices=("device-1", "device-2", "device-3"), taints=None):
    return {"kind": "ResourceSlice", "metadata": {"name": "slice-1"},
            "spec": {"driver": "driver-a", "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                     "nodeName": "node-1",
                     "devices": [{"name": d, **({"taints": taints[d]} if taints and d in taints else {})} for d in devices]}}


def _claim(name, ns="default", device="device-1", tolerations=None):
    result = {"request": "r", "driver": "driver-a", "pool": "pool-1", "device": device}
    if tolerations is not None:
        result["tolerations"] = tolerations
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
            "status": {"allocation": {"devices": {"results": [result]}}}}


def _pod(name, claim, ns="default", **meta):
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, **meta},
            "spec": {"resourceClaims": [{"name": "c", "resourceClaimName": claim}]}}


def _rule(effect, selector=None, name="rule", time=T0, generation=1):
    return {"kind": "DeviceTaintRule", "metadata": {"name": name, "generation": generation},
            "spec": {"deviceSelector": selector if selector is not None else {"driver": "driver-a"},
                     "taint": {"key": "example.com/taint", "value": "tainted", "effect": effect, "timeAdded": time}}}


def test_untolerated_noexecute_rule_evicts_every_pod_using_the_claim_at_time_added():
    evictions = pods_to_evict(slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1"), _pod("p2", "c1")],
                              rules=[_rule("NoExecute")])
    assert [(e.pod, e.claims, e.reasons) for e in evictions] == [
        ("default/p1", ("default/c1",), ("DeviceTaintRule rule",)),
        ("default/p2", ("default/c1",), ("DeviceTaintRule rule",))]
    assert evictions[0].at == datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("effect", ["NoSchedule", "None"])
def test_only_noexecute_evicts(effect):
    assert pods_to_evict(slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1")], rules=[_rule(effect)]) == []


def test_toleration_seconds_delay_and_forever():
    delayed = [{"key": "example.com/taint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]
    (e,) = pods_to_evict(slices=[_slice()], claims=[_claim("c1", tolerations=delayed)], pods=[_pod("p1", "c1")],
                         rules=[_rule("NoExecute")])
    assert e.at == datetime(2026, 1, 1, 0, 1, tzinfo=timezone.utc)
    forever = [{"key": "example.com/taint", "operator": "Exists"}]
    assert pods_to_evict(slices=[_slice()], claims=[_claim("c1", tolerations=forever)], pods=[_pod("p1", "c1")],
                         rules=[_rule("NoExecute")]) == []
    negative = [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5}]
    (e,) = pods_to_evict(slices=[_slice()], claims=[_claim("c1", tolerations=negative)], pods=[_pod("p1", "c1")],
                         rules=[_rule("NoExecute")])
    assert e.at == datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_slice_taints_evict_too_and_are_named():
    taints = {"device-1": [{"key": "k", "effect": "NoExecute", "timeAdded": T0}]}
    (e,) = pods_to_evict(slices=[_slice(taints=taints)], claims=[_claim("c1")], pods=[_pod("p1", "c1")])
    assert e.reasons == ("ResourceSlice slice-1 driver-a/pool-1/device-1 taint #0",) and e.rules == ()


def test_rule_selecting_another_device_or_pod_being_deleted_evicts_nothing():
    assert pods_to_evict(slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1")],
                         rules=[_rule("NoExecute", {"device": "device-2"})]) == []
    assert pods_to_evict(slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1", deletionTimestamp=T0)],
                         rules=[_rule("NoExecute")]) == []


def test_gates_off_evict_nothing_from_rules():
    off = parse_features("DRADeviceTaintRules=false")
    assert pods_to_evict(slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1")],
                         rules=[_rule("NoExecute")], features=off) == []


def test_pod_using_a_template_claim_through_its_status():
    pod = {"metadata": {"name": "p1", "namespace": "default"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
           "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p1-gpu-abcde"}]}}
    (e,) = pods_to_evict(slices=[_slice()], claims=[_claim("p1-gpu-abcde")], pods=[pod], rules=[_rule("NoExecute")])
    assert e.pod == "default/p1"


def test_effect_none_condition_is_the_dry_run_upstream_words():
    # device_taint_eviction_test.go "none-pod-rule": 3 published devices, 1 allocated, 1 pod.
    cond = rule_condition(_rule("None"), slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1")])
    assert (cond["type"], cond["status"], cond["reason"]) == ("EvictionInProgress", "False", "NoEffect")
    assert cond["message"] == ("3 published devices selected. 1 allocated device selected. 1 pod would be evicted in "
                               "1 namespace if the effect was NoExecute. This information will not be updated again. "
                               "Recreate the DeviceTaintRule to trigger an update.")


def test_noexecute_condition_pending_then_completed():
    claims = [_claim("c1"), _claim("c2", ns="other", device="device-2")]
    pods = [_pod("p1", "c1"), _pod("p2", "c2", ns="other")]
    cond = rule_condition(_rule("NoExecute"), slices=[_slice()], claims=claims, pods=pods)
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "PodsPendingEviction", "2 pods need to be evicted in 2 different namespaces.")
    done = rule_condition(_rule("NoExecute"), slices=[_slice()], claims=claims, pods=[], evicted=2)
    assert (done["status"], done["reason"], done["message"]) == (
        "False", "Completed", "2 pods evicted since starting the controller.")
    idle = rule_condition(_rule("NoExecute"), slices=[_slice()], claims=[], pods=[])
    assert (idle["reason"], idle["message"]) == ("NotStarted", "")


def test_noschedule_condition_and_observed_generation():
    cond = rule_condition(_rule("NoSchedule", generation=3), slices=[_slice()], claims=[], pods=[])
    assert (cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "OtherEffect", "Eviction only happens for the NoExecute effect.", 3)


def test_invalid_rule_is_named():
    bad = _rule("NoExecute")
    bad["spec"]["taint"]["key"] = "not a key!"
    with pytest.raises(InputError, match=r"DeviceTaintRule rule: spec.taint.key"):
        pods_to_evict(slices=[_slice()], claims=[_claim("c1")], pods=[_pod("p1", "c1")], rules=[bad])
