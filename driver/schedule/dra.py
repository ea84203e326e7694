"""DRA's Filter for one pod on one node, through the reference allocator, remembered while valid.

kube-scheduler's DRA plugin builds an allocator per pod and calls Allocate once per node
(pkg/scheduler/framework/plugins/dynamicresources). Here each node's allocator is built from that
node's slices (and slices not bound to one node), the classes, and the claims allocated in the
node's pools only, so its cost follows the node, not the fleet; parsed slices and pools are reused
across pods (driver.allocator.AllocatorCache).

A node's answer for a pod depends only on the pod's claim specs and on what is allocated in the
node's pools; so answers are remembered per (node, claim specs) until something is allocated in
one of those pools (each pool knows the nodes that see it; a pool not bound to one node is seen by
all). 10,000 pods of one template on 1,000 nodes thus cost one allocation attempt per node changed
since it was last asked, not one per (pod, node): the reason `fake-dra schedule` keeps up with
kube-scheduler. The answer is the same as asking afresh; tests/schedule hold it to that.

This module is the one place the scheduler meets the allocator's entry points (`Allocator`,
`AllocatorCache`, `parse_claim`, `parse_class`): moving to a cluster-view API changes this file only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from driver.allocator import Allocator, Node
from driver.allocator.cache import AllocatorCache
from driver.allocator.inputs import Claim, parse_claim, parse_class
from driver.errors import AllocationError
from driver.features import Features

PoolId = tuple[str, str]


def shape_of(claims: Sequence[Mapping[str, Any]]) -> str:
    """Equal for claim lists the allocator cannot tell apart (their specs, in order)."""
    return json.dumps([c.get("spec") or {} for c in claims], sort_keys=True, separators=(",", ":"))


class DraFilter:
    def __init__(self, *, slices: Sequence[Mapping[str, Any]], classes: Sequence[Mapping[str, Any]],
                 labels: Mapping[str, Mapping[str, str]], allocated: Sequence[Mapping[str, Any]], features: Features) -> None:
        self.features = features
        self.labels = labels
        self.classes = {c.name: c for c in map(parse_class, classes)}
        self.cache = AllocatorCache(max_slices=max(20_000, 2 * len(slices)), max_views=max(2_000, 2 * len(labels)))
        self.node_slices: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        self.shared: list[Mapping[str, Any]] = []  # slices not bound to one node: every node may see them
        self.pool_nodes: dict[PoolId, set[str]] = defaultdict(set)
        self.shared_pools: set[PoolId] = set()
        for s in slices:
            spec = s.get("spec") or {}
            pid = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
            if spec.get("nodeName"):
                self.node_slices[str(spec["nodeName"])].append(s)
                self.pool_nodes[pid].add(str(spec["nodeName"]))
            else:
                self.shared.append(s)
                self.shared_pools.add(pid)
        self.by_pool: dict[PoolId, dict[str, Mapping[str, Any]]] = defaultdict(dict)
        self.version: dict[str, int] = defaultdict(int)
        self.all_version = 0  # bumped when a pool every node sees changes
        self._memo: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}
        self.attempts = 0  # allocator runs (what the memo saves is visible in benchmarks)
        for claim in allocated:
            self.commit(claim)

    def devices(self, node: str) -> int:
        """Devices published for the node in its own slices (for the allocated-share scores)."""
        return sum(len((s.get("spec") or {}).get("devices") or ()) for s in self.node_slices.get(node, ()))

    def _allocator(self, node: str) -> Allocator:
        pools = {(str(s["spec"].get("driver")), str(s["spec"]["pool"].get("name"))) for s in self.node_slices.get(node, ())}
        pools |= self.shared_pools
        seen: dict[str, Mapping[str, Any]] = {}
        for pid in pools:
            seen.update(self.by_pool.get(pid, {}))
        return Allocator(slices=[*self.node_slices.get(node, ()), *self.shared], classes=self.classes,
                         node=Node(node, dict(self.labels.get(node, {}))), features=self.features,
                         allocated=list(seen.values()), cache=self.cache)

    def parse(self, claims: Sequence[Mapping[str, Any]]) -> list[Claim]:
        return [parse_claim(c) for c in claims]

    def try_node(self, node: str, parsed: Sequence[Claim], shape: str) -> list[dict[str, Any]] | str:
        """The allocation of each claim on `node`, or the reason (short: the filter's own words)."""
        key = (node, shape)
        stamp = (self.version[node], self.all_version)
        hit = self._memo.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        self.attempts += 1
        try:
            answer: list[dict[str, Any]] | str = self._allocator(node).allocate(parsed, explain=False)
        except AllocationError as exc:
            answer = str(exc)
        self._memo[key] = (stamp, answer)
        return answer

    def explain(self, node: str, parsed: Sequence[Claim], shape: str) -> str:
        """Why the claims do not fit on `node`, in the allocator's words (remembered like try_node)."""
        key = (node, "explain:" + shape)
        stamp = (self.version[node], self.all_version)
        hit = self._memo.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            self._allocator(node).allocate(parsed, explain=True)
            reason = "fits now (allocated meanwhile)"
        except AllocationError as exc:
            reason = str(exc)
        self._memo[key] = (stamp, reason)
        return reason

    def commit(self, claim: Mapping[str, Any]) -> None:
        """A claim now holds its `status.allocation`: every node that sees its pools must ask again."""
        meta = claim.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
        for r in results:
            pid = (str(r.get("driver")), str(r.get("pool")))
            self.by_pool[pid][key] = claim
            if pid in self.shared_pools:
                self.all_version += 1
            for node in self.pool_nodes.get(pid, ()):
                self.version[node] += 1
