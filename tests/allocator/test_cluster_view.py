"""ClusterView: kept incrementally, it gives every node exactly what a view built afresh gives."""

from __future__ import annotations

import copy
import threading

import pytest

from driver.allocator import ClusterView, cluster_view, split_objects
from driver.errors import AllocationError, InputError
from driver.features import Features, parse_features

from .casefile import expand_claim, expand_slice, load_fixture

MIG = "mig.fake-dra.example.com"


def mig_claim(name: str, *selectors: str) -> dict:
    return expand_claim({"name": name, "requests": [{"name": "m", "class": MIG, "selectors": list(selectors)}]}, [])


def allocated(claim: dict, allocation: dict) -> dict:
    return {**claim, "status": {"allocation": allocation}}


def state(view: ClusterView, node: str) -> tuple:
    """What a node's allocator starts from: counters used, groups, in use, shares."""
    a = view.allocator(node)
    used = {k: v for k, v in a.ledger.used.items() if any(v.values())}
    return used, dict(a.state.groups), set(a.state.in_use), set(a.state.shared), dict(a.state.capacity_used)


def test_claims_added_and_removed_one_by_one_equal_a_fresh_view():
    objs = split_objects(load_fixture("a100-2gpu"))
    view = cluster_view(objs)
    held: list[dict] = []
    for i in range(12):
        claim = mig_claim(f"c{i}")
        (allocation,) = view.allocator("node-1").allocate([claim], commit=False)
        held.append(allocated(claim, allocation))
        view.set_claim(held[-1])
        if i % 3 == 2:  # release one now and then, as a pod deletion would
            gone = held.pop(0)
            view.remove_claim(f"{gone['metadata']['namespace']}/{gone['metadata']['name']}")
        again = ClusterView([*objs.slices, *objs.classes, *held])
        assert state(view, "node-1") == state(again, "node-1")
        probe = mig_claim("probe")
        assert view.allocator("node-1").allocate([probe], commit=False) == \
            again.allocator("node-1").allocate([probe], commit=False)


def test_a_filter_commits_nothing_and_an_allocation_through_one_node_changes_another():
    # One pool on two nodes drawing from one link counter (10): a 6 fits on either node until one
    # is allocated; then the other node's port no longer fits (4 left).
    slices = [expand_slice(s) for s in (
        {"name": "counters", "pool": "fabric", "count": 3, "allNodes": True, "counters": {"link": {"bandwidth": 10}}},
        {"name": "n1", "pool": "fabric", "count": 3, "node": "node-1", "devices": [{"name": "port-1", "consumes": {"link": {"bandwidth": 6}}}]},
        {"name": "n2", "pool": "fabric", "count": 3, "node": "node-2", "devices": [{"name": "port-2", "consumes": {"link": {"bandwidth": 6}}}]},
    )]
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "ports"}, "spec": {}}
    view = ClusterView([*slices, cls])
    pod = expand_claim({"name": "p", "requests": [{"name": "r", "class": "ports"}]}, [])
    before = view.filter([pod])
    assert before.feasible == ["node-1", "node-2"]
    assert [r["device"] for r in before.results["node-1"][0]["devices"]["results"]] == ["port-1"]
    assert view.filter([pod]).feasible == ["node-1", "node-2"]  # filtering committed nothing
    view.set_claim(allocated(pod, before.results["node-1"][0]))
    after = view.filter([expand_claim({"name": "q", "requests": [{"name": "r", "class": "ports"}]}, [])])
    assert after.feasible == []
    assert "counters exhausted on counter set link (port-2: bandwidth needs 6, 4 left)" in after.reasons["node-2"]
    assert "in use" in after.reasons["node-1"]
    (usage,) = view.usage(pool="fabric").pools.values()  # one pool spanning two nodes
    assert usage.node_names == {"node-1", "node-2"} and usage.node is None
    assert {cs: {n: (c.used, c.left) for n, c in counters.items()} for cs, counters in usage.counters().items()} == \
        {"link": {"bandwidth": (6, 4)}}
    assert [h.claim for h in usage.holds["port-1"]] == ["default/p"]
    view.remove_claim("default/p")
    assert view.filter([pod]).feasible == ["node-1", "node-2"]
    assert view.usage(pool="fabric").pools[usage.driver, "fabric"].holds == {}


def test_a_slice_is_parsed_again_only_when_it_changed_and_nodes_see_the_change():
    objs = split_objects(load_fixture("a100-2gpu"))
    view = cluster_view(objs)
    assert view.allocator("node-1").allocate([mig_claim("a")], commit=False)
    parsed = view.slices.parsed
    view.replace_slices(copy.deepcopy(objs.slices))  # equal content, new objects: nothing to parse
    assert view.slices.parsed == parsed
    changed = copy.deepcopy(objs.slices)
    for s in changed:  # the driver republishes without gpu-0's MIG devices
        s["spec"]["pool"]["generation"] += 1
        if s["spec"].get("devices"):
            s["spec"]["devices"] = [d for d in s["spec"]["devices"] if not d["name"].startswith("gpu-0-mig")]
    view.replace_slices(changed)
    assert view.slices.parsed == parsed + len(changed)
    (allocation,) = view.allocator("node-1").allocate([mig_claim("b")], commit=False)
    assert allocation["devices"]["results"][0]["device"] == "gpu-1-mig-1g5gb-0"
    view.delete("ResourceSlice", changed[-1]["metadata"]["name"])
    with pytest.raises(AllocationError, match="incomplete"):
        view.allocator("node-1").allocate([mig_claim("c")])


def test_node_labels_decide_node_selector_slices():
    sl = expand_slice({"name": "s", "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "gpu", "operator": "In", "values": ["yes"]}]}]}, "devices": [{"name": "d"}]})
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any"}, "spec": {}}
    view = ClusterView([sl, cls, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"gpu": "yes"}}},
                        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}])
    pod = expand_claim({"name": "p", "requests": [{"name": "r", "class": "any"}]}, [])
    assert view.nodes() == ["n1", "n2"]
    assert view.filter([pod]).feasible == ["n1"]
    view.upsert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "labels": {"gpu": "yes"}}})
    assert view.filter([pod]).feasible == ["n1", "n2"]


def test_objects_with_repeated_names_all_count():
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any"}, "spec": {}}
    a = expand_slice({"name": "same", "driver": "a", "devices": [{"name": "d"}]})
    b = expand_slice({"name": "same", "driver": "b", "devices": [{"name": "d"}]})
    held = [expand_claim({"name": "x", "requests": [{"name": "r", "class": "any"}], "allocated": [
        {"driver": d, "pool": "pool-1", "device": "d"}]}, []) for d in ("a", "b")]
    view = ClusterView([cls, a, b])
    view.replace_claims(held)  # two claims named default/x: both hold their device
    pod = expand_claim({"name": "p", "requests": [{"name": "r", "class": "any"}]}, [])
    with pytest.raises(AllocationError, match="2 in use"):
        view.allocator("node-1").allocate([pod])


def test_filters_from_many_threads_agree_with_one():
    objs = split_objects(load_fixture("a100-2gpu"))
    view = cluster_view(objs)
    pods = [[mig_claim(f"t{i}", f"device.attributes['fake-dra.example.com'].profile == '{p}'")]
            for i, p in enumerate(["1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"] * 4)]
    expected = [view.filter(pod, explain=False).results for pod in pods]
    view = cluster_view(objs)  # cold caches: the threads fill them concurrently
    got: list = [None] * len(pods)

    def run(i: int) -> None:
        got[i] = view.filter(pods[i], explain=False).results

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(pods))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_bad_objects_are_input_errors_naming_them():
    with pytest.raises(InputError, match=r"ResourceSlice s: spec.pool.name: required"):
        ClusterView([{"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {}}}])
    with pytest.raises(InputError, match="not a kind the allocator uses"):
        ClusterView().upsert({"kind": "Pod", "metadata": {"name": "p"}})
    with pytest.raises(InputError, match=r"status.allocation.devices.results\[0\].device: required"):
        ClusterView().set_claim({"metadata": {"name": "c"}, "status": {"allocation": {"devices": {"results": [
            {"driver": "d", "pool": "p"}]}}}})


def test_an_unset_kep5941_gate_follows_the_slices_and_an_explicit_one_wins():
    objs = load_fixture("kep5941-text")
    claim = expand_claim({"name": "c", "requests": [{"name": "r", "class": "sriov-vfs", "capacity": {
        "resource-driver.example.com/bandwidth": "10G"}}]}, [])
    assert ClusterView(objs).uses_kep5941()
    assert ClusterView(objs).filter([claim]).feasible == ["my-node"]
    off = ClusterView(objs, features=parse_features("DRASharedConsumableCapacity=false"))
    assert off.filter([claim]).feasible == []
    assert not ClusterView(load_fixture("a100-2gpu"), features=Features()).uses_kep5941()
