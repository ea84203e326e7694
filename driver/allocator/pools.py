"""Which devices a node can use: pool gathering exactly as the upstream structured allocator does it.

Rules (k8s.io/dynamic-resource-allocation/structured, GatherPools/buildPool): only the newest
generation of a pool counts; slices with shared counters always belong to the pool; other slices
count when their nodeName / nodeSelector / allNodes / per-device selection matches the node. A pool
whose newest generation is missing slices is incomplete (nothing is allocated from it, and "All"
requests fail); duplicate device or counter-set names, or consumption of unknown counters, make it
invalid. Pools are ordered by (driver, pool) and slices by name, which fixes the search order.

Gate behaviour: without DRAPartitionableDevices, slices with sharedCounters or per-device node
selection are ignored; without DRADeviceCompatibilityGroups, a slice in which any device declares
compatibility groups is ignored, which leaves its pool incomplete (the 1.37 scheduler behaviour).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from driver.allocator.devices import Counter, CounterKey, DeviceInfo, parse_counter_sets, parse_device
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
    other_devices: list[DeviceInfo] = field(default_factory=list)  # same pool, other nodes (for counters)
    counter_sets: dict[str, dict[str, Counter]] = field(default_factory=dict)
    slice_specs: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # slice name -> spec

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"

    def counter_totals(self) -> dict[CounterKey, dict[str, Counter]]:
        return {(self.driver, self.name, cs): counters for cs, counters in self.counter_sets.items()}


def _slice_declares_groups(spec: Mapping[str, Any]) -> bool:
    return any(
        c.get("compatibilityGroups") for d in spec.get("devices") or () for c in (d.get("consumesCounters") or ())
    )


def _relevant(name: str, spec: Mapping[str, Any], node: Node, features: Features) -> bool:
    where = f"ResourceSlice {name}: spec"
    if spec.get("sharedCounters"):
        return True
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return node_matches(node, spec.get("nodeName"), bool(spec.get("allNodes")), spec.get("nodeSelector"), f"{where}.nodeSelector")
    if spec.get("perDeviceNodeSelection"):
        return any(
            node_matches(node, d.get("nodeName"), bool(d.get("allNodes")), d.get("nodeSelector"), f"{where}.devices[{i}].nodeSelector")
            for i, d in enumerate(spec.get("devices") or ())
        )
    return False  # an unknown future kind of node selection: not usable


def gather_pools(slices: Sequence[tuple[str, Mapping[str, Any]]], node: Node, features: Features) -> list[Pool]:
    """Pools usable from `node`, from (slice name, spec) pairs, in upstream search order."""
    usable: list[tuple[str, Mapping[str, Any]]] = []
    for name, spec in slices:
        if not features.partitionable_devices and (spec.get("perDeviceNodeSelection") is not None or spec.get("sharedCounters")):
            continue
        if not features.compatibility_groups and _slice_declares_groups(spec):
            continue
        usable.append((name, spec))

    by_pool: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
    for name, spec in usable:
        if not _relevant(name, spec, node, features):
            continue
        pid = (spec["driver"], spec["pool"]["name"])
        current = by_pool.get(pid)
        gen = int(spec["pool"].get("generation", 0))
        if current is None or gen > int(current[0][1]["pool"].get("generation", 0)):
            by_pool[pid] = [(name, spec)]
        elif gen == int(current[0][1]["pool"].get("generation", 0)):
            current.append((name, spec))

    pools: list[Pool] = []
    for (driver, pool_name), members in by_pool.items():
        gen = int(members[0][1]["pool"].get("generation", 0))
        want = int(members[0][1]["pool"].get("resourceSliceCount", 0) or 0)
        all_members = members
        if len(members) != want:
            same_pool = [(n, s) for n, s in usable if s["driver"] == driver and s["pool"]["name"] == pool_name]
            if any(int(s["pool"].get("generation", 0)) > gen for _, s in same_pool):
                continue  # the driver is replacing this generation: ignore the old one
            all_members = [(n, s) for n, s in same_pool if int(s["pool"].get("generation", 0)) == gen]
            if len(all_members) != want:
                pools.append(Pool(driver, pool_name, incomplete=True))
                continue
        pools.append(_build_pool(driver, pool_name, members, all_members, node, features))
    pools.sort(key=lambda p: (p.driver, p.name))
    return pools


def _build_pool(driver: str, pool_name: str, members, all_members, node: Node, features: Features) -> Pool:
    pool = Pool(driver, pool_name)
    members = sorted(members, key=lambda m: m[0])
    member_names = {n for n, _ in members}
    seen_devices: set[str] = set()
    for name, spec in members:
        pool.slice_specs[name] = spec
        if features.partitionable_devices and spec.get("sharedCounters"):
            for cs_name, counters in parse_counter_sets(spec, name).items():
                if cs_name in pool.counter_sets:
                    pool.invalid = f"duplicate counter set name {cs_name}"
                pool.counter_sets[cs_name] = counters
            continue
        per_device = bool(spec.get("perDeviceNodeSelection"))
        for i, raw in enumerate(spec.get("devices") or ()):
            info = parse_device(spec, i, name)
            if info.name in seen_devices:
                pool.invalid = f"duplicate device name {info.name}"
            seen_devices.add(info.name)
            if per_device:
                where = f"ResourceSlice {name}: spec.devices[{i}].nodeSelector"
                if not node_matches(node, raw.get("nodeName"), bool(raw.get("allNodes")), raw.get("nodeSelector"), where):
                    pool.other_devices.append(info)
                    continue
            pool.devices.append(info)
    for name, spec in sorted(all_members, key=lambda m: m[0]):
        if name in member_names or spec.get("sharedCounters"):
            continue
        for i in range(len(spec.get("devices") or ())):
            pool.other_devices.append(parse_device(spec, i, name))
    if features.partitionable_devices and pool.invalid is None:
        for info in pool.devices + pool.other_devices:
            for cons in info.consumes:
                counters = pool.counter_sets.get(cons.counter_set)
                if counters is None:
                    pool.invalid = f"counter set {cons.counter_set} not found"
                    break
                missing = [c for c in list(cons.static) + list(cons.value_from) if c not in counters]
                if missing:
                    pool.invalid = f"counter {missing[0]} not found in counter set {cons.counter_set}"
                    break
    return pool


def index_slices(slices: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, spec) pairs from ResourceSlice objects (or bare specs), checking the fields pools need."""
    out = []
    for i, obj in enumerate(slices):
        spec = obj.get("spec") if "spec" in obj else obj
        name = (obj.get("metadata") or {}).get("name") or f"slice-{i}"
        where = f"ResourceSlice {name}: spec"
        if not isinstance(spec, Mapping):
            raise InputError(f"{where}: required")
        if not spec.get("driver"):
            raise InputError(f"{where}.driver: required")
        pool = spec.get("pool")
        if not isinstance(pool, Mapping) or not pool.get("name"):
            raise InputError(f"{where}.pool.name: required")
        for key in ("generation", "resourceSliceCount"):
            value = pool.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"{where}.pool.{key}: must be a non-negative integer, got {value!r}")
        if spec.get("devices") is not None and not isinstance(spec.get("devices"), list):
            raise InputError(f"{where}.devices: must be a list")
        out.append((name, spec))
    # Bare specs (e.g. from driver.slices.render_pool) carry no generation/count: treat the slices
    # given for a pool as the whole pool.
    sizes: dict[tuple[str, str], int] = defaultdict(int)
    for _, spec in out:
        sizes[(spec["driver"], spec["pool"]["name"])] += 1
    for i, (name, spec) in enumerate(out):
        pool = spec["pool"]
        if "resourceSliceCount" not in pool or "generation" not in pool:
            filled = {"generation": 0, "resourceSliceCount": sizes[(spec["driver"], pool["name"])], **pool}
            out[i] = (name, {**spec, "pool": filled})
    return out


def counter_totals(pools: Sequence[Pool]) -> dict[CounterKey, dict[str, Counter]]:
    totals: dict[CounterKey, dict[str, Counter]] = {}
    for pool in pools:
        totals.update(pool.counter_totals())
    return totals
