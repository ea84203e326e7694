"""`fake-dra schedule`: bind every pending Pod of the local store, one scheduling cycle each, in order.

A cycle, as kube-scheduler with DRA runs it (pkg/scheduler/schedule_one.go):
1. the pod's claims: made from templates by the resourceclaim controller's rules (claims.py);
2. Filter, node by node in name order starting where the previous cycle stopped
   (`nextStartNodeIndex`): the non-DRA plugins (nodes.py), then DRA (dra.py: the pod's pending claims
   allocated together on that node). The search stops after `numFeasibleNodesToFind` feasible nodes,
   which is 1 when nothing scores (`--policy first`) and otherwise max(100, N x p / 100), p the
   `--percentage-of-nodes-to-score` or, when 0, 50 - N/125 but at least 5; N < 100 nodes are all
   searched. kube-scheduler filters on 16 goroutines and may overshoot that count a little; this
   is sequential and exact;
3. one node of those found, by `--policy`: `first` (the first found), `most-allocated` /
   `least-allocated` (the largest / smallest share of the node's published devices held by
   allocated claims, ties to the first found). kube-scheduler's Score plugins are not modelled
   beyond that, and its random tie-break is replaced by that deterministic one;
4. the writes: each claim's `status.allocation` and `reservedFor` (a claim the controller makes in
   the same cycle is written once, already allocated), then the pod's `spec.nodeName`, its
   PodScheduled=True condition (what the binding sets) and `status.resourceClaimStatuses`;
   extended resources a DeviceClass serves (`nvidia.com/gpu: 1` on a node without that allocatable)
   are allocated in a claim of the scheduler's own, written at binding (extended.py).
A pod that fits nowhere stays pending: PodScheduled=False, reason Unschedulable, and a message
grouping the nodes by reason (reasons.py), and a FailedScheduling Event on it (driver.store.events);
its template claims are still made, as the controller makes them whatever the scheduler does.
Unchanged pending pods are not written again (nor is their event: kube-scheduler would count one
more attempt). A bound pod gets kube-scheduler's Scheduled event, `Successfully assigned ns/pod to node`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.errors import InputError
from driver.features import Features
from driver.schedule.claims import ClaimIndex, PodClaim, Resolution, reserved_by, with_consumer
from driver.schedule.dra import DraFilter, shape_of
from driver.schedule.extended import (ExtendedRequest, class_for_resource, claim_status, extended_requests,
                                     served_by_dra, special_claim)
from driver.schedule.nodes import NodeInfo, PodNeeds, resource_reason, sorted_nodes, static_reason, terms_match
from driver.schedule.reasons import dra_reason, fit_error, rename_claims
from driver.store import ObjectStore
from driver.store.events import FAILED_SCHEDULING, NORMAL, SCHEDULED, SCHEDULER_COMPONENT, ObjectRef, record_event
from driver.store.objectstore import now_timestamp

POLICIES = ("first", "most-allocated", "least-allocated")
MIN_FEASIBLE_NODES = 100  # minFeasibleNodesToFind
MIN_FEASIBLE_PERCENTAGE = 5  # minFeasibleNodesPercentageToFind
MAX_RESERVED_FOR = 256  # ResourceClaimReservedForMaxSize (pkg/apis/resource/types.go)
DEFAULT_SCHEDULER = "default-scheduler"
BATCH_PODS = 100  # pods written per store batch (the lock is released between batches)


def num_feasible_nodes_to_find(nodes: int, percentage: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind (pkg/scheduler/schedule_one.go)."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES)


@dataclass
class PodOutcome:
    name: str  # namespace/name
    node: str | None
    claims: list[str]
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "node": self.node, "claims": list(self.claims), "reason": self.reason}


@dataclass
class Report:
    outcomes: list[PodOutcome] = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0
    writes: int = 0
    attempts: int = 0  # allocator runs

    @property
    def scheduled(self) -> list[PodOutcome]:
        return [o for o in self.outcomes if o.node]

    @property
    def pending(self) -> list[PodOutcome]:
        return [o for o in self.outcomes if not o.node]


def _label(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def is_pending(pod: Mapping[str, Any]) -> bool:
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    return (not spec.get("nodeName") and not meta.get("deletionTimestamp")
            and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def creation_order(pod: Mapping[str, Any]) -> tuple:
    """Creation time, then the store's resourceVersion (a pod untouched since creation keeps the
    version it was created with: the order of the file it came from), then the name."""
    meta = pod.get("metadata") or {}
    rv = str(meta.get("resourceVersion") or "")
    return (str(meta.get("creationTimestamp") or ""), int(rv) if rv.isdigit() else 0, _label(pod))


class Scheduler:
    def __init__(self, store: ObjectStore, *, features: Features, policy: str = "first", percentage: int = 0,
                 progress: Callable[[int, int], None] | None = None) -> None:
        if policy not in POLICIES:
            raise InputError(f"--policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
        if not 0 <= percentage <= 100:
            raise InputError(f"--percentage-of-nodes-to-score: must be between 0 and 100, got {percentage}")
        self.store = store
        self.features = features
        self.policy = policy
        self.percentage = percentage
        self.progress = progress
        self.next_start = 0
        self.report = Report()
        # Bumped by every bind: an unschedulable pod's outcome holds until then (see _cycle).
        self.generation = 0
        self._unschedulable_memo: dict[tuple, tuple[int, list[str], str]] = {}

    # ---- loading ---------------------------------------------------------------------------------
    def _load(self) -> list[dict[str, Any]]:
        store = self.store
        nodes = [NodeInfo.of(n) for n in store.list("nodes")]
        self.nodes = sorted_nodes(nodes)
        self.by_name = {n.name: n for n in self.nodes}
        pods = store.list("pods", all_namespaces=True)
        claims = store.list("resourceclaims", all_namespaces=True)
        group_claims = self.features.enabled("DRAWorkloadResourceClaims")
        self.index = ClaimIndex(claims, store.list("resourceclaimtemplates", all_namespaces=True),
                                store.list("podgroups", all_namespaces=True) if group_claims else [], group_claims)
        classes = store.list("deviceclasses")
        self.extended_classes = class_for_resource(classes)
        self.dra = DraFilter(slices=store.list("resourceslices"), classes=classes,
                             labels={n.name: n.labels for n in self.nodes},
                             allocated=[c for c in claims if (c.get("status") or {}).get("allocation")],
                             features=self.features, taint_rules=store.list("devicetaintrules"))
        self.held = {n.name: 0 for n in self.nodes}
        for claim in claims:
            self._count_held(claim)
        for pod in pods:
            node = self.by_name.get(str((pod.get("spec") or {}).get("nodeName") or ""))
            if node is not None and not (pod.get("metadata") or {}).get("deletionTimestamp"):
                node.add_pod(dict(PodNeeds.of(pod).requests))
        self._static: dict[tuple, str | None] = {}
        pending = sorted((p for p in pods if is_pending(p)), key=creation_order)
        # What was just read (a 1,000-node fleet is millions of objects) lives until the end and holds
        # no reference cycles: keep the cycle collector from walking it again at every collection.
        gc.freeze()
        return pending

    def _count_held(self, claim: Mapping[str, Any]) -> None:
        for r in ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []):
            if r.get("pool") in self.held and not r.get("adminAccess"):
                self.held[str(r["pool"])] += 1

    # ---- one cycle -------------------------------------------------------------------------------
    def run(self) -> Report:
        started = time.monotonic()
        pending = self._load()
        self.report.nodes = len(self.nodes)
        for start in range(0, len(pending), BATCH_PODS):
            with self.store.batch():
                for pod in pending[start:start + BATCH_PODS]:
                    self.report.outcomes.append(self._cycle(pod))
                    if self.progress is not None:
                        self.progress(len(self.report.outcomes), len(pending))
        self.report.seconds = time.monotonic() - started
        self.report.attempts = self.dra.attempts
        return self.report

    def _cycle(self, pod: dict[str, Any]) -> PodOutcome:
        """One pod's scheduling cycle. A pod or claim the checks refuse (the API server would have)
        stays pending with the refusal as its reason; the other pods are still scheduled."""
        label = _label(pod)
        try:
            return self._schedule_pod(pod, label)
        except InputError as exc:
            return self._unschedulable(pod, Resolution(), label, str(exc))

    def _schedule_pod(self, pod: dict[str, Any], label: str) -> PodOutcome:
        needs = PodNeeds.of(pod)
        resolution = self.index.resolve(pod)
        names = [c.claim["metadata"]["name"] for c in resolution.claims]
        if resolution.problem is not None:
            return self._unschedulable(pod, resolution, label, fit_error({}, len(self.nodes), resolution.problem))
        todo = [c for c in resolution.claims if not (c.claim.get("status") or {}).get("allocation")]
        bound = [c for c in resolution.claims if c not in todo]
        pod_uid = (pod.get("metadata") or {}).get("uid")
        for c in bound:
            full = len((c.claim.get("status") or {}).get("reservedFor") or []) >= MAX_RESERVED_FOR
            if full and not reserved_by(c.claim, pod_uid):
                return self._unschedulable(pod, resolution, label, fit_error(
                    {}, len(self.nodes), f"resourceclaim {c.claim['metadata']['name']} is reserved by "
                                         f"{MAX_RESERVED_FOR} consumers already"))
        shape = shape_of([c.claim for c in todo])
        labels = [_label(c.claim) for c in todo]
        extended = extended_requests(pod, self.extended_classes)
        self._specials: dict[tuple[ExtendedRequest, ...], tuple[dict[str, Any], list, str]] = {}
        # kube-scheduler does not retry an unschedulable pod until the cluster changes (its queueing
        # hints); likewise a pod asking what an unschedulable one asked, with nothing bound since,
        # is unschedulable for the same reasons: no need to visit every node again.
        key = (needs.shape, needs.requests, shape, tuple(_label(c.claim) for c in bound), extended)
        known = self._unschedulable_memo.get(key)
        if known is not None and known[0] == self.generation:
            # The first pod's claim names become this pod's, in every form the allocator writes them.
            return self._unschedulable(pod, resolution, label, rename_claims(known[2], known[1], labels))
        parsed = self.dra.parse([c.claim for c in todo]) if todo else []
        found, reasons = self._filter(needs, parsed, shape, bound, pod, extended)
        if not found:
            for node, reason in list(reasons.items()):
                if reason == _DRA:
                    served = served_by_dra(extended, self.by_name[node].allocatable)
                    node_parsed, node_shape, _ = self._node_claims(pod, parsed, shape, served)
                    reasons[node] = dra_reason(self.dra.explain(node, node_parsed, node_shape))
            message = fit_error(reasons, len(self.nodes))
            self._unschedulable_memo[key] = (self.generation, labels, message)
            return self._unschedulable(pod, resolution, label, message)
        node, allocations = self._choose(found)
        special = self._node_claims(pod, parsed, shape, served_by_dra(extended, self.by_name[node].allocatable))[2]
        self._bind(pod, needs, resolution, todo, bound, node, allocations, special)
        return PodOutcome(label, node, names + ([special[0]["metadata"]["name"]] if special else []))

    def _node_claims(self, pod: Mapping[str, Any], parsed: list, shape: str, dra: tuple[ExtendedRequest, ...]
                     ) -> tuple[list, str, tuple[dict[str, Any], tuple[ExtendedRequest, ...]] | None]:
        """The claims DRA allocates for the pod on a node: its own, plus the special claim for `dra`,
        the extended resources that node leaves to DRA (one claim per distinct set, made once per cycle)."""
        if not dra:
            return parsed, shape, None
        if dra not in self._specials:
            claim = special_claim(pod, dra, self.index.claims)
            self._specials[dra] = (claim, self.dra.parse([claim]), shape_of([claim]))
        claim, special_parsed, special_shape = self._specials[dra]
        return [*parsed, *special_parsed], shape + "+" + special_shape, (claim, dra)

    def _filter(self, needs: PodNeeds, parsed: list, shape: str, bound: list[PodClaim], pod: Mapping[str, Any],
                extended: tuple[ExtendedRequest, ...]) -> tuple[list[tuple[str, list[dict[str, Any]]]], dict[str, str]]:
        total = len(self.nodes)
        want = 1 if self.policy == "first" else num_feasible_nodes_to_find(total, self.percentage)
        found: list[tuple[str, list[dict[str, Any]]]] = []
        reasons: dict[str, str] = {}
        processed = 0
        for i in range(total):
            node = self.nodes[(self.next_start + i) % total]
            processed += 1
            key = (needs.shape, node.name)
            if key not in self._static:
                self._static[key] = static_reason(needs, node)
            served = served_by_dra(extended, node.allocatable)
            reason = (self._static[key] or resource_reason(needs, node, frozenset(r.resource for r in served))
                      or _bound_reason(bound, node))
            if reason is None:
                node_parsed, node_shape, _ = self._node_claims(pod, parsed, shape, served)
                if node_parsed:
                    answer = self.dra.try_node(node.name, node_parsed, node_shape)
                    if isinstance(answer, str):
                        reason = _DRA
                    else:
                        found.append((node.name, answer))
                else:
                    found.append((node.name, []))
            if reason is not None:
                reasons[node.name] = reason
            if len(found) >= want:
                break
        if total:
            self.next_start = (self.next_start + processed) % total
        return found, reasons

    def _choose(self, found: list[tuple[str, list[dict[str, Any]]]]) -> tuple[str, list[dict[str, Any]]]:
        if self.policy == "first" or len(found) == 1:
            return found[0]

        def share(item: tuple[str, Any]) -> float:
            devices = self.dra.devices(item[0])
            return self.held.get(item[0], 0) / devices if devices else 0.0

        best = max(share(f) for f in found) if self.policy == "most-allocated" else min(share(f) for f in found)
        return next(f for f in found if share(f) == best)

    # ---- writes ----------------------------------------------------------------------------------
    def _bind(self, pod: dict[str, Any], needs: PodNeeds, resolution: Resolution, todo: list[PodClaim], bound: list[PodClaim],
              node: str, allocations: list[dict[str, Any]],
              special: tuple[dict[str, Any], tuple[ExtendedRequest, ...]] | None) -> None:
        meta = pod["metadata"]
        consumer = {"resource": "pods", "name": meta["name"], "uid": meta.get("uid")}
        claims = [*todo, *([PodClaim("", special[0], new=True)] if special else [])]
        for c, allocation in zip(claims, allocations, strict=True):
            claim = {**c.claim, "status": {**(c.claim.get("status") or {}), "allocation": allocation,
                                           "reservedFor": [group_consumer(c.group) if c.group else consumer]}}
            self._write_claim(claim, c.new, c.group, c.entry)
            self.dra.commit(claim)
            self._count_held(claim)
        for c in bound:
            reserved = with_consumer(c.claim, group_consumer(c.group) if c.group else consumer)
            if reserved is not None:
                self._write_claim(reserved, False)
        status = dict(pod.get("status") or {})
        status["conditions"] = _with_condition(status.get("conditions"), {"type": "PodScheduled", "status": "True"})
        self._claim_statuses(status, resolution, meta.get("uid"))
        if special:
            status["extendedResourceClaimStatus"] = claim_status(*special)
        self._write_pod({**pod, "spec": {**pod["spec"], "nodeName": node}, "status": status})
        # kube-scheduler's event on a bound pod (schedule_one.go, after binding).
        record_event(self.store, ObjectRef.of(pod), reason=SCHEDULED, type=NORMAL, component=SCHEDULER_COMPONENT,
                     message=f"Successfully assigned {meta.get('namespace') or 'default'}/{meta['name']} to {node}")
        self.report.writes += 1
        self.by_name[node].add_pod(dict(needs.requests))
        self.generation += 1

    def _unschedulable(self, pod: dict[str, Any], resolution: Resolution, label: str, message: str) -> PodOutcome:
        for c in resolution.claims:
            if c.new:
                self._write_claim(c.claim, True, c.group, c.entry)
        status = dict(pod.get("status") or {})
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        status["conditions"] = _with_condition(status.get("conditions"), condition)
        status.setdefault("phase", "Pending")
        self._claim_statuses(status, resolution, (pod.get("metadata") or {}).get("uid"))
        if status != (pod.get("status") or {}):
            self._write_pod({**pod, "status": status})
            # kube-scheduler's FailedScheduling event on the pod (`fake-dra describe pod` lists it);
            # recorded when the outcome changes, so an unchanged pending pod costs no write.
            record_event(self.store, ObjectRef.of(pod), reason=FAILED_SCHEDULING, message=message,
                         component=SCHEDULER_COMPONENT)
            self.report.writes += 1
        return PodOutcome(label, None, [c.claim["metadata"]["name"] for c in resolution.claims], message)

    def _claim_statuses(self, status: dict[str, Any], resolution: Resolution, uid: Any) -> None:
        made = resolution.statuses(str(uid or ""))
        if made:
            status["resourceClaimStatuses"] = made

    def _write_claim(self, claim: dict[str, Any], new: bool, group: Mapping[str, Any] | None = None,
                     entry: str = "") -> None:
        stored = self.store.create("resourceclaims", claim) if new else self.store.update("resourceclaims", claim)
        self.index.put(stored)
        self.report.writes += 1
        if new and group is not None and not any(r.get("kind") == "Pod" for r in claim["metadata"].get("ownerReferences") or ()):
            self._record_group_claim(group, entry, claim["metadata"]["name"])

    def _record_group_claim(self, group: Mapping[str, Any], entry: str, claim_name: str) -> None:
        """podgroup.status.resourceClaimStatuses gets the claim made for the group from a template."""
        meta = group.get("metadata") or {}
        current = self.store.get("podgroups", meta.get("namespace") or "default", meta["name"])
        status = dict(current.get("status") or {})
        statuses = [s for s in status.get("resourceClaimStatuses") or () if s.get("name") != entry]
        status["resourceClaimStatuses"] = [*statuses, {"name": entry, "resourceClaimName": claim_name}]
        updated = self.store.update("podgroups", {**current, "status": status})
        self.index.podgroups[(meta.get("namespace") or "default", meta["name"])] = updated
        self.report.writes += 1

    def _write_pod(self, pod: dict[str, Any]) -> None:
        self.store.update("pods", pod)
        self.report.writes += 1


_DRA = "cannot allocate all claims"  # kube-scheduler's words; replaced by the allocator's reason


def group_consumer(group: Mapping[str, Any]) -> dict[str, Any]:
    """A PodGroup as a claim consumer (KEP-5729: the claim is reserved for the group, not each pod)."""
    meta = group.get("metadata") or {}
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": meta.get("name"), "uid": meta.get("uid")}




def _bound_reason(bound: list[PodClaim], node: NodeInfo) -> str | None:
    """An allocated claim the pod shares pins it to the nodes its allocation selects."""
    for c in bound:
        selector = (((c.claim.get("status") or {}).get("allocation") or {}).get("nodeSelector") or {})
        terms = selector.get("nodeSelectorTerms") or []
        if terms and not terms_match(terms, node, f"ResourceClaim {c.claim['metadata']['name']}: status.allocation"):
            return f"resourceclaim {c.claim['metadata']['name']} is allocated on other nodes"
    return None


def _with_condition(conditions: Any, wanted: dict[str, Any]) -> list[dict[str, Any]]:
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
