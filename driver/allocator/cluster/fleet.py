"""One pod's claims tried on many nodes, the way kube-scheduler's Filter does it.

kube-scheduler checks a pod on every candidate node (one Allocate per node with the allocator built
in PreFilter) and only then picks one; it does not stop at the first node that fits. `filter_nodes`
does the same against a ClusterView: each node gets its own Allocator (from the view, so built in
time proportional to that node), the claims are parsed once, nothing is committed. Reasons for the
nodes that do not fit are worked out afterwards, off the clock (upstream only says "cannot allocate
all claims"; here each infeasible node gets the allocator's one-line reason).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from driver.allocator.engine import DEFAULT_BUDGET
from driver.allocator.inputs import Claim, parse_claim
from driver.errors import AllocationError


@dataclass
class FilterOutcome:
    """Where a pod's claims fit: per feasible node the allocation of each claim (claim order), per
    infeasible node the reason, and the time spent filtering (not parsing, not explaining)."""

    claims: list[str]  # namespace/name of each claim, in order
    feasible: list[str] = field(default_factory=list)  # node names in name order
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # node -> status.allocation per claim
    reasons: dict[str, str] = field(default_factory=dict)  # node -> one line
    filter_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The `fake-dra allocate --all-nodes` output object."""
        return {
            "claims": list(self.claims),
            "feasibleNodes": list(self.feasible),
            "results": {node: dict(zip(self.claims, allocations)) for node, allocations in self.results.items()},
            "reasons": dict(self.reasons),
            "filterMs": round(self.filter_seconds * 1e3, 3),
        }


def filter_nodes(view: Any, claims: Sequence[Mapping[str, Any] | Claim], nodes: Sequence[str] | None = None, *,
                 budget: int = DEFAULT_BUDGET, explain: bool = True) -> FilterOutcome:
    """Try one pod's claims (allocated together, all or nothing) on each of `nodes` (default: every
    node the view knows). `explain=False` leaves the short reason the filter itself produces."""
    parsed = [c if isinstance(c, Claim) else parse_claim(c) for c in claims]
    names = sorted(view.nodes() if nodes is None else nodes)
    out = FilterOutcome(claims=[c.label for c in parsed])
    infeasible: list[str] = []
    start = time.perf_counter()
    for node in names:
        try:
            out.results[node] = view.allocator(node, budget=budget).allocate(parsed, explain=False, commit=False)
        except AllocationError as exc:
            out.reasons[node] = str(exc)
            infeasible.append(node)
    out.filter_seconds = time.perf_counter() - start
    out.feasible = [n for n in names if n in out.results]
    if explain:
        for node in infeasible:
            try:
                view.allocator(node, budget=budget).allocate(parsed, explain=True, commit=False)
            except AllocationError as exc:
                out.reasons[node] = str(exc)
    return out
