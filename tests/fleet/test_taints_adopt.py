"""Per-group taints (kwok's by default) and Nodes made by others adopted by a label selector and a
label-to-profile map (Karpenter's and Cluster Autoscaler's kwok providers make Nodes by instance type)."""

from __future__ import annotations

import pytest

from driver.errors import InputError
from driver.fleet.apply import delete_fleet
from driver.fleet.loop import FleetLoop
from driver.fleet.nodes import ADOPTED_ANNOTATION
from driver.fleet.spec import parse_fleet
from driver.features import Features
from fleet.conftest import DRIVER, fleet_doc, group

KARPENTER = {"name": "karpenter", "selector": {"matchLabels": {"karpenter.sh/nodepool": "gpu"}},
             "profileLabel": "node.kubernetes.io/instance-type", "profiles": {"p4d.24xlarge": "dgx-a100"}}


def _with_adopt(doc, *rules):
    doc["spec"]["adopt"] = list(rules)
    return doc


def _karpenter_node(store, name, instance="p4d.24xlarge", pool="gpu"):
    return store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": instance}}})


def _slices(store, node):
    return store.keys("resourceslices", index={"node": node})


def test_kwoks_taint_is_the_default_and_a_group_may_set_its_own(store, apply):
    apply(fleet_doc(group("a", 1), group("b", 1, taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
                    group("c", 1, taints=[])))
    assert store.get("nodes", None, "a-0000")["spec"]["taints"] == [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]
    assert store.get("nodes", None, "b-0000")["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert "taints" not in store.get("nodes", None, "c-0000")["spec"]


def test_a_dropped_taint_goes_and_taints_others_set_stay(store, apply):
    apply(fleet_doc(group("a", 1, taints=[{"key": "x", "effect": "NoExecute"}])))
    node = store.get("nodes", None, "a-0000")
    node["spec"]["taints"].append({"key": "someone.else/taint", "effect": "NoSchedule"})
    store.update("nodes", node)
    apply(fleet_doc(group("a", 1)))
    keys = sorted(t["key"] for t in store.get("nodes", None, "a-0000")["spec"]["taints"])
    assert keys == ["kwok.x-k8s.io/node", "someone.else/taint"]


@pytest.mark.parametrize(("taints", "message"), [
    ([{"key": "x", "effect": "Sometimes"}], "taints[0].effect: expected one of NoSchedule, PreferNoSchedule, NoExecute"),
    ([{"key": "bad key", "effect": "NoSchedule"}], "taints[0].key: 'bad key' is not a qualified name"),
    ([{"key": "x", "effect": "NoSchedule"}, {"key": "x", "effect": "NoSchedule"}], "taints[1]: taint x:NoSchedule is given twice"),
    ([{"key": "x", "effect": "NoSchedule", "operator": "Exists"}], "taints[0].operator: unknown field"),
    ("kwok", "taints: must be a list"),
])
def test_bad_taints_name_their_path(taints, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_fleet(fleet_doc(group("a", 1, taints=taints)), "lab.yaml")


@pytest.mark.parametrize(("rule", "message"), [
    ({**KARPENTER, "selector": {}}, "spec.adopt[0].selector: selects every Node"),
    ({**KARPENTER, "profiles": {"p4d.24xlarge": "dgx-a10"}}, "spec.adopt[0].profiles.p4d.24xlarge: unknown profile 'dgx-a10'"),
    ({**KARPENTER, "profileLabel": None}, "spec.adopt[0].profileLabel: required"),
    ({**KARPENTER, "selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
     "spec.adopt[0].selector.matchExpressions[0].operator: expected one of In, NotIn, Exists, DoesNotExist"),
    ({**KARPENTER, "selectr": {}}, "spec.adopt[0].selectr: unknown field; did you mean 'selector'?"),
])
def test_bad_adopt_rules_name_their_path(rule, message):
    with pytest.raises(InputError) as info:
        parse_fleet(_with_adopt(fleet_doc(), rule), "lab.yaml")
    assert message in str(info.value)


def test_adopted_nodes_get_their_profiles_slices_owned_by_them_and_nothing_else_changes(store, apply):
    node = _karpenter_node(store, "ip-10-0-0-1")
    _karpenter_node(store, "ip-10-0-0-2", instance="m5.large")  # no profile for it
    _karpenter_node(store, "ip-10-0-0-3", pool="cpu")  # not selected
    stats = apply(_with_adopt(fleet_doc(), KARPENTER))
    assert stats.adopted == ["ip-10-0-0-1"]
    slices = store.list("resourceslices", index={"node": "ip-10-0-0-1"})
    assert len(slices) == 6 and all(s["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"] for s in slices)
    assert _slices(store, "ip-10-0-0-2") == [] and _slices(store, "ip-10-0-0-3") == []
    adopted = store.get("nodes", None, "ip-10-0-0-1")
    assert adopted["metadata"]["annotations"][ADOPTED_ANNOTATION] == "lab"
    assert adopted["metadata"]["labels"] == node["metadata"]["labels"] and "taints" not in (adopted.get("spec") or {})
    assert apply(_with_adopt(fleet_doc(), KARPENTER)).writes == 0  # unchanged: nothing written


def test_a_node_that_stops_matching_loses_its_slices_and_delete_releases_the_rest(store, apply, target):
    _karpenter_node(store, "n1")
    _karpenter_node(store, "n2")
    apply(_with_adopt(fleet_doc(), KARPENTER))
    n1 = store.get("nodes", None, "n1")
    n1["metadata"]["labels"]["karpenter.sh/nodepool"] = "other"
    store.update("nodes", n1)
    apply(_with_adopt(fleet_doc(), KARPENTER))
    assert _slices(store, "n1") == [] and ADOPTED_ANNOTATION not in store.get("nodes", None, "n1")["metadata"]["annotations"]
    assert _slices(store, "n2")
    delete_fleet(target, "lab", driver_name=DRIVER)
    assert _slices(store, "n2") == [] and store.exists("nodes", None, "n2")  # the Node is not the fleet's


def test_fleet_run_drops_the_slices_of_an_adopted_node_someone_deleted(store, target):
    _karpenter_node(store, "n1")
    loop = FleetLoop(target, lambda: parse_fleet(_with_adopt(fleet_doc(), KARPENTER)), driver_name=DRIVER, features=Features())
    try:
        loop.run_once()
        assert _slices(store, "n1")
        store.delete("nodes", None, "n1")
        loop.run_once()
        assert _slices(store, "n1") == []
        _karpenter_node(store, "n1")  # the provider makes it again: served again
        loop.run_once()
        assert _slices(store, "n1")
    finally:
        loop.close()
