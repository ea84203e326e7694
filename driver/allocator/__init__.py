"""Reference structured allocator (pure): predicts what kube-scheduler allocates on a node.

Agrees with k8s.io/dynamic-resource-allocation/structured of Kubernetes 1.37 (pools, search order,
counters, compatibility groups, consumable capacity, constraints incl. list-typed attributes,
firstAvailable, admin access, taints, binding conditions) and implements KEP-5941 `valueFrom`
counters, which upstream has not merged yet. docs/allocator.md lists what is and is not modelled.

Public API
----------
`allocate_claims(objects, *, node, features=Features(), budget=DEFAULT_BUDGET, stop_on_failure=True,
 sequential=False) -> AllocationOutcome`
    `objects`: dicts of any kind (DeviceClass, ResourceSlice, ResourceClaim, Node, DeviceTaintRule;
    others give a warning). DeviceTaintRules taint the devices they select as if their slices listed
    the taint (taintrules.py). Claims with `status.allocation` are in use; the others are one pod's claims and are
    allocated in one search, as kube-scheduler does (claims in order, requests in order, a later
    claim's failure backtracks into earlier claims' choices; all or nothing). With
    `sequential=True` each claim gets its own scheduling cycle in the given order, seeing the
    previous ones as allocated. `node` is a node name; a Node object of that name among `objects`
    supplies labels for nodeSelector matching.
    Raises InputError (exit 2) for invalid input; unallocatable claims are reported in the outcome.

`ClusterView(objects, features=...)` (driver.allocator.cluster): the cluster's slices, classes,
    nodes and allocated claims kept incrementally; `view.allocator(node)` is a node's Allocator,
    `view.filter(claims)` one pod on every node. docs/allocator.md (Python API) has the contract.

`Allocator(slices=..., classes=..., node=..., features=..., allocated=..., budget=...)`
    The incremental engine: `allocate([claim, ...]) -> [status.allocation, ...]` allocates claims
    together (all or nothing, like one pod's claims), commits them, and raises AllocationError
    (reason in words) or SearchBudgetExceeded.

`validate_combination(slices, placed, features) -> list[Violation]` (see rules.py): the same
counter/group/exclusivity rules for the kubelet plugin's preparation-time revalidation.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from driver.allocator.cluster import ClusterView
from driver.allocator.engine import DEFAULT_BUDGET
from driver.allocator.inputs import claim_label
from driver.allocator.pools import Node
from driver.allocator.rules import PlacedDevice, Violation, validate_combination
from driver.allocator.session import Allocator
from driver.errors import AllocationError, InputError, SearchBudgetExceeded
from driver.features import Features

__all__ = [
    "DEFAULT_BUDGET", "AllocationOutcome", "Allocator", "ClaimOutcome", "ClusterView", "Node", "PlacedDevice",
    "Violation", "allocate_claims", "allocate_pending", "cluster_view", "split_objects", "validate_combination",
]


@dataclass
class ClaimOutcome:
    label: str
    claim: dict[str, Any]  # a copy of the input claim, with status.allocation when allocated
    allocation: dict[str, Any] | None = None
    reason: str | None = None
    budget_exceeded: bool = False


@dataclass
class AllocationOutcome:
    results: list[ClaimOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.allocation is not None for r in self.results)

    @property
    def allocated(self) -> list[ClaimOutcome]:
        return [r for r in self.results if r.allocation is not None]

    @property
    def failed(self) -> list[ClaimOutcome]:
        return [r for r in self.results if r.allocation is None]


@dataclass
class Objects:
    classes: list[dict] = field(default_factory=list)
    slices: list[dict] = field(default_factory=list)
    allocated: list[dict] = field(default_factory=list)
    pending: list[dict] = field(default_factory=list)
    nodes: dict[str, dict] = field(default_factory=dict)
    taint_rules: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def split_objects(objects: Iterable[Any]) -> Objects:
    """Sort input objects by kind; unknown kinds become warnings, malformed objects InputErrors."""
    out = Objects()
    for i, obj in enumerate(objects):
        if obj is None:
            continue
        if not isinstance(obj, Mapping):
            raise InputError(f"object #{i + 1}: expected a mapping with apiVersion and kind, got {type(obj).__name__}")
        kind = obj.get("kind")
        name = (obj.get("metadata") or {}).get("name")
        if kind in ("DeviceClass", "ResourceSlice", "ResourceClaim", "Node", "DeviceTaintRule") and not name:
            raise InputError(f"{kind} (object #{i + 1}): metadata.name: required")
        if kind == "DeviceClass":
            out.classes.append(dict(obj))
        elif kind == "ResourceSlice":
            out.slices.append(dict(obj))
        elif kind == "ResourceClaim":
            status = obj.get("status") or {}
            (out.allocated if status.get("allocation") else out.pending).append(dict(obj))
        elif kind == "Node":
            out.nodes[str(name)] = dict(obj)
        elif kind == "DeviceTaintRule":
            out.taint_rules.append(dict(obj))
        elif kind is None:
            raise InputError(f"object #{i + 1}: kind: required")
        else:
            out.warnings.append(f"ignoring {kind} {name or '#' + str(i + 1)}: not used for allocation")
    return out


def cluster_view(objs: Objects, features: Features = Features()) -> ClusterView:
    """A ClusterView of split objects: slices, classes, Node labels and the allocated claims."""
    view = ClusterView(features=features)
    view.add_slices(objs.slices)
    view.replace_classes(objs.classes)
    for name, obj in objs.nodes.items():
        view.set_node(name, (obj.get("metadata") or {}).get("labels") or {})
    view.replace_claims(objs.allocated)
    view.replace_taint_rules(objs.taint_rules)
    return view


def allocate_claims(
    objects: Iterable[Any],
    *,
    node: str,
    features: Features = Features(),
    budget: int = DEFAULT_BUDGET,
    stop_on_failure: bool = True,
    sequential: bool = False,
) -> AllocationOutcome:
    """Allocate every pending claim among `objects` on `node` (see module docstring).

    By default the pending claims are one pod: one search, all allocated or none (each outcome then
    carries the same reason). `sequential=True` gives each claim its own scheduling cycle in input
    order, each seeing the earlier ones as allocated; `stop_on_failure` ends that loop at the first
    claim that does not fit.
    """
    objs = split_objects(objects)
    outcome = allocate_pending(cluster_view(objs, features), objs.pending, node=node, budget=budget,
                               stop_on_failure=stop_on_failure, sequential=sequential)
    outcome.warnings[:0] = objs.warnings
    return outcome


def allocate_pending(
    view: ClusterView,
    pending: Sequence[Mapping[str, Any]],
    *,
    node: str,
    budget: int = DEFAULT_BUDGET,
    stop_on_failure: bool = True,
    sequential: bool = False,
) -> AllocationOutcome:
    """`allocate_claims` for claims against a ClusterView (which is left unchanged)."""
    alloc = view.allocator(node, budget=budget)
    outcome = AllocationOutcome()
    groups = [[claim] for claim in pending] if sequential else ([list(pending)] if pending else [])
    for group in groups:
        results = [ClaimOutcome(label=claim_label(claim), claim=copy.deepcopy(claim)) for claim in group]
        outcome.results.extend(results)
        try:
            allocations = alloc.allocate(group)
        except AllocationError as exc:
            for result in results:
                result.reason = str(exc)
                result.budget_exceeded = isinstance(exc, SearchBudgetExceeded)
            if stop_on_failure:
                break
            continue
        for result, allocation in zip(results, allocations):
            result.allocation = allocation
            result.claim.setdefault("status", {})["allocation"] = allocation
    return outcome
