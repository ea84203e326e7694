"""The writes of one scheduling cycle: all or nothing, and refused when someone else got there first.

Issue 29: two `fake-dra schedule` runs (or `apply --allocate` and a run) used to read the store,
decide, and write, so both could give one device away and leave the loser's claim behind. Here a
cycle's writes are one savepoint of the run's write transaction (`ObjectStore.locked()` nested in
`batch()`), and before any claim is written with an allocation:

* `check_pools(known, pools)`: no claim was allocated from those pools after the revision this run
  knows them at (its read, the changes it caught up with, its own writes): otherwise its picture of
  the pools' counters and devices may be stale (kube-scheduler's equivalent is the API server's
  optimistic concurrency on the claim status plus its in-flight allocation tracking,
  pkg/scheduler/framework/plugins/dynamicresources);
* claims are written `exclusive=True`: the store refuses an allocation naming a device another
  claim holds (driver.store.indexes.conflicts), whoever wrote first;
* claims and the pod carry the resourceVersion they were read at (a pod bound meanwhile, a claim
  allocated meanwhile, is a ConflictError, as kube-apiserver answers 409).

A refusal raises ConflictError inside the savepoint, which undoes every write of the cycle: no
claim made from a template, no allocation, no event is left behind. The caller catches up with
the change log and tries the pod again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.schedule.dra import allocation_pools
from driver.store import ObjectStore
from driver.store.events import FAILED_SCHEDULING, NORMAL, SCHEDULED, SCHEDULER_COMPONENT, ObjectRef, record_event
from driver.store.objectstore import now_timestamp


@dataclass
class ClaimWrite:
    claim: dict[str, Any]
    new: bool  # made from a template (or the scheduler's own, for extended resources): create it
    allocates: bool  # carries an allocation this cycle chose
    group: Mapping[str, Any] | None = None  # the PodGroup whose claim this is (KEP-5729)
    entry: str = ""  # the pod's (or group's) claim entry it was made for


@dataclass
class Plan:
    """What a cycle decided, to be written; `node` None for a pod left pending."""

    label: str
    claim_names: list[str]
    claims: list[ClaimWrite] = field(default_factory=list)
    pod: dict[str, Any] | None = None  # the pod to write (None: unchanged)
    event: str | None = None  # a FailedScheduling event with this message
    reason: str | None = None
    node: str | None = None
    shape: str = ""
    allocations: list[dict[str, Any]] | None = None
    requests: Any = ()


@dataclass
class Written:
    claims: list[dict[str, Any]]
    pod: dict[str, Any] | None
    revision: int  # the last revision written
    count: int


def pool_keys(claim: Mapping[str, Any]) -> set[str]:
    """The `driver/pool` keys the store's allocation guard uses for a claim's pools."""
    return {f"{driver}/{pool}" for driver, pool in allocation_pools(claim)}


def write(store: ObjectStore, plan: Plan, known: Mapping[str, int]) -> Written:
    """Write a plan (inside `store.locked()`: a refused write undoes the others)."""
    pools = set().union(*(pool_keys(c.claim) for c in plan.claims if c.allocates)) if plan.claims else set()
    store.check_pools(known, pools)
    claims, revision = [], 0
    for c in plan.claims:
        if c.new:
            stored = store.create("resourceclaims", c.claim, exclusive=c.allocates)
        else:
            stored = store.update("resourceclaims", c.claim, exclusive=c.allocates)
        claims.append(stored)
        revision = max(revision, int(stored["metadata"]["resourceVersion"]))
        if c.new and c.group is not None and not any(
                r.get("kind") == "Pod" for r in c.claim["metadata"].get("ownerReferences") or ()):
            revision = max(revision, _record_group_claim(store, c.group, c.entry, stored["metadata"]["name"]))
    pod = None
    if plan.pod is not None:
        pod = store.update("pods", plan.pod)
        revision = max(revision, int(pod["metadata"]["resourceVersion"]))
    count = len(claims) + (pod is not None)
    if plan.node is not None and pod is not None:
        # kube-scheduler's event on a bound pod (pkg/scheduler/schedule_one.go, after binding)
        pmeta = pod["metadata"]
        event = record_event(store, ObjectRef.of(pod), reason=SCHEDULED, type=NORMAL, component=SCHEDULER_COMPONENT,
                             message=f"Successfully assigned {pmeta.get('namespace') or 'default'}/{pmeta['name']} "
                                     f"to {plan.node}")
        revision = max(revision, int(event["metadata"]["resourceVersion"]))
        count += 1
    if plan.event is not None and plan.pod is not None:
        # kube-scheduler's FailedScheduling event on the pod (`fake-dra describe pod` lists it);
        # recorded when the outcome changes, so an unchanged pending pod costs no write.
        event = record_event(store, ObjectRef.of(plan.pod), reason=FAILED_SCHEDULING, message=plan.event,
                             component=SCHEDULER_COMPONENT)
        revision = max(revision, int(event["metadata"]["resourceVersion"]))
    return Written(claims, pod, revision, count)


def _record_group_claim(store: ObjectStore, group: Mapping[str, Any], entry: str, claim_name: str) -> int:
    """podgroup.status.resourceClaimStatuses gets the claim made for the group from a template
    (KEP-5729); returns the revision written."""
    meta = group.get("metadata") or {}
    current = store.get("podgroups", meta.get("namespace") or "default", meta["name"])
    status = dict(current.get("status") or {})
    statuses = [s for s in status.get("resourceClaimStatuses") or () if s.get("name") != entry]
    status["resourceClaimStatuses"] = [*statuses, {"name": entry, "resourceClaimName": claim_name}]
    updated = store.update("podgroups", {**current, "status": status})
    return int(updated["metadata"]["resourceVersion"])


def with_condition(conditions: Any, wanted: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions with `wanted` in place; lastTransitionTime changes only when the status does."""
    out, found = [], False
    for cond in conditions or []:
        if isinstance(cond, Mapping) and cond.get("type") == wanted["type"]:
            found = True
            same = cond.get("status") == wanted["status"]
            merged = {**wanted, "lastProbeTime": None,
                      "lastTransitionTime": cond.get("lastTransitionTime") if same else now_timestamp()}
            out.append(merged if any(cond.get(k) != v for k, v in merged.items()) else dict(cond))
        else:
            out.append(cond)
    if not found:
        out.append({**wanted, "lastProbeTime": None, "lastTransitionTime": now_timestamp()})
    return out
