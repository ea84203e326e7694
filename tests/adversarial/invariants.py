"""The lifecycle invariants of a settled local cluster (issue 26; issue 29's HIGH 2): what must hold
once `fake-dra cluster` has nothing left to do, whatever was applied, scaled and deleted before.

`violations(store)` lists every broken one, each naming the objects:
- every allocated claim is held: reserved by live pods (present, same uid, not done) or, when no
  pod made it, held by a user; a claim made for a pod is allocated only while that pod reserves it;
- no claim reserves a pod that is gone or done, and no generated claim outlives its pod;
- every bound, live pod's claims are allocated and reserved for it;
- no pod is bound to a Node that is gone, and no slice outlives its Node;
- no device is double-booked (two claims holding it where the allocator's rules forbid it);
- nothing is stuck being deleted (a deletionTimestamp with nobody left to finish it; a claim in
  use waits for the pods that reserve it).

`shortfalls(store)` lists what was lost: a live workload without the pods it wants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.store import ObjectStore
from driver.store.indexes import allocation_entries, conflicts


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _done(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool(_meta(pod).get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"))


def violations(store: ObjectStore) -> list[str]:
    out: list[str] = []
    nodes = {_meta(n).get("name"): _meta(n).get("uid") for n in store.heads("nodes")}
    pods = {(_meta(p).get("namespace"), _meta(p).get("name")): p for p in store.list("pods", all_namespaces=True)}
    claims = store.list("resourceclaims", all_namespaces=True)
    by_key = {(_meta(c).get("namespace"), _meta(c).get("name")): c for c in claims}
    held: dict[str, list[tuple[str, int]]] = {}
    for claim in claims:
        m = _meta(claim)
        label = f"claim {m.get('namespace')}/{m.get('name')}"
        status = claim.get("status") or {}
        live_reservers = []
        for ref in status.get("reservedFor") or []:
            if ref.get("resource") != "pods":
                continue
            pod = pods.get((m.get("namespace"), ref.get("name")))
            if pod is None or _meta(pod).get("uid") != ref.get("uid") or _done(pod):
                out.append(f"{label} reserves pod {ref.get('name')} ({ref.get('uid')}), which is gone or done")
            else:
                live_reservers.append(pod)
        owner = next((r for r in m.get("ownerReferences") or [] if r.get("kind") == "Pod" and r.get("controller")), None)
        if owner is not None:
            pod = pods.get((m.get("namespace"), owner.get("name")))
            if pod is None or _meta(pod).get("uid") != owner.get("uid"):
                out.append(f"{label} was made for pod {owner.get('name')}, which is gone")
            elif status.get("allocation") and not live_reservers:
                out.append(f"{label} is allocated but its pod {owner.get('name')} does not reserve it")
        if m.get("deletionTimestamp") and not live_reservers:  # in use, it waits for its pods (upstream's finalizer)
            out.append(f"{label} is stuck being deleted (finalizers {m.get('finalizers')})")
        for device, how in allocation_entries(claim):
            held.setdefault(device, []).append((label, how))
    for device, holders in held.items():
        for i, (a, how_a) in enumerate(holders):
            for b, how_b in holders[i + 1:]:
                if conflicts(how_a, how_b):
                    out.append(f"device {device} is double-booked by {a} and {b}")
    for (ns, name), pod in pods.items():
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if node and node not in nodes:
            out.append(f"pod {ns}/{name} is bound to node {node}, which is gone")
        if _meta(pod).get("deletionTimestamp"):
            out.append(f"pod {ns}/{name} is stuck being deleted")
        if not node or _done(pod):
            continue
        recorded = {s.get("name"): s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        for entry in spec.get("resourceClaims") or []:
            claim_name = entry.get("resourceClaimName") or recorded.get(entry.get("name"))
            claim = by_key.get((ns, claim_name))
            if claim is None:
                out.append(f"pod {ns}/{name} is bound but its claim {entry.get('name')} ({claim_name}) does not exist")
                continue
            status = claim.get("status") or {}
            if not status.get("allocation") or not any(r.get("uid") == _meta(pod).get("uid") for r in status.get("reservedFor") or []):
                out.append(f"pod {ns}/{name} is bound but claim {claim_name} is not allocated and reserved for it")
    for head in store.heads("resourceslices"):
        m = _meta(head)
        for ref in m.get("ownerReferences") or []:
            if ref.get("kind") == "Node" and nodes.get(ref.get("name")) != ref.get("uid"):
                out.append(f"slice {m.get('name')} outlives its node {ref.get('name')}")
    return out


def _controlled_by(obj: Mapping[str, Any], uid: Any) -> bool:
    return any(r.get("controller") and r.get("uid") == uid for r in _meta(obj).get("ownerReferences") or [])


def _wanted(value: Any, default: int) -> int:
    return value if isinstance(value, int) and value >= 0 else default


def shortfalls(store: ObjectStore) -> list[str]:
    """Nothing lost, once settled: every live workload has the pods it wants (pending ones count:
    a full fleet is not a loss), each naming the workload. ReplicaSet and Deployment: `replicas`
    live pods (pkg/controller/replicaset manageReplicas; a Deployment's through its ReplicaSets); a
    Job not finished: `min(parallelism, completions - succeeded)` active pods (pkg/controller/job
    job_controller.go wantActivePods, NonIndexed)."""
    out: list[str] = []
    pods = [p for p in store.list("pods", all_namespaces=True)
            if not _meta(p).get("deletionTimestamp") and not _done(p)]
    sets = store.list("replicasets", all_namespaces=True)

    def count(owner: Mapping[str, Any], among: list) -> int:
        return sum(_controlled_by(o, _meta(owner).get("uid")) for o in among)

    for rs in sets:
        want = _wanted((rs.get("spec") or {}).get("replicas"), 1)
        if not _meta(rs).get("deletionTimestamp") and count(rs, pods) != want:
            out.append(f"replicaset {_meta(rs).get('name')} wants {want} pods and has {count(rs, pods)}")
    for d in store.list("deployments", all_namespaces=True):
        if _meta(d).get("deletionTimestamp") or (d.get("spec") or {}).get("paused"):
            continue
        want = _wanted((d.get("spec") or {}).get("replicas"), 1)
        have = sum(count(rs, pods) for rs in sets if _controlled_by(rs, _meta(d).get("uid")))
        if have != want:
            out.append(f"deployment {_meta(d).get('name')} wants {want} pods and has {have}")
    for job in store.list("jobs", all_namespaces=True):
        spec, status = job.get("spec") or {}, job.get("status") or {}
        finished = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                       for c in status.get("conditions") or [])
        if finished or spec.get("suspend") or _meta(job).get("deletionTimestamp"):
            continue
        parallelism = _wanted(spec.get("parallelism"), 1)
        completions = _wanted(spec.get("completions"), parallelism if "parallelism" in spec else 1)
        want = min(parallelism, completions - _wanted(status.get("succeeded"), 0))
        have = count(job, pods)
        if have != want:
            out.append(f"job {_meta(job).get('name')} is not finished, wants {want} active pods and has {have}")
    return out
