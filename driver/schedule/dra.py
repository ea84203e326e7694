"""DRA's Filter for one pod on one node, through the reference allocator, remembered while valid.

kube-scheduler's DRA plugin builds an allocator per pod and calls Allocate once per node
(pkg/scheduler/framework/plugins/dynamicresources). Here the allocator's ClusterView holds the
fleet's slices (parsed once), classes, node labels and allocated claims, kept incrementally as this
scheduler allocates; a node's Allocator comes from it in time proportional to that node.

A node's answer for a pod depends only on the pod's claim specs and on what is allocated in the
node's pools; so answers are remembered per (node, claim specs) until something is allocated in
one of those pools (each pool knows the nodes that see it; a pool not bound to one node is seen by
all). 10,000 pods of one template on 1,000 nodes thus cost one allocation attempt per node changed
since it was last asked, not one per (pod, node): the reason `fake-dra schedule` keeps up with
kube-scheduler. The answer is the same as asking afresh; tests/schedule hold it to that.

This module is the one place the scheduler meets the allocator (`ClusterView`, `parse_claim`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from driver.allocator.cluster import ClusterView
from driver.allocator.inputs import Claim, parse_claim
from driver.errors import AllocationError
from driver.features import Features

PoolId = tuple[str, str]


def shape_of(claims: Sequence[Mapping[str, Any]]) -> str:
    """Equal for claim lists the allocator cannot tell apart (their specs, in order)."""
    return json.dumps([c.get("spec") or {} for c in claims], sort_keys=True, separators=(",", ":"))


class DraFilter:
    def __init__(self, *, slices: Sequence[Mapping[str, Any]], classes: Sequence[Mapping[str, Any]],
                 labels: Mapping[str, Mapping[str, str]], allocated: Sequence[Mapping[str, Any]], features: Features,
                 taint_rules: Sequence[Mapping[str, Any]] = ()) -> None:
        self.view = ClusterView(features=features)
        # DeviceTaintRules taint what they select as if the slices listed the taint: kube-scheduler's
        # plugin reads slices through the device-taint tracker (ListWithDeviceTaintRules).
        self.view.replace_taint_rules(taint_rules)
        self.view.replace_slices(slices)
        self.view.replace_classes(classes)
        for node, node_labels in labels.items():
            self.view.set_node(node, node_labels)
        self.node_slices: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        self.pool_nodes: dict[PoolId, set[str]] = defaultdict(set)
        self.shared_pools: set[PoolId] = set()
        for s in slices:
            spec = s.get("spec") or {}
            pid = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
            if spec.get("nodeName"):
                self.node_slices[str(spec["nodeName"])].append(s)
                self.pool_nodes[pid].add(str(spec["nodeName"]))
            else:  # a pool not bound to one node: every node may see it
                self.shared_pools.add(pid)
        self.version: dict[str, int] = defaultdict(int)
        self.all_version = 0  # bumped when a pool every node sees changes
        self._memo: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}
        self.attempts = 0  # allocator runs (what the memo saves is visible in benchmarks)
        self.view.replace_claims(allocated)

    def devices(self, node: str) -> int:
        """Devices published for the node in its own slices (for the allocated-share scores)."""
        return sum(len((s.get("spec") or {}).get("devices") or ()) for s in self.node_slices.get(node, ()))

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
            answer: list[dict[str, Any]] | str = self.view.allocator(node).allocate(parsed, explain=False, commit=False)
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
            self.view.allocator(node).allocate(parsed, explain=True, commit=False)
            reason = "fits now (allocated meanwhile)"
        except AllocationError as exc:
            reason = str(exc)
        self._memo[key] = (stamp, reason)
        return reason

    def commit(self, claim: Mapping[str, Any]) -> None:
        """A claim now holds its `status.allocation` (a new object, as the view expects): the view
        charges it, and every node that sees its pools must be asked again."""
        self.view.set_claim(claim)
        results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
        for r in results:
            pid = (str(r.get("driver")), str(r.get("pool")))
            if pid in self.shared_pools:
                self.all_version += 1
            for node in self.pool_nodes.get(pid, ()):
                self.version[node] += 1
