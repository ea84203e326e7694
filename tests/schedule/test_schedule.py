"""`fake-dra schedule` on a fleet: outcomes that follow from hardware facts, kube-scheduler's rules,
the resourceclaim controller's claims, and nothing written twice."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from driver.allocator import PlacedDevice, validate_combination
from driver.features import Features
from driver.schedule import num_feasible_nodes_to_find
from schedule.conftest import add, mig_template, pod, vf_template

A100_1G_SLOTS = 7  # NVIDIA MIG user guide: an A100-40GB holds seven 1g.5gb instances
DGX_GPUS = 8


def pods_by_node(store):
    return Counter(p["spec"].get("nodeName") for p in store.list("pods", all_namespaces=True))


def assert_consistent(store):
    """Every node's allocated devices fit its hardware (counters, groups, exclusivity), and each
    claim sits on the node of the one pod that reserves it."""
    slices = store.list("resourceslices")
    placed = defaultdict(list)
    pods = {p["metadata"]["uid"]: p for p in store.list("pods", all_namespaces=True)}
    for claim in store.list("resourceclaims", all_namespaces=True):
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            continue
        for consumer in claim["status"]["reservedFor"]:
            node = pods[consumer["uid"]]["spec"]["nodeName"]
            assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node]
        for r in allocation["devices"]["results"]:
            placed[r["pool"]].append(PlacedDevice(claim["metadata"]["name"], r["request"], r["driver"], r["pool"], r["device"]))
    for pool, devices in placed.items():
        assert validate_combination([s for s in slices if s["spec"]["pool"]["name"] == pool], devices, Features()) == []


def test_a_fleets_exact_number_of_1g5gb_slots_then_every_pod_beyond_pending(store, fleet, schedule):
    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"})
    slots = 2 * DGX_GPUS * A100_1G_SLOTS
    add(store, mig_template(), *(pod(f"p{i:03d}") for i in range(slots + 5)))
    report = schedule()
    assert len(report.scheduled) == slots and len(report.pending) == 5
    assert pods_by_node(store) == {"a100-0000": slots // 2, "a100-0001": slots // 2, None: 5}
    for outcome in report.pending:
        assert outcome.reason.startswith("0/2 nodes are available: 2 cannot allocate all claims: claim default/")
        assert "56 match the selectors, 0 usable (56 in use)" in outcome.reason
    stuck = store.get("pods", "default", "p116")
    cond = stuck["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert_consistent(store)


def test_pods_land_only_on_the_group_that_has_the_hardware(store, fleet, schedule):
    fleet({"name": "nic", "count": 3, "profile": "no-gpu"}, {"name": "gpu", "count": 1, "profile": "dgx-a100"})
    add(store, mig_template(profile="7g.40gb"), *(pod(f"p{i}") for i in range(DGX_GPUS + 1)))
    report = schedule()
    assert {o.node for o in report.scheduled} == {"gpu-0000"} and len(report.scheduled) == DGX_GPUS
    (last,) = report.pending
    assert last.reason.startswith("0/4 nodes are available: 1 cannot allocate all claims: ")
    assert ", 3 cannot allocate all claims: " in last.reason  # the full GPU node and the NIC nodes fail differently
    assert_consistent(store)


def test_vf_pods_fill_every_vf_of_the_fleet(store, fleet, schedule):
    fleet({"name": "nic", "count": 2, "profile": "no-gpu"})  # an E810 with 8 VFs each
    add(store, vf_template(), *(pod(f"v{i}", "vf") for i in range(17)))
    report = schedule()
    assert len(report.scheduled) == 16 and len(report.pending) == 1


def test_kwoks_taint_keeps_intolerant_pods_away_with_the_reason(store, fleet, schedule):
    fleet({"name": "a", "count": 3, "profile": "demo"})
    add(store, mig_template(), pod("plain", tolerate=False))
    (outcome,) = schedule().outcomes
    assert outcome.node is None
    assert outcome.reason == ("0/3 nodes are available: 3 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}. "
                              "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert store.list("resourceclaims", all_namespaces=True)[0]["metadata"]["ownerReferences"][0]["name"] == "plain"


def test_node_selector_and_affinity_pick_the_group(store, fleet, schedule):
    fleet({"name": "a", "count": 2, "profile": "demo", "labels": {"rack": "r1"}},
          {"name": "b", "count": 2, "profile": "demo", "labels": {"rack": "r2"}})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}],
         "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["b-0000"]}]}]}}}
    add(store, mig_template(), pod("sel", nodeSelector={"rack": "r1"}), pod("aff", affinity=affinity),
        pod("none", nodeSelector={"rack": "r9"}))
    by_name = {o.name: o for o in schedule().outcomes}
    assert by_name["default/sel"].node in ("a-0000", "a-0001")
    assert by_name["default/aff"].node == "b-0001"
    assert by_name["default/none"].reason == ("0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. "
                                              "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")


def test_policies_pack_spread_and_rotate(store, fleet, schedule, tmp_path):
    fleet({"name": "a", "count": 3, "profile": "dgx-a100"})
    add(store, mig_template(), *(pod(f"p{i}") for i in range(6)))
    schedule(policy="most-allocated")
    assert set(pods_by_node(store).values()) == {6} and len(pods_by_node(store)) == 1


def test_least_allocated_spreads(store, fleet, schedule):
    fleet({"name": "a", "count": 3, "profile": "dgx-a100"})
    add(store, mig_template(), *(pod(f"p{i}") for i in range(6)))
    schedule(policy="least-allocated")
    assert sorted(pods_by_node(store).values()) == [2, 2, 2]


def test_first_follows_kube_schedulers_rotating_start(store, fleet, schedule):
    fleet({"name": "a", "count": 3, "profile": "dgx-a100"})
    add(store, mig_template(), *(pod(f"p{i}") for i in range(4)))
    report = schedule(policy="first")
    assert [o.node for o in report.outcomes] == ["a-0000", "a-0001", "a-0002", "a-0000"]


@pytest.mark.parametrize("nodes, percentage, found", [
    (50, 0, 50), (99, 0, 99), (100, 0, 100), (500, 0, 230), (1000, 0, 420), (5000, 0, 500), (10000, 0, 500),
    (1000, 10, 100), (1000, 50, 500), (1000, 100, 1000), (200, 30, 100),
])
def test_num_feasible_nodes_to_find_is_kube_schedulers(nodes, percentage, found):
    assert num_feasible_nodes_to_find(nodes, percentage) == found


def test_claims_from_templates_as_the_controller_makes_them(store, fleet, schedule):
    fleet({"name": "a", "count": 1, "profile": "demo"})
    add(store, mig_template(), pod("worker"))
    schedule()
    (claim,) = store.list("resourceclaims", all_namespaces=True)
    p = store.get("pods", "default", "worker")
    assert claim["metadata"]["name"].startswith("worker-gpu-") and len(claim["metadata"]["name"]) == len("worker-gpu-") + 5
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    assert claim["metadata"]["labels"] == {"app": "bench"}
    assert claim["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "worker",
                                                     "uid": p["metadata"]["uid"], "controller": True,
                                                     "blockOwnerDeletion": True}]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "worker", "uid": p["metadata"]["uid"]}]
    assert p["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    assert p["spec"]["nodeName"] == "a-0000"
    assert [(c["type"], c["status"]) for c in p["status"]["conditions"]] == [("PodScheduled", "True")]


def test_a_second_run_writes_nothing(store, fleet, schedule):
    fleet({"name": "a", "count": 1, "profile": "demo"})
    add(store, mig_template(), *(pod(f"p{i}") for i in range(20)))
    first = schedule()
    assert first.pending
    before = store.current_resource_version()
    again = schedule()
    assert again.writes == 0 and store.current_resource_version() == before
    assert [o.reason for o in again.outcomes] == [o.reason for o in first.pending]


def test_a_claim_made_before_an_interruption_is_found_again(store, fleet, schedule):
    fleet({"name": "a", "count": 1, "profile": "demo"})
    (p,) = add(store, pod("worker"))  # no template yet: pending
    schedule()
    assert store.list("resourceclaims", all_namespaces=True) == []
    # The controller made a claim but was cut short before recording it in the pod's status.
    add(store, mig_template(), {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {
        "name": "worker-gpu-abcde", "namespace": "default",
        "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "worker", "uid": p["metadata"]["uid"],
                             "controller": True}]},
        "spec": mig_template()["spec"]["spec"]})
    (outcome,) = schedule().outcomes
    assert outcome.claims == ["worker-gpu-abcde"] and outcome.node == "a-0000"
    assert len(store.list("resourceclaims", all_namespaces=True)) == 1


def test_missing_template_or_claim_is_the_reason(store, fleet, schedule):
    fleet({"name": "a", "count": 1, "profile": "demo"})
    add(store, pod("t", "nope"), pod("c", None, claim="ghost"))
    reasons = {o.name: o.reason for o in schedule().outcomes}
    tail = " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    assert reasons == {"default/t": '0/1 nodes are available: resource claim template "nope" not found.' + tail,
                       "default/c": '0/1 nodes are available: resourceclaim "ghost" not found.' + tail}


def test_a_shared_claim_brings_its_second_pod_to_the_same_node(store, fleet, schedule):
    fleet({"name": "a", "count": 3, "profile": "dgx-a100"})
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "shared", "namespace": "default"},
              "spec": mig_template()["spec"]["spec"]}
    add(store, shared, pod("one", None, claim="shared"), pod("two", None, claim="shared"))
    report = schedule()
    assert report.outcomes[0].node == report.outcomes[1].node
    claim = store.get("resourceclaims", "default", "shared")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["one", "two"]


def test_pods_count_and_cpu_are_node_resources(store, fleet, schedule):
    fleet({"name": "a", "count": 1, "profile": "demo"})
    big = pod("big", None)
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "40"}}
    add(store, big)
    (outcome,) = schedule().outcomes
    # more than the node's whole allocatable: preemption cannot help (InsufficientResource.Unresolvable)
    assert outcome.reason == ("0/1 nodes are available: 1 Insufficient cpu. "
                              "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_every_insufficient_resource_is_named(store, fleet, schedule):
    fleet({"name": "a", "count": 2, "profile": "demo"})
    first = pod("first", None)
    first["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "20", "memory": "200Gi"}}
    second = pod("second", None)
    second["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "20", "memory": "200Gi"}}
    third = pod("third", None)
    third["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "20", "memory": "200Gi"}}
    add(store, first, second, third)
    outcomes = {o.name: o for o in schedule().outcomes}
    assert outcomes["default/third"].reason == (
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")


def test_json_lines(store, fleet, capsys):
    import json

    from driver.cli import main

    fleet({"name": "a", "count": 1, "profile": "demo"})
    add(store, mig_template(), pod("x"), pod("y", tolerate=False))
    assert main(["schedule", "--store", str(store.root), "-o", "json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(o["name"], o["node"]) for o in lines] == [("default/x", "a-0000"), ("default/y", None)]
    assert lines[0]["reason"] is None and len(lines[0]["claims"]) == 1 and "untolerated taint" in lines[1]["reason"]


def test_an_unschedulable_pod_gets_a_failed_scheduling_event_once_per_change(store, fleet, schedule):
    from driver.store.events import ObjectRef, events_for

    fleet({"name": "a", "count": 1, "profile": "demo"})
    add(store, mig_template(), pod("plain", tolerate=False))
    schedule()
    schedule()
    (event,) = events_for(store, ObjectRef.of(store.get("pods", "default", "plain")))
    assert (event["reason"], event["type"], event["count"]) == ("FailedScheduling", "Warning", 1)
    assert event["message"].startswith("0/1 nodes are available: 1 node(s) had untolerated taint")


def test_a_bound_pod_gets_kube_schedulers_scheduled_event(store, fleet, schedule):
    from driver.store.events import ObjectRef, events_for

    fleet({"name": "a", "count": 1, "profile": "demo"})
    add(store, mig_template(), pod("bound"))
    (outcome,) = schedule().outcomes
    (event,) = events_for(store, ObjectRef.of(store.get("pods", "default", "bound")))
    assert (event["reason"], event["type"]) == ("Scheduled", "Normal")
    assert event["message"] == f"Successfully assigned default/bound to {outcome.node}"


def test_two_pods_of_one_shape_each_name_their_own_claim(store, fleet, schedule):
    fleet({"name": "a", "count": 2, "profile": "demo"})
    template = mig_template()
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "no-such-class.example.com"
    add(store, template, pod("one"), pod("two"))
    outcomes = {o.name: o for o in schedule().outcomes}
    for name in ("one", "two"):
        (claim,) = outcomes[f"default/{name}"].claims
        assert f"claim default/{claim}, request gpu:" in outcomes[f"default/{name}"].reason, outcomes[f"default/{name}"].reason
    assert outcomes["default/one"].claims != outcomes["default/two"].claims


def test_show_store_sums_a_fleet_per_node_group(store, fleet, schedule, capsys):
    from driver.cli import main

    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"}, {"name": "nic", "count": 1, "profile": "no-gpu",
                                                                  "fidelity": "whole"})
    add(store, mig_template(), *(pod(f"p{i}") for i in range(10)), vf_template(), pod("net", "vf"))
    report = schedule()
    assert [o.node for o in report.outcomes if o.name == "default/net"] == ["nic-0000"]  # the start index rotated there
    assert main(["show", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["GROUP", "PROFILE", "PERSONALITY", "NODES", "DEVICES", "HELD", "MIG", "SLICES", "USED",
                              "VF", "BANDWIDTH", "USED"]
    a100 = out[2].split()
    assert a100[:4] == ["lab/a100", "dgx-a100", "fake-dra", "2"]
    # Ten 1g.5gb MIG devices (one memory slice each) of 2 x 8 GPUs x 8 slices; a100's 8 VF
    # counter sets of 200G each stay free; the whole-fidelity NIC group publishes no counters.
    assert " ".join(a100[4:]) == "10 of 512 10 of 128 0 of 3200 Gb/s"
    assert out[3].split() == ["lab/nic", "no-gpu", "fake-dra", "1", "1", "of", "8", "-", "-"]
    assert main(["show", "--store", str(store.root), "--node-name", "a100-0000"]) == 0
    assert "MIG slices" in capsys.readouterr().out


def test_a_malformed_pod_or_claim_is_its_own_reason_and_the_others_still_schedule(store, fleet, schedule):
    fleet({"name": "a", "count": 1, "profile": "demo"})
    bad_pod = pod("bad-pod")
    bad_pod["spec"]["tolerations"] = ["not an object"]
    bad_claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "odd", "namespace": "default"},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "mig.fake-dra.example.com",
                                                                               "count": -3}}]}}}
    store.create("resourceclaims", bad_claim)  # written behind `apply`'s checks
    add(store, mig_template(), bad_pod, pod("odd-user", None, claim="odd"), pod("fine"))
    by_name = {o.name: o for o in schedule().outcomes}
    assert "Pod default/bad-pod: spec.tolerations[0]: must be an object" in by_name["default/bad-pod"].reason
    assert "odd" in by_name["default/odd-user"].reason and by_name["default/odd-user"].node is None
    assert by_name["default/fine"].node == "a-0000"
