"""DRA's Filter for one pod on one node, through the reference allocator, remembered while valid.

kube-scheduler's DRA plugin builds an allocator per pod and calls Allocate once per node
(pkg/scheduler/framework/plugins/dynamicresources). Here the allocator's ClusterView holds the
classes, node labels and allocated claims, kept incrementally as this scheduler allocates, and the
slices of the nodes in use (slices.py: all of them, or node by node from the store with a bounded
number kept); a node's Allocator comes from it in time proportional to that node.

A node's answer depends only on the claims' specs and on what is allocated in the pools the node
sees, so answers are remembered per (node, claim specs) until something is allocated in one of
those pools (each pool knows who sees it; a bind into a pool slices without a nodeName publish
invalidates every answer). Two refinements keep the cost of a pod flat whatever the fleet:

* Nodes that see only pools published for many nodes (nodeSelector / allNodes slices, as in
  scheduler_perf's Partitionable workload) and gather exactly the same pools get the same answer
  (the allocation of such pools names no node): they share one memo entry, keyed by what they
  gathered, instead of each asking the allocator.
* An answer is a chain: the allocation now, then the one after it is bound, and so on, computed by
  one Allocator committing each in turn (what `fake-dra allocate` does for claims in file order).
  Binding the head moves to the next answer without asking again. The chain grows (up to
  `MAX_CHAIN`) for claim specs whose chains get used up, and shrinks when they are invalidated
  unused, so pods of one template walking a 5,000-node fleet (kube-scheduler's rotating start
  node) read each node's slices once rather than once per pod, and mixed pods pay for no
  speculation.

The answer is always the one asking afresh would give; tests/schedule hold it to that. Reasons
are the allocator's explained ones (kube-scheduler says "cannot allocate all claims"; the
FitError here groups nodes by the allocator's words, reasons.py). This module is the one place the
scheduler meets the allocator (`ClusterView`, `parse_claim`).
"""

from __future__ import annotations

import gc
import json
import logging
import re
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver.allocator.cluster import ClusterView, claim_key
from driver.allocator.inputs import Claim, parse_claim
from driver.errors import AllocationError
from driver.features import Features
from driver.schedule.slices import MAX_NODES, AllSlices, LoadedNodes, SliceSource, slice_pool

log = logging.getLogger("fake-dra.schedule")

PoolId = tuple[str, str]
Answer = list[dict[str, Any]] | str  # an allocation per claim, or why they do not fit
MAX_CHAIN = 16


def shape_of(claims: Sequence[Mapping[str, Any]]) -> str:
    """Equal for claim lists the allocator cannot tell apart (their specs, in order)."""
    return json.dumps([c.get("spec") or {} for c in claims], sort_keys=True, separators=(",", ":"))


def allocation_pools(claim: Mapping[str, Any] | None) -> set[PoolId]:
    results = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return {(str(r.get("driver")), str(r.get("pool"))) for r in results if isinstance(r, Mapping)}


@dataclass
class _Memo:
    stamp: tuple[int, int]
    answers: list[Answer]  # the answer now, then each next one assuming the one before it is bound
    labels: tuple[str, ...]  # the claims the reasons name
    node: str  # the node the reasons name
    # Where the last answer's search found its first device: once every answer is bound and
    # nothing else changed (the stamp still holds), the next search may start there.
    resume: tuple[int, int] | None = None


class DraFilter:
    def __init__(self, *, slices: Sequence[Mapping[str, Any]] = (), classes: Sequence[Mapping[str, Any]],
                 labels: Mapping[str, Mapping[str, str]], allocated: Sequence[Mapping[str, Any]], features: Features,
                 source: SliceSource | None = None, max_nodes: int = MAX_NODES,
                 taint_rules: Sequence[Mapping[str, Any]] = ()) -> None:
        self.view = ClusterView(features=features)
        # DeviceTaintRules taint what they select as if the slices listed the taint: kube-scheduler's
        # plugin reads slices through the device-taint tracker (ListWithDeviceTaintRules).
        self.view.replace_taint_rules(taint_rules)
        self.source: SliceSource = source if source is not None else AllSlices(slices)
        self.view.replace_classes(classes)
        self._nodes = set(labels)
        for node, node_labels in labels.items():
            self.view.set_node(node, node_labels)
        self.loaded = LoadedNodes(max_nodes)
        self.pinned: set[str] = set()  # slice keys never forgotten (node-less, completing a pool)
        self.shared_pools: set[PoolId] = set()  # pools some node-less slice publishes
        self._completed: set[tuple[str, str, int]] = set()  # pools already completed from the driver's slices
        self._devices: dict[str, int] = {}  # devices per node, for the scores; _add_shared fills it
        self._add_shared(self.source.shared())
        self.pool_keys: dict[PoolId, set[Hashable]] = defaultdict(set)  # pool -> memo keys that see it
        self.version: dict[Hashable, int] = defaultdict(int)
        self.all_version = 0  # bumped when a pool node-less slices publish changes
        self._key: dict[str, Hashable] = {}  # node -> its memo key: the node, or what it gathered
        self._memo: dict[tuple[Hashable, str], _Memo] = {}
        self._depth: dict[str, int] = {}  # chain length per claim specs
        self.attempts = 0  # allocator runs (what the memo saves is visible in benchmarks)
        self.expected_visits = MAX_CHAIN  # how often a node may be asked per claim specs (the scheduler's estimate)
        problems: list[str] = []
        self.view.replace_claims(allocated, problems=problems)
        for problem in problems:
            log.warning("an allocated claim is not counted: %s", problem)

    # ---- slices ----------------------------------------------------------------------------------
    def _add_shared(self, slices: Sequence[Mapping[str, Any]]) -> None:
        self.view.add_slices(slices)
        for s in slices:
            name = str((s.get("metadata") or {}).get("name") or "")
            self.pinned.add(name)
            pool = slice_pool(s)
            if pool is not None and not (s.get("spec") or {}).get("nodeName"):
                self.shared_pools.add(pool[:2])
        if not self.source.lazy:  # every slice given: devices per node for the scores
            for ps in self.view.slices:
                if ps.node_name is not None:
                    self._devices[ps.node_name] = self._devices.get(ps.node_name, 0) + len(ps.spec.get("devices") or ())

    def _ensure(self, node: str) -> None:
        """The node's own slices in the view (read from the source when forgotten or never read)."""
        if not self.source.lazy or self.loaded.touch(node):
            return
        own = self.source.of_node(node)
        self.view.add_slices(own)
        keys = [str((s.get("metadata") or {}).get("name")) for s in own]
        self._devices[node] = sum(len((s.get("spec") or {}).get("devices") or ()) for s in own)
        self._complete_pools(own)
        for _, forgotten in self.loaded.add(node, keys):
            for key in forgotten:
                if key not in self.pinned:
                    self.view.remove_slice(key)
        if not own:
            self.view.forget(node)  # gathered again from the kept slices when next asked
        # A parsed node is ~15,000 containers without reference cycles, freed by reference counting
        # when forgotten: keep the cycle collector from walking the kept ones at every collection
        # (it otherwise doubles the cost of a run).
        gc.freeze()

    def _complete_pools(self, own: Sequence[Mapping[str, Any]]) -> None:
        """A pool of these slices short of its resourceSliceCount is completed from the driver's
        slices (other nodes' slices of one pool), which are then kept."""
        seen: dict[tuple[str, str, int], int] = {}
        for s in own:
            pool = slice_pool(s)
            if pool is not None:
                seen[pool[:3]] = pool[3]
        for (driver, name, generation), count in seen.items():
            have = sum(1 for ps in self.view.slices.of_pool(driver, name) if ps.generation == generation)
            if have >= count or (driver, name, generation) in self._completed:
                continue
            self._completed.add((driver, name, generation))
            more = [s for s in self.source.of_pool(driver, name)
                    if str((s.get("metadata") or {}).get("name")) not in self.view.slices.by_key]
            self.view.add_slices(more)
            self.pinned.update(str((s.get("metadata") or {}).get("name")) for s in more)

    def slice_changed(self, name: str, obj: Mapping[str, Any] | None) -> None:
        """Another writer created, changed (`obj`) or deleted (None) a slice."""
        known = self.view.slices.by_key.get(name)
        node = (obj.get("spec") or {}).get("nodeName") if obj is not None else None
        node = node or (known.node_name if known is not None else None)
        if obj is None and known is None:
            self._invalidate_all()  # a slice never read: whichever node it was for forgets its answers
            return
        if node and self.source.lazy:
            for key in self.loaded.drop(node):
                if key not in self.pinned:
                    self.view.remove_slice(key)
            self.view.forget(node)
            self._devices.pop(node, None)
            self._key.pop(node, None)
            self.version[node] += 1
            return
        if obj is None:
            self.view.remove_slice(name)
        else:
            self.view.add_slices([obj])
            if not node:
                self.pinned.add(name)
                pool = slice_pool(obj)
                if pool is not None:
                    self.shared_pools.add(pool[:2])
        if node:
            self._devices[node] = sum(len(ps.spec.get("devices") or ()) for ps in self.view.slices.on_node.get(node, {}).values())
            self._key.pop(node, None)
            self.version[node] += 1
        else:
            self._invalidate_all()

    def _invalidate_all(self) -> None:
        self.all_version += 1
        self._key = {n: k for n, k in self._key.items() if not isinstance(k, tuple)}

    def set_node(self, node: str, labels: Mapping[str, str] | None) -> None:
        """A Node's labels changed (None: it is gone): the slices it sees may differ."""
        self.view.set_node(node, labels)
        if labels is None:
            self._nodes.discard(node)
        else:
            self._nodes.add(node)
        key = self._key.pop(node, node)
        self.version[key] += 1
        self.version[node] += 1

    def replace_classes(self, classes: Sequence[Mapping[str, Any]]) -> None:
        self.view.replace_classes(classes)
        self._memo.clear()

    def replace_taint_rules(self, rules: Sequence[Mapping[str, Any]]) -> None:
        """The DeviceTaintRules changed: any node's answers may differ."""
        self.view.replace_taint_rules(rules)
        self._memo.clear()

    # ---- answers ---------------------------------------------------------------------------------
    def devices(self, node: str) -> int:
        """Devices published for the node in its own slices (for the allocated-share scores)."""
        if node not in self._devices:
            self._ensure(node)
        return self._devices.get(node, 0)

    def parse(self, claims: Sequence[Mapping[str, Any]]) -> list[Claim]:
        return [parse_claim(c) for c in claims]

    def key_of(self, node: str) -> Hashable:
        """The node's memo key: its name, or, for a node that sees only pools published for many
        nodes and whose allocations would not name it, the pools it gathered (equal for every node
        gathering the same)."""
        key = self._key.get(node)
        if key is not None:
            return key
        self._ensure(node)
        entry = self.view.entry(node)
        own = self.view.slices.on_node.get(node)
        specific = bool(own) or any(
            ps.spec.get("perDeviceNodeSelection") for pool in entry.view.pools for ps in pool.sources) or any(
            dev.binds_to_node for pool in entry.view.pools for dev in pool.devices)
        if specific:
            key = node
        else:
            key = ("pools", tuple((p.driver, p.name, p.incomplete, p.invalid, p.note,
                                   tuple(ps.key for ps in p.sources)) for p in entry.view.pools))
        for pool in entry.view.pools:
            self.pool_keys[(pool.driver, pool.name)].add(key)
        self._key[node] = key
        return key

    def _stamp(self, key: Hashable) -> tuple[int, int]:
        return (self.version.get(key, 0), self.all_version)

    def try_node(self, node: str, parsed: Sequence[Claim], shape: str) -> Answer:
        """The allocation of each claim on `node`, or the allocator's explained reason."""
        key = self.key_of(node)
        stamp = self._stamp(key)
        labels = tuple(c.label for c in parsed)
        memo = self._memo.get((key, shape))
        resume = None
        if memo is not None:
            if memo.stamp == stamp:
                if memo.answers:
                    if self.source.lazy:
                        self.loaded.touch(node)
                    return _reworded(memo, memo.answers[0], node, labels)
                resume = memo.resume  # every answer bound, nothing else changed
            elif len(memo.answers) > 1 and not isinstance(key, str):  # invalidated unused: speculate less
                self._depth[shape] = max(1, self._depth.get(shape, 1) // 2)
        answers, last = self._attempt(node, parsed, self._chain(key, shape), resume)
        self._memo[(key, shape)] = _Memo(stamp, answers, labels, node, last)
        return answers[0]

    def _chain(self, key: Hashable, shape: str) -> int:
        """How many answers to work out at once. One node's (key: its name): one, unless its slices
        will be forgotten before it is asked again (more nodes than are kept), then as many as the
        scheduler expects pods per node (up to MAX_CHAIN), so that a node is read once for them. Nodes sharing what they gathered: as
        many as the last chain for these claim specs used up (doubling), since the next pod asks
        the same key whichever of those nodes it tries."""
        if isinstance(key, str):
            evicting = self.source.lazy and len(self._nodes) > self.loaded.max_nodes
            return max(1, min(MAX_CHAIN, self.expected_visits)) if evicting else 1
        return self._depth.get(shape, 1)

    def _attempt(self, node: str, parsed: Sequence[Claim], depth: int, resume: tuple[int, int] | None
                 ) -> tuple[list[Answer], tuple[int, int] | None]:
        """`depth` answers from one Allocator, each committed there before the next is sought."""
        self._ensure(node)
        allocator = self.view.allocator(node)
        answers: list[Answer] = []
        for i in range(depth):
            self.attempts += 1
            try:
                answers.append(allocator.allocate(parsed, explain=True, commit=i + 1 < depth, resume=resume))
            except AllocationError as exc:
                answers.append(str(exc))
                return answers, None
            resume = allocator.last_start
        return answers, resume

    def explain(self, node: str, parsed: Sequence[Claim], shape: str) -> str:
        """Why the claims do not fit on `node`, in the allocator's words."""
        answer = self.try_node(node, parsed, shape)
        return answer if isinstance(answer, str) else "fits now (allocated meanwhile)"

    # ---- changes ---------------------------------------------------------------------------------
    def bound(self, node: str, shape: str, allocations: list[dict[str, Any]], claims: Sequence[Mapping[str, Any]]) -> None:
        """The pod's claims now hold `allocations` (the answer try_node gave for `node`): the view
        charges them, the nodes that see their pools must ask again, except that this node's chain
        moves on to its next answer."""
        key = self.key_of(node)
        memo = self._memo.get((key, shape))
        used = memo is not None and memo.stamp == self._stamp(key) and bool(memo.answers) and memo.answers[0] is allocations
        for claim in claims:
            self.claim_changed(None, claim)
        if not used:
            return
        assert memo is not None
        memo.answers.pop(0)
        memo.stamp = self._stamp(key)
        if not memo.answers and not isinstance(key, str):  # the whole chain was bound: speculate further
            self._depth[shape] = min(MAX_CHAIN, self._depth.get(shape, 1) * 2)

    def claim_changed(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A claim was allocated, deallocated, changed or deleted (`new` None)."""
        pools = allocation_pools(old) | allocation_pools(new)
        if new is not None and (new.get("status") or {}).get("allocation"):
            problems: list[str] = []
            self.view.set_claim(new, problems=problems)
            for problem in problems:
                log.warning("an allocated claim is not counted: %s", problem)
        elif old is not None or new is not None:
            self.view.remove_claim(claim_key(new if new is not None else old))  # type: ignore[arg-type]
        for pid in pools:
            if pid in self.shared_pools:
                self.all_version += 1
            for key in self.pool_keys.get(pid, ()):
                self.version[key] += 1


def _reworded(memo: _Memo, answer: Answer, node: str, labels: tuple[str, ...]) -> Answer:
    """A remembered reason in the words of this node and these claims (the specs are the same)."""
    if not isinstance(answer, str) or (memo.node == node and memo.labels == labels):
        return answer
    names = {f"node {memo.node}": f"node {node}", **dict(zip(memo.labels, labels))}
    pattern = "|".join(re.escape(old) for old in sorted(names, key=len, reverse=True))
    return re.sub(f"(?<![A-Za-z0-9./-])(?:{pattern})(?![A-Za-z0-9.-])", lambda m: names[m.group(0)], answer)
