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
4. the writes (binding.py): each claim's `status.allocation` and `reservedFor` (a claim the
   controller makes in the same cycle is written once, already allocated), then the pod's
   `spec.nodeName`, its PodScheduled=True condition (what the binding sets) and
   `status.resourceClaimStatuses`; extended resources a DeviceClass serves (`nvidia.com/gpu: 1` on
   a node without that allocatable) are allocated in a claim of the scheduler's own, written at
   binding (extended.py).
A pod that fits nowhere stays pending: PodScheduled=False, reason Unschedulable, and a message
grouping the nodes by reason (reasons.py), and a FailedScheduling Event on it (driver.store.events);
its template claims are still made, as the controller makes them whatever the scheduler does.
Unchanged pending pods are not written again (nor is their event: kube-scheduler would count one
more attempt). A bound pod gets kube-scheduler's Scheduled event, `Successfully assigned ns/pod to node`.

Concurrency (issue 29): the run reads the store at one revision (state.py) and writes in
transactions of `BATCH_PODS` cycles; each transaction first catches up with what other writers did
meanwhile, and each cycle is a savepoint whose writes are checked against the pools' allocation
revisions and the devices other claims hold (binding.py). A cycle refused as stale is undone whole,
the run catches up and tries the pod again (at most `MAX_TRIES` times); a pod another writer bound
or deleted meanwhile is left alone (`Report.skipped`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from driver.controllers.resourceclaim import DELETE_PROTECTION
from driver.errors import ConflictError, InputError
from driver.features import Features
from driver.schedule.binding import ClaimWrite, Plan, Written, pool_keys, with_condition, write
from driver.schedule.claims import (PodClaim, Resolution, bound_reason, group_consumer, pinned_to, reserved_by,
                                    with_consumer)
from driver.schedule.dra import shape_of
from driver.schedule.extended import (ExtendedRequest, claim_status, extended_requests, served_by_dra,
                                     special_claim)
from driver.schedule.nodes import NodeInfo, PodNeeds, resource_reason, static_reason
from driver.schedule.reasons import dra_reason, fit_error, rename_claims
from driver.schedule.report import PodOutcome, Report
from driver.schedule.slices import MAX_NODES
from driver.schedule.state import ClusterState, is_pending, pod_key
from driver.store import ObjectStore

POLICIES = ("first", "most-allocated", "least-allocated")
MIN_FEASIBLE_NODES = 100  # minFeasibleNodesToFind
MIN_FEASIBLE_PERCENTAGE = 5  # minFeasibleNodesPercentageToFind
MAX_RESERVED_FOR = 256  # ResourceClaimReservedForMaxSize (pkg/apis/resource/types.go)
BATCH_PODS = 500  # pods written per store transaction at most (the writer lock is released between them)
BATCH_SECONDS = 1.0  # and a transaction ends after this long, so other writers wait little
# Between transactions the run lets go of the store this long: a writer of another process polls
# for the lock (driver.store.writelock: every 50 ms at most), and one that never finds it free
# would time out while this run takes it back at once.
BATCH_PAUSE_S = 0.06
MAX_TRIES = 3  # a cycle refused as stale this often leaves its pod pending for the next run


def num_feasible_nodes_to_find(nodes: int, percentage: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind (pkg/scheduler/schedule_one.go)."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES)


def _label(obj: Mapping[str, Any]) -> str:
    ns, name = pod_key(obj)
    return f"{ns}/{name}"


class Scheduler:
    def __init__(self, store: ObjectStore, *, features: Features, policy: str = "first", percentage: int = 0,
                 progress: Callable[[int, int], None] | None = None, max_nodes: int = MAX_NODES) -> None:
        if policy not in POLICIES:
            raise InputError(f"--policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
        if not 0 <= percentage <= 100:
            raise InputError(f"--percentage-of-nodes-to-score: must be between 0 and 100, got {percentage}")
        self.store = store
        self.features = features
        self.policy = policy
        self.percentage = percentage
        self.progress = progress
        self.state = ClusterState(store, features, max_nodes=max_nodes)
        self.next_start = 0
        self.report = Report()
        self._unschedulable_memo: dict[tuple, tuple[int, list[str], str]] = {}
        self._written = 0  # the last revision this run wrote

    # ---- the run ---------------------------------------------------------------------------------
    def run(self) -> Report:
        started, cpu = time.monotonic(), time.process_time()
        pending = self.state.load()
        self.report.cpu_load = time.process_time() - cpu
        self.report.nodes = len(self.state.nodes)
        self.state.dra.expected_visits = -(-len(pending) // max(1, len(self.state.nodes)))
        done = 0
        while done < len(pending):
            with self.store.batch():
                self.state.catch_up()
                ends = time.monotonic() + BATCH_SECONDS
                for pod in pending[done:done + BATCH_PODS]:
                    outcome = self._cycle(pod)
                    if outcome is not None:
                        self.report.outcomes.append(outcome)
                    done += 1
                    if self.progress is not None:
                        self.progress(done, len(pending))
                    if time.monotonic() >= ends:
                        break
            # Every revision up to this run's last write is known: the transaction began caught up,
            # and nobody else writes while it holds the store.
            self.state.revision = max(self.state.revision, self._written)
            if done < len(pending):
                time.sleep(BATCH_PAUSE_S)
        self.report.seconds = time.monotonic() - started
        self.report.cpu_cycles = time.process_time() - cpu - self.report.cpu_load
        self.report.attempts = self.state.dra.attempts
        self.report.node_reads = getattr(self.state.dra.source, "reads", 0)
        return self.report

    def _cycle(self, pod: dict[str, Any]) -> PodOutcome | None:
        """One pod's scheduling cycle, tried again after a refused write; None when another writer
        bound or deleted the pod meanwhile."""
        label = _label(pod)
        refused: ConflictError | None = None
        for _ in range(MAX_TRIES):
            current = self.state.current(pod)
            if current is None or not is_pending(current):
                self.report.skipped.append(label)
                return None
            try:
                with self.store.locked():
                    plan, written = self._write(self._plan(current, label), current)
            except ConflictError as exc:
                refused = exc
                self.report.conflicts += 1
                self.state.catch_up()
                continue
            self._commit(plan, written)
            return PodOutcome(label, plan.node, plan.claim_names, plan.reason)
        return PodOutcome(label, None, [], f"not scheduled in this run: its writes were refused as stale {MAX_TRIES} "
                                           f"times while other writers changed the store ({refused})")

    def _write(self, plan: Plan, pod: dict[str, Any]) -> tuple[Plan, Written]:
        """Write the plan; a write the store refuses as bad input (an object larger than it keeps)
        leaves the pod pending with that reason instead, so the other pods are still scheduled."""
        try:
            with self.store.locked():
                return plan, write(self.store, plan, self.state.pools)
        except InputError as exc:
            pending = self._unschedulable(pod, Resolution(), plan.label, str(exc))
            return pending, write(self.store, pending, self.state.pools)

    def _commit(self, plan: Plan, written: Written) -> None:
        """The store took the plan: the run's picture of the cluster takes it too."""
        state = self.state
        for stored in written.claims:
            state.index.put(stored)
        self.report.writes += written.count + (plan.event is not None and plan.pod is not None)
        self._written = max(self._written, written.revision)
        if plan.node is None or plan.allocations is None:
            return
        allocated = [stored for stored, w in zip(written.claims, plan.claims) if w.allocates]
        state.dra.bound(plan.node, plan.shape, plan.allocations, allocated)
        for claim in allocated:
            state.count_held(claim, +1)
            revision = int(claim["metadata"]["resourceVersion"])
            for key in pool_keys(claim):
                state.pools[key] = max(state.pools.get(key, 0), revision)
        state.bind(written.pod or {}, plan.requests)

    # ---- deciding --------------------------------------------------------------------------------
    def _plan(self, pod: dict[str, Any], label: str) -> Plan:
        """One pod's decision. A pod or claim the checks refuse (the API server would have) stays
        pending with the refusal as its reason; the other pods are still scheduled."""
        try:
            return self._schedule_pod(pod, label)
        except InputError as exc:
            return self._unschedulable(pod, Resolution(), label, str(exc))

    def _schedule_pod(self, pod: dict[str, Any], label: str) -> Plan:
        state = self.state
        needs = PodNeeds.of(pod)
        resolution = state.index.resolve(pod)
        if resolution.problem is not None:
            return self._unschedulable(pod, resolution, label, fit_error({}, len(state.nodes), resolution.problem))
        todo = [c for c in resolution.claims if not (c.claim.get("status") or {}).get("allocation")]
        bound = [c for c in resolution.claims if c not in todo]
        pod_uid = (pod.get("metadata") or {}).get("uid")
        for c in bound:
            full = len((c.claim.get("status") or {}).get("reservedFor") or []) >= MAX_RESERVED_FOR
            if full and not reserved_by(c.claim, pod_uid):
                return self._unschedulable(pod, resolution, label, fit_error(
                    {}, len(state.nodes), f"resourceclaim {c.claim['metadata']['name']} is reserved by "
                                         f"{MAX_RESERVED_FOR} consumers already"))
        shape = shape_of([c.claim for c in todo])
        labels = [_claim_label(c.claim) for c in todo]
        extended = extended_requests(pod, state.extended_classes)
        self._specials: dict[tuple[ExtendedRequest, ...], tuple[dict[str, Any], list, str]] = {}
        # kube-scheduler does not retry an unschedulable pod until the cluster changes (its queueing
        # hints); likewise a pod asking what an unschedulable one asked, with nothing bound since,
        # is unschedulable for the same reasons: no need to visit every node again.
        key = (needs.shape, needs.requests, shape, tuple(_claim_label(c.claim) for c in bound), extended)
        known = self._unschedulable_memo.get(key)
        if known is not None and known[0] == state.generation:
            # The first pod's claim names become this pod's, in every form the allocator writes them.
            return self._unschedulable(pod, resolution, label, rename_claims(known[2], known[1], labels))
        parsed = state.dra.parse([c.claim for c in todo]) if todo else []
        found, reasons = self._filter(needs, parsed, shape, bound, pod, extended)
        if not found:
            message = fit_error(reasons, len(state.nodes))
            self._unschedulable_memo[key] = (state.generation, labels, message)
            return self._unschedulable(pod, resolution, label, message)
        node, allocations = self._choose(found)
        _, node_shape, special = self._node_claims(pod, parsed, shape, served_by_dra(extended, state.by_name[node].allocatable))
        return self._bind(pod, needs, resolution, todo, bound, node, node_shape, allocations, special)

    def _node_claims(self, pod: Mapping[str, Any], parsed: list, shape: str, dra: tuple[ExtendedRequest, ...]
                     ) -> tuple[list, str, tuple[dict[str, Any], tuple[ExtendedRequest, ...]] | None]:
        """The claims DRA allocates for the pod on a node: its own, plus the special claim for `dra`,
        the extended resources that node leaves to DRA (one claim per distinct set, made once per cycle)."""
        if not dra:
            return parsed, shape, None
        if dra not in self._specials:
            claim = special_claim(pod, dra, self.state.index.claims)
            self._specials[dra] = (claim, self.state.dra.parse([claim]), shape_of([claim]))
        claim, special_parsed, special_shape = self._specials[dra]
        return [*parsed, *special_parsed], shape + "+" + special_shape, (claim, dra)

    def _filter(self, needs: PodNeeds, parsed: list, shape: str, bound: list[PodClaim], pod: Mapping[str, Any],
                extended: tuple[ExtendedRequest, ...]) -> tuple[list[tuple[str, list[dict[str, Any]]]], dict[str, str]]:
        nodes = self.state.nodes
        total = len(nodes)
        want = 1 if self.policy == "first" else num_feasible_nodes_to_find(total, self.percentage)
        pinned = pinned_to(bound)
        if pinned is not None and total:
            narrowed = self._filter_pinned(pinned, want, needs, parsed, shape, bound, pod, extended)
            if narrowed is not None:
                return narrowed, {}
        found: list[tuple[str, list[dict[str, Any]]]] = []
        reasons: dict[str, str] = {}
        processed = 0
        for i in range(total):
            node = nodes[(self.next_start + i) % total]
            processed += 1
            answer = self._check(node, needs, parsed, shape, bound, pod, extended)
            if isinstance(answer, str):
                reasons[node.name] = answer
            else:
                found.append((node.name, answer))
                if len(found) >= want:
                    break
        if total:
            self.next_start = (self.next_start + processed) % total
        return found, reasons

    def _check(self, node: NodeInfo, needs: PodNeeds, parsed: list, shape: str, bound: list[PodClaim],
               pod: Mapping[str, Any], extended: tuple[ExtendedRequest, ...]) -> list[dict[str, Any]] | str:
        """One node through the filters: the allocation of the pod's claims there, or why not."""
        static = self.state.static
        key = (needs.shape, node.name)
        if key not in static:
            static[key] = static_reason(needs, node)
        served = served_by_dra(extended, node.allocatable) if extended else ()
        reason = (static[key] or resource_reason(needs, node, frozenset(r.resource for r in served))
                  or bound_reason(bound, node))
        if reason is not None:
            return reason
        node_parsed, node_shape, _ = self._node_claims(pod, parsed, shape, served)
        if not node_parsed:
            return []
        answer = self.state.dra.try_node(node.name, node_parsed, node_shape)
        return dra_reason(answer) if isinstance(answer, str) else answer

    def _filter_pinned(self, pinned: set[str], want: int, needs: PodNeeds, parsed: list, shape: str,
                       bound: list[PodClaim], pod: Mapping[str, Any], extended: tuple[ExtendedRequest, ...]
                       ) -> list[tuple[str, list[dict[str, Any]]]] | None:
        """The search when an allocated claim of the pod names its nodes (kube-scheduler narrows such
        pods to those nodes up front, as NodeAffinity's PreFilter does for a matchFields
        metadata.name term, pkg/scheduler/framework/plugins/nodeaffinity): only those nodes are
        tried, in the order and with the start-index advance the full search would give, since
        every other node fails on the claim's node selector. None when none of them fits: the full
        search then words the reason of every node."""
        state = self.state
        total = len(state.nodes)
        offsets = sorted((state.node_index[name] - self.next_start) % total for name in pinned if name in state.node_index)
        found: list[tuple[str, list[dict[str, Any]]]] = []
        processed = total
        for offset in offsets:
            node = state.nodes[(self.next_start + offset) % total]
            answer = self._check(node, needs, parsed, shape, bound, pod, extended)
            if not isinstance(answer, str):
                found.append((node.name, answer))
                if len(found) >= want:
                    processed = offset + 1
                    break
        if not found:
            return None
        self.next_start = (self.next_start + processed) % total
        return found

    def _choose(self, found: list[tuple[str, list[dict[str, Any]]]]) -> tuple[str, list[dict[str, Any]]]:
        if self.policy == "first" or len(found) == 1:
            return found[0]
        held, dra = self.state.held, self.state.dra

        def share(item: tuple[str, Any]) -> float:
            devices = dra.devices(item[0])
            return held.get(item[0], 0) / devices if devices else 0.0

        best = max(share(f) for f in found) if self.policy == "most-allocated" else min(share(f) for f in found)
        return next(f for f in found if share(f) == best)

    # ---- plans -----------------------------------------------------------------------------------
    def _bind(self, pod: dict[str, Any], needs: PodNeeds, resolution: Resolution, todo: list[PodClaim],
              bound: list[PodClaim], node: str, shape: str, allocations: list[dict[str, Any]],
              special: tuple[dict[str, Any], tuple[ExtendedRequest, ...]] | None) -> Plan:
        meta = pod["metadata"]
        consumer = {"resource": "pods", "name": meta["name"], "uid": meta.get("uid")}
        claims = [*todo, *([PodClaim("", special[0], new=True)] if special else [])]
        names = [c.claim["metadata"]["name"] for c in resolution.claims]
        plan = Plan(_label(pod), names + ([special[0]["metadata"]["name"]] if special else []), node=node,
                    shape=shape, allocations=allocations, requests=needs.requests)
        for c, allocation in zip(claims, allocations, strict=True):
            claim = {**_protected(c.claim), "status": {**(c.claim.get("status") or {}), "allocation": allocation,
                                                       "reservedFor": [group_consumer(c.group) if c.group else consumer]}}
            plan.claims.append(ClaimWrite(claim, c.new, allocates=True, group=c.group, entry=c.entry))
        for c in bound:
            reserved = with_consumer(c.claim, group_consumer(c.group) if c.group else consumer)
            if reserved is not None:
                plan.claims.append(ClaimWrite(_protected(reserved), False, allocates=False))
        status = dict(pod.get("status") or {})
        status["conditions"] = with_condition(status.get("conditions"), {"type": "PodScheduled", "status": "True"})
        self._claim_statuses(status, resolution, meta.get("uid"))
        if special:
            status["extendedResourceClaimStatus"] = claim_status(*special)
        plan.pod = {**pod, "spec": {**pod["spec"], "nodeName": node}, "status": status}
        return plan

    def _unschedulable(self, pod: dict[str, Any], resolution: Resolution, label: str, message: str) -> Plan:
        plan = Plan(label, [c.claim["metadata"]["name"] for c in resolution.claims], reason=message)
        plan.claims = [ClaimWrite(c.claim, True, allocates=False, group=c.group, entry=c.entry)
                       for c in resolution.claims if c.new]
        status = dict(pod.get("status") or {})
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        status["conditions"] = with_condition(status.get("conditions"), condition)
        status.setdefault("phase", "Pending")
        self._claim_statuses(status, resolution, (pod.get("metadata") or {}).get("uid"))
        if status != (pod.get("status") or {}):
            plan.pod = {**pod, "status": status}
            plan.event = message
        return plan

    def _claim_statuses(self, status: dict[str, Any], resolution: Resolution, uid: Any) -> None:
        made = resolution.statuses(str(uid or ""))
        if made:
            status["resourceClaimStatuses"] = made


def _claim_label(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _protected(claim: dict[str, Any]) -> dict[str, Any]:
    """The claim with resourceapi.Finalizer, which kube-scheduler adds to every claim it allocates
    (pkg/scheduler/framework/plugins/dynamicresources: Reserve, written by PreBind's bindClaim) and
    the resourceclaim controller removes once no pod reserves it: a claim deleted while in use waits
    for its pods. Here also on a claim `apply --allocate` allocated (no finalizer, as the local tour
    deletes such claims with no control plane running) once a pod reserves it: on a cluster every
    allocated claim a pod uses carries it."""
    finalizers = list((claim.get("metadata") or {}).get("finalizers") or [])
    if DELETE_PROTECTION in finalizers:
        return claim
    return {**claim, "metadata": {**claim["metadata"], "finalizers": [*finalizers, DELETE_PROTECTION]}}
