"""A fleet larger than the slices `schedule` keeps parsed: nodes read when tried, forgotten, read
again, answers worked out ahead (driver/schedule/dra.py) give exactly what keeping every node
would give."""

from __future__ import annotations

import re
import shutil

from driver.features import Features
from driver.schedule import Scheduler
from driver.store import ObjectStore
from schedule.conftest import add, mig_template, pod, vf_template


def _twin(store: ObjectStore, tmp_path) -> ObjectStore:
    store.close()  # the last connection of this thread: the WAL is folded into the database
    shutil.copytree(store.root, tmp_path / "twin")
    return ObjectStore(tmp_path / "twin")


def _placements(store: ObjectStore) -> dict[str, tuple[str, list[str]]]:
    claims = {c["metadata"]["name"]: c for c in store.list("resourceclaims", all_namespaces=True)}
    out = {}
    for p in store.list("pods", all_namespaces=True):
        devices = []
        for s in (p.get("status") or {}).get("resourceClaimStatuses") or []:
            allocation = (claims[s["resourceClaimName"]].get("status") or {}).get("allocation") or {}
            devices += [f"{r['pool']}/{r['device']}" for r in (allocation.get("devices") or {}).get("results") or []]
        out[p["metadata"]["name"]] = (p["spec"].get("nodeName"), devices)
    return out


def _outcomes(report) -> list[tuple]:
    """Each pod's node and reason, the random part of claim names left out."""
    return [(o.name, o.node, re.sub(r"-gpu-[bcdfghjklmnpqrstvwxz2456789]{5}", "-gpu-*", o.reason or "")) for o in report.outcomes]


def test_keeping_two_nodes_parsed_places_every_pod_as_keeping_all(store, fleet, tmp_path):
    fleet({"name": "gpu", "count": 4, "profile": "dgx-a100"}, {"name": "nic", "count": 2, "profile": "no-gpu"})
    add(store, mig_template(), vf_template(), mig_template("mig-3g", "3g.20gb"),
        *(pod(f"m{i:03d}") for i in range(30)), *(pod(f"v{i:03d}", "vf") for i in range(12)),
        *(pod(f"g{i:03d}", "mig-3g") for i in range(80)))
    twin = _twin(store, tmp_path)
    few = Scheduler(store, features=Features(), max_nodes=2).run()
    many = Scheduler(twin, features=Features()).run()
    assert few.node_reads > 6  # nodes were forgotten and read again
    assert _outcomes(few) == _outcomes(many)
    assert _placements(store) == _placements(twin)
    assert few.pending and all(o.reason.startswith("0/6 nodes are available") for o in few.pending)  # crowded


def test_a_pod_sharing_an_allocated_claim_keeps_the_rotation_a_full_search_gives(store, fleet):
    """Pod b shares pod a's claim: only a's node is tried, yet the next pod starts where a search
    of every node would have left off (kube-scheduler's nextStartNodeIndex)."""
    fleet({"name": "a", "count": 3, "profile": "dgx-a100"})
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared", "namespace": "default"}, "spec": mig_template()["spec"]["spec"]}
    add(store, mig_template(), shared, pod("a", None, claim="shared"), pod("b", None, claim="shared"), pod("c"), pod("d"))
    nodes = {o.name: o.node for o in Scheduler(store, features=Features()).run().outcomes}
    # a: a-0000, start -> 1; b: a-0002, a-0001 fail its claim's node selector, a-0000 fits: 3 nodes
    # processed, start -> 1; c: a-0001; d: a-0002.
    assert nodes == {"default/a": "a-0000", "default/b": "a-0000", "default/c": "a-0001", "default/d": "a-0002"}


def test_a_claim_whose_node_is_full_leaves_the_pod_pending_with_every_nodes_reason(store, fleet):
    """The narrowed search finds nothing, so the full one words each node's reason (fleet nodes
    have 32 CPUs: a's 20 and b's 20 do not fit together)."""
    fleet({"name": "a", "count": 2, "profile": "demo"})
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared", "namespace": "default"}, "spec": mig_template()["spec"]["spec"]}
    first, second = pod("a", None, claim="shared"), pod("b", None, claim="shared")
    for p in (first, second):
        p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "20"}
    add(store, shared, first, second)
    a, b = Scheduler(store, features=Features()).run().outcomes
    assert a.node is not None and b.node is None
    assert b.reason == ("0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim shared is allocated on other "
                        "nodes. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
                        "1 Preemption is not helpful for scheduling.")
