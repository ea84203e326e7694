"""DeviceTaintRules and ResourcePoolStatusRequests through the store and `schedule`.

Rules: kube-scheduler reads slices through the device-taint tracker, so a rule's NoSchedule /
NoExecute taint keeps untolerating claims off the devices it selects (resourceslice/tracker
applyPatches); a pool status request is answered once (k8s.io/api resource/v1alpha3
ResourcePoolStatusRequest) and is then immutable.
"""

from __future__ import annotations

import pytest

from driver.errors import InputError
from driver.schedule.poolstatus import answer_pending
from driver.store.apply import commit, plan

from .conftest import DRIVER, add, mig_template, pod


def _apply(store, *docs):
    with store.locked():
        return commit(store, plan(store, [("test.yaml", i, d) for i, d in enumerate(docs, start=1)]))


def rule(name, selector, effect="NoSchedule"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": {"key": "example.com/down", "value": "yes", "effect": effect}}}


def test_a_rule_tainting_a_whole_node_pool_sends_pods_to_the_other_node(store, fleet, schedule):
    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"})
    _apply(store, rule("a100-0000-down", {"driver": DRIVER, "pool": "a100-0000"}))
    add(store, mig_template(), *(pod(f"p{i}") for i in range(3)))
    report = schedule()
    assert len(report.scheduled) == 3
    assert {store.get("pods", "default", f"p{i}")["spec"]["nodeName"] for i in range(3)} == {"a100-0001"}


def test_a_rule_on_every_device_leaves_pods_pending_naming_the_rule(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    _apply(store, rule("all-down", {}, effect="NoExecute"))
    add(store, mig_template(), pod("p0"))
    report = schedule()
    (outcome,) = report.pending
    assert "tainted without a matching toleration" in outcome.reason


def test_a_tolerating_claim_template_still_schedules(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    _apply(store, rule("all-down", {}))
    template = mig_template()
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "example.com/down", "operator": "Exists"}]
    add(store, template, pod("p0"))
    assert len(schedule().scheduled) == 1


def test_rule_time_added_is_set_and_kept_until_the_effect_changes(store):
    (created,) = _apply(store, rule("r", {"driver": DRIVER}))
    first = created.obj["spec"]["taint"]["timeAdded"]
    assert first
    (same,) = _apply(store, rule("r", {"driver": DRIVER}))
    assert same.obj["spec"]["taint"]["timeAdded"] == first
    changed = rule("r", {"driver": DRIVER}, effect="NoExecute")
    changed["spec"]["taint"]["timeAdded"] = first
    with store.locked():
        (p,) = plan(store, [("t.yaml", 1, changed)], clock=lambda: "2099-01-01T00:00:00Z")
    assert p.obj["spec"]["taint"]["timeAdded"] == "2099-01-01T00:00:00Z"


def test_invalid_rule_is_refused_with_its_field(store):
    bad = rule("r", {"pool": "Not_A_Pool"})
    with pytest.raises(InputError, match=r"DeviceTaintRule r\): DeviceTaintRule r: spec.deviceSelector.pool"):
        _apply(store, bad)
    assert store.list("devicetaintrules") == []


def request(name, **spec):
    return {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest", "metadata": {"name": name},
            "spec": {"driver": DRIVER, **spec}}


def test_pool_status_request_is_answered_once_from_usage(store, fleet, schedule):
    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"})
    _apply(store, request("all"), request("one", poolName="a100-0001", limit=1),
           rule("gpu-down", {"driver": DRIVER, "pool": "a100-0001", "device": "gpu-0"}))
    add(store, mig_template(), pod("p0"))
    schedule()
    answered = {r["metadata"]["name"]: r for r in answer_pending(store)}
    assert set(answered) == {"all", "one"}
    pools = answered["all"]["status"]["pools"]
    assert answered["all"]["status"]["poolCount"] == 2 and [p["poolName"] for p in pools] == ["a100-0000", "a100-0001"]
    by_pool = {p["poolName"]: p for p in pools}
    bound = store.get("pods", "default", "p0")["spec"]["nodeName"]
    assert by_pool[bound]["allocatedDevices"] == 1
    other = by_pool["a100-0001"]
    assert other["unavailableDevices"] == 1
    for p in pools:
        assert p["availableDevices"] == p["totalDevices"] - p["allocatedDevices"] - p["unavailableDevices"]
    assert answered["all"]["status"]["conditions"][0]["type"] == "Complete"
    assert answered["one"]["status"]["poolCount"] == 1
    assert answer_pending(store) == []  # complete: never answered again
    done = store.get("resourcepoolstatusrequests", None, "all")
    done["spec"]["limit"] = 5
    done["metadata"].pop("resourceVersion")
    with pytest.raises(InputError, match="the request is complete"):
        _apply(store, done)


@pytest.mark.parametrize("spec, field", [({"limit": 0}, "spec.limit"), ({"poolName": "a//b"}, "spec.poolName"),
                                         ({"defaultPartitionTypeAttribute": "profile"}, "defaultPartitionTypeAttribute")])
def test_invalid_pool_status_request_names_the_field(store, spec, field):
    with pytest.raises(InputError, match=field):
        _apply(store, request("bad", **spec))


def test_pod_group_is_stored_and_checked(store):
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                      "resourceClaims": [{"name": "shared", "resourceClaimTemplateName": "t"}]}}
    (applied,) = _apply(store, group)
    assert applied.action == "created" and store.get("podgroups", "default", "pg")["spec"]["resourceClaims"]
    both = {**group, "metadata": {"name": "pg2", "namespace": "default"},
            "spec": {**group["spec"], "resourceClaims": [{"name": "x", "resourceClaimName": "a", "resourceClaimTemplateName": "t"}]}}
    with pytest.raises(InputError, match=r"spec.resourceClaims\[0\]: must specify exactly one"):
        _apply(store, both)


def test_derived_attributes_dropped_when_the_apiserver_gate_is_off(store):
    from driver.features import parse_features

    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                 "deviceClassName": "gpu.fake-dra.example.com",
                 "derivedAttributes": [{"name": "derived/numa", "expression": "1"}]}}],
                 "constraints": [{"matchAttribute": "derived/numa"}]}}}
    with store.locked():
        (off,) = plan(store, [("c.yaml", 1, claim)], features=parse_features("DRADerivedAttributes=false"))
        (on,) = plan(store, [("c.yaml", 1, claim)])
    assert "derivedAttributes" not in off.obj["spec"]["devices"]["requests"][0]["exactly"]
    assert on.obj["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"][0]["name"] == "derived/numa"


def _group(name="train", template="mig-1g"):
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"basic": {}},
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}}


def _group_pod(name, group="train"):
    p = pod(name)
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def test_podgroup_template_claim_is_made_once_and_shared_by_the_group(store, fleet, schedule):
    from driver.features import parse_features

    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"})
    _apply(store, _group())
    add(store, mig_template(), *(_group_pod(f"w{i}") for i in range(3)), pod("solo"))
    report = schedule(features=parse_features("DRAWorkloadResourceClaims=true"))
    assert len(report.scheduled) == 4
    claims = store.list("resourceclaims", all_namespaces=True)
    group_claims = [c for c in claims if c["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"]
    assert len(claims) == 2 and len(group_claims) == 1
    (shared,) = group_claims
    assert shared["metadata"]["name"].startswith("train-gpu-")
    assert [r["resource"] for r in shared["status"]["reservedFor"]] == ["podgroups"]
    group = store.get("podgroups", "default", "train")
    assert group["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": shared["metadata"]["name"]}]
    nodes = {store.get("pods", "default", f"w{i}")["spec"]["nodeName"] for i in range(3)}
    assert len(nodes) == 1  # the shared allocation pins the group to its node


def test_podgroup_claims_need_the_gate(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    _apply(store, _group())
    add(store, mig_template(), *(_group_pod(f"w{i}") for i in range(2)))
    assert len(schedule().scheduled) == 2  # DRAWorkloadResourceClaims is off by default in 1.37
    assert len(store.list("resourceclaims", all_namespaces=True)) == 2


def test_apply_allocate_honours_taint_rules(store, fleet, tmp_path, capsys):
    import yaml as _yaml

    from driver.cli import main

    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    _apply(store, rule("down", {"driver": DRIVER}))
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
             "spec": mig_template()["spec"]["spec"]}
    (tmp_path / "c.yaml").write_text(_yaml.safe_dump(claim))
    assert main(["apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--node-name", "a100-0000",
                 "--store", str(store.root)]) == 1
    assert "DeviceTaintRule down" in capsys.readouterr().err
    assert store.list("resourceclaims", all_namespaces=True) == []
