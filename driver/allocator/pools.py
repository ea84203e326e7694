"""Which devices a node can use: pool gathering exactly as the upstream structured allocator does it.

Rules (k8s.io/dynamic-resource-allocation/structured, GatherPools/buildPool): only the newest
generation of a pool counts; a slice counts when its nodeName / nodeSelector / allNodes / per-device
selection matches the node, and a pool short of slices is completed from all slices of its
generation (that is how counter slices and other nodes' devices join). A pool whose newest
generation is missing slices is incomplete (nothing is allocated from it, and "All" requests fail);
duplicate device or counter-set names, or consumption of unknown counters, make it invalid. Pools
are ordered by (driver, pool), pools with binding conditions last, and slices by name, which fixes
the search order.

Gate behaviour: without DRAPartitionableDevices, counter slices and per-device-node-selection
slices do not target the node but still count for completeness (upstream), so only the devices
that consume counters (rejected per candidate) or select nodes per device are lost; without
DRADeviceCompatibilityGroups, a slice in which any device declares compatibility groups is ignored
entirely, which leaves its pool incomplete (the 1.37 scheduler behaviour).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from typing import Any

from driver.allocator.devices import Counter, CounterKey, DeviceInfo
from driver.allocator.parsed import ParsedSlice
from driver.errors import InputError
from driver.features import Features


@dataclass(frozen=True)
class Node:
    """The node being allocated for: its name and labels (from a Node object when one was given)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def _requirement_matches(req: Mapping[str, Any], value: str | None, where: str) -> bool:
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or ()]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    raise InputError(f"{where}: unsupported node selector operator {op!r}")


def node_selector_matches(selector: Mapping[str, Any], node: Node, where: str) -> bool:
    """v1.NodeSelector: terms are ORed, requirements within a term ANDed; an empty term matches nothing."""
    for term in selector.get("nodeSelectorTerms") or ():
        exprs = term.get("matchExpressions") or ()
        fields_ = term.get("matchFields") or ()
        if not exprs and not fields_:
            continue
        if all(_requirement_matches(r, node.labels.get(r.get("key", "")), where) for r in exprs) and all(
            _requirement_matches(r, node.name if r.get("key") == "metadata.name" else None, where) for r in fields_
        ):
            return True
    return False


def node_matches(node: Node, node_name: str | None, all_nodes: bool, selector: Mapping | None, where: str) -> bool:
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node, where)
    return False


@dataclass
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: str | None = None
    devices: list[DeviceInfo] = field(default_factory=list)  # targeting the node, in search order
    # Same pool, not for this node: devices of slices targeting it whose own node selection does
    # not match (`elsewhere`), and devices of slices targeting other nodes (`other_devices`). Both
    # still draw from the pool's counters when allocated.
    elsewhere: list[DeviceInfo] = field(default_factory=list)
    other_devices: list[DeviceInfo] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Counter]] = field(default_factory=dict)
    slice_specs: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # slice name -> spec
    binding_conditions: bool = False  # a device for this node has bindingConditions: searched last
    # Every device of the pool in upstream's walk order (slices for the node by name, each slice's
    # devices in order, then the pool's other slices): allocated devices' compatibility groups
    # are folded in this order (compatibilityGroupsBaselineForPool), which decides the outcome
    # when a driver re-published allocated devices with clashing groups.
    in_order: list[DeviceInfo] = field(default_factory=list)
    note: str | None = None  # why an incomplete pool is incomplete, when it is not just a short pool
    sources: tuple[ParsedSlice, ...] = ()  # the slices it was built from (its content), by name

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"

    @cached_property
    def position(self) -> dict[tuple[str, str, str], int]:
        """Device key -> index in `in_order` (built once; pools are immutable once gathered)."""
        return {dev.key: i for i, dev in enumerate(self.in_order)}

    def counter_totals(self) -> dict[CounterKey, dict[str, Counter]]:
        return {(self.driver, self.name, cs): counters for cs, counters in self.counter_sets.items()}


def _relevant(name: str, spec: Mapping[str, Any], node: Node) -> bool:
    """Whether a slice targets the node (upstream GatherPools): by its own node selection, or, with
    per-device node selection, when any of its devices does. A slice that sets none of these (a
    future kind of selection) is not used."""
    where = f"ResourceSlice {name}: spec"
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return node_matches(node, spec.get("nodeName"), bool(spec.get("allNodes")), spec.get("nodeSelector"), f"{where}.nodeSelector")
    if spec.get("perDeviceNodeSelection"):
        return any(
            node_matches(node, d.get("nodeName"), bool(d.get("allNodes")), d.get("nodeSelector"), f"{where}.devices[{i}].nodeSelector")
            for i, d in enumerate(spec.get("devices") or ())
        )
    return False


def gather_pools(candidates: Iterable[ParsedSlice], node: Node, features: Features,
                 of_pool: Callable[[str, str], Sequence[ParsedSlice]]) -> list[Pool]:
    """Pools usable from `node`, in upstream search order.

    `candidates` are the slices that may target the node (upstream: the node's own slices plus
    those without a nodeName); `of_pool(driver, pool)` gives every slice of a pool, whichever node
    it targets. Mirrors upstream GatherPools: the slices targeting the node are grouped by pool
    (newest generation wins); a pool with fewer slices than `resourceSliceCount` is looked up again
    among *all* slices of that generation (a newer generation anywhere means the pool is being
    replaced and is ignored; still too few means incomplete). Pools whose devices have binding
    conditions come after all others; each group is sorted by (driver, pool).
    """
    # The 1.37 scheduler without DRADeviceCompatibilityGroups ignores every slice that declares
    # groups, leaving its pool short ("treated as belonging to an incomplete pool", kubernetes.io
    # DRA page; upstream structured/internal/*/compatibility_groups.go sliceUsesCompatibilityGroups:
    # only a non-empty list counts, and whether any device is allocated does not matter).
    groups_off = not features.compatibility_groups
    dropped: set[tuple[str, str]] = set()

    def short_pool(driver: str, pool_name: str) -> Pool:
        ignored = sorted(ps.name for ps in of_pool(driver, pool_name) if ps.declares_groups) if groups_off else []
        note = (f"slice {ignored[0]} declares compatibilityGroups, which kube-scheduler ignores while "
                "DRADeviceCompatibilityGroups is off") if ignored else None
        return Pool(driver, pool_name, incomplete=True, note=note)

    by_pool: dict[tuple[str, str], list[ParsedSlice]] = {}
    for ps in candidates:
        spec = ps.spec
        if groups_off and ps.declares_groups:
            if _relevant(ps.name, spec, node):
                dropped.add(ps.pool_id)
            continue
        if not features.partitionable_devices and (spec.get("perDeviceNodeSelection") is not None or ps.has_counters):
            continue
        if ps.node_name is not None and ps.node_name != node.name:
            continue  # the common case, decided without building a selector
        if not _relevant(ps.name, spec, node):
            continue
        pid = ps.pool_id
        current = by_pool.get(pid)
        if current is None or ps.generation > current[0].generation:
            by_pool[pid] = [ps]
        elif ps.generation == current[0].generation:
            current.append(ps)

    plain: list[Pool] = []
    with_conditions: list[Pool] = []
    for (driver, pool_name), members in by_pool.items():
        gen = members[0].generation
        want = members[0].count
        all_members = None
        if len(members) != want:
            same_pool = [ps for ps in of_pool(driver, pool_name) if not (groups_off and ps.declares_groups)]
            if any(ps.generation > gen for ps in same_pool):
                continue  # the driver is replacing this generation: ignore the old one
            all_members = [ps for ps in same_pool if ps.generation == gen]
            if len(all_members) != want:
                plain.append(short_pool(driver, pool_name))
                continue
        pool = _build_pool(driver, pool_name, members, all_members, node, features)
        (with_conditions if pool.binding_conditions else plain).append(pool)
    for driver, pool_name in dropped - set(by_pool):
        plain.append(short_pool(driver, pool_name))
    plain.sort(key=lambda p: (p.driver, p.name))
    with_conditions.sort(key=lambda p: (p.driver, p.name))
    return plain + with_conditions


def _build_pool(driver: str, pool_name: str, members: list[ParsedSlice], all_members: list[ParsedSlice] | None,
                node: Node, features: Features) -> Pool:
    pool = Pool(driver, pool_name)
    members = sorted(members, key=lambda m: m.name)
    taken = {id(ps) for ps in members}
    pool.sources = tuple(sorted([*members, *(ps for ps in all_members or () if id(ps) not in taken)], key=lambda m: m.name))
    counter_slices: list[ParsedSlice] = []
    for ps in members:
        spec = ps.spec
        pool.slice_specs[ps.name] = spec
        if features.partitionable_devices and spec.get("sharedCounters"):
            counter_slices.append(ps)
            continue
        devices = ps.devices
        pool.in_order.extend(devices)
        if ps.binding_conditions:
            pool.binding_conditions = True
        if not spec.get("perDeviceNodeSelection"):
            pool.devices.extend(devices)
            continue
        for i, info in enumerate(devices):
            raw = info.raw
            where = f"ResourceSlice {ps.name}: spec.devices[{i}].nodeSelector"
            if not node_matches(node, raw.get("nodeName"), bool(raw.get("allNodes")), raw.get("nodeSelector"), where):
                pool.elsewhere.append(info)
                continue
            pool.devices.append(info)
    if all_members is not None:
        for ps in all_members:
            if id(ps) in taken:
                continue
            if features.partitionable_devices and ps.spec.get("sharedCounters"):
                counter_slices.append(ps)
                continue
            pool.other_devices.extend(ps.devices)
        pool.in_order.extend(pool.other_devices)
    names = [info.name for info in pool.devices + pool.elsewhere]
    if len(set(names)) != len(names):
        seen: set[str] = set()
        for name in names:
            if name in seen:
                pool.invalid = f"duplicate device name {name}"
                return pool
            seen.add(name)
    if not features.partitionable_devices:
        return pool
    for ps in counter_slices:
        for cs_name, counters in ps.counter_sets.items():
            if cs_name in pool.counter_sets:
                pool.invalid = f"duplicate counter set name {cs_name}"
                return pool
            pool.counter_sets[cs_name] = counters
    sets = pool.counter_sets
    if all(cs in sets and names <= sets[cs].keys() for ps in pool.sources for cs, names in ps.consumed_refs.items()):
        return pool  # every reference resolves (the usual case: checked per slice and set, not per device)
    for info in pool.devices + pool.elsewhere + pool.other_devices:
        for cons in info.consumes:
            counters = pool.counter_sets.get(cons.counter_set)
            if counters is None:
                pool.invalid = f"counter set {cons.counter_set} not found"
                return pool
            missing = [c for c in list(cons.static) + list(cons.value_from) if c not in counters]
            if missing:
                pool.invalid = f"counter {missing[0]} not found in counter set {cons.counter_set}"
                return pool
    return pool


def counter_totals(pools: Sequence[Pool]) -> dict[CounterKey, dict[str, Counter]]:
    totals: dict[CounterKey, dict[str, Counter]] = {}
    for pool in pools:
        totals.update(pool.counter_totals())
    return totals


@dataclass
class NodeView:
    """Everything the search needs about one node's pools, derived from the slices alone.

    Depends only on the slices, the node and the gates, never on allocations, so it can be reused
    for every scheduling cycle until a slice changes (ClusterView keeps it per node).
    """

    pools: list[Pool]
    flat: list[tuple[Pool, DeviceInfo]]  # usable devices in search order
    offsets: list[int]  # where each pool starts in `flat`
    totals: dict[CounterKey, dict[str, Counter]]
    locations: list[tuple[int, int]] = field(default_factory=list)  # (pool index, device index) per `flat` entry
    # Candidates per selector set (Allocator.candidates); pure functions of the view, kept with it.
    memo: dict = field(default_factory=dict)

    @classmethod
    def build(cls, pools: list[Pool]) -> NodeView:
        """The search's view of the pools gathered for one node (`gather_pools`)."""
        flat: list[tuple[Pool, DeviceInfo]] = []
        offsets: list[int] = []
        locations: list[tuple[int, int]] = []
        for pi, pool in enumerate(pools):
            offsets.append(len(flat))
            if not (pool.incomplete or pool.invalid):
                flat.extend(zip(repeat(pool), pool.devices))
                locations.extend(zip(repeat(pi), range(len(pool.devices))))
        return cls(pools, flat, offsets, counter_totals(pools), locations)
