"""What is in use in a set of pools: per pool, counters total/used/left and who holds each device.

`fake-dra show --store`, `fake-dra describe node|resourceclaim` and the demo's partition map all
answer "what is taken, and what is left?" from API objects alone (ResourceSlices and allocated
ResourceClaims), the way kube-scheduler sees a cluster. The accounting is the allocator's, through
the same pieces (`CounterLedger`, `parse_consumed_counters`, `newest_specs` in rules.py):

* only the newest generation of each pool counts; a result naming a device that pool no longer
  publishes holds nothing (it is listed in `Usage.unpublished`);
* a device's static `consumesCounters` values are charged once per device that at least one
  non-admin result holds (further shares of an `allowMultipleAllocations` device charge nothing);
* request-driven (`valueFrom`, KEP-5941) amounts are charged per result, as recorded in its
  `consumedCounters`;
* admin-access results hold a device without charging anything.

With `features` the scheduler's gate rules apply too (`DRAPartitionableDevices` off: no counters;
`DRASharedConsumableCapacity` off: recorded `valueFrom` amounts count zero); without, every record
counts, which is what the objects say.

Cost: one pass over the slices (counter sets parsed, devices indexed unparsed) and one over the
claims (only held devices are parsed), so a store of 1,000 nodes is summed in well under a second.
An allocator view that keeps per-pool consumption incrementally can build the same `Usage`.

Public API: `usage_of(slices, claims, features=None) -> Usage`; `Usage.pools[(driver, pool)]` ->
`PoolUsage` with `counters()` (counter set -> counter -> `CounterUse(total, used)`), `holds`
(device -> [`Hold`]), `devices` (device -> published dict); `Usage.for_node(name)`,
`Usage.holds_of(claim_label)`, `Usage.problems` (records that could not be read, one line each).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.allocator.devices import Counter, CounterKey, DeviceInfo, DeviceKey, parse_counter_sets, parse_device
from driver.allocator.inputs import allocated_results, claim_label
from driver.allocator.rules import CounterLedger, newest_specs, parse_consumed_counters
from driver.errors import InputError
from driver.features import Features
from driver.model.quantity import parse_quantity


@dataclass(frozen=True)
class Hold:
    """One allocation result: a claim's hold on one device."""

    claim: str  # namespace/name
    request: str
    device: DeviceKey  # driver, pool, device
    admin: bool = False
    share_id: str | None = None
    consumed_capacity: Mapping[str, Fraction] = field(default_factory=dict)
    # request-driven counters as recorded in the result: (counter set, {counter: amount})
    consumed_counters: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()


@dataclass(frozen=True)
class CounterUse:
    """One counter of a shared counter set: its published total and what the holds consume."""

    total: Fraction
    used: Fraction
    text: str  # the total as published, to format amounts in the same style

    @property
    def left(self) -> Fraction:
        return self.total - self.used


@dataclass
class PoolUsage:
    driver: str
    name: str
    generation: int
    node_names: set[str] = field(default_factory=set)  # nodeName of its slices
    devices: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # name -> published device
    counter_sets: dict[str, dict[str, Counter]] = field(default_factory=dict)
    holds: dict[str, list[Hold]] = field(default_factory=dict)  # device name -> holds, in claim order
    used: dict[str, dict[str, Fraction]] = field(default_factory=dict)  # counter set -> counter -> used
    _where: dict[str, tuple[Mapping[str, Any], int, str]] = field(default_factory=dict, repr=False)
    _parsed: dict[str, DeviceInfo] = field(default_factory=dict, repr=False)

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def node(self) -> str | None:
        """The node of a node-local pool (every slice names the same nodeName), else None."""
        return next(iter(self.node_names)) if len(self.node_names) == 1 else None

    def counters(self) -> dict[str, dict[str, CounterUse]]:
        """Counter set -> counter -> total and used, every published counter included."""
        out: dict[str, dict[str, CounterUse]] = {}
        for cs, counters in self.counter_sets.items():
            used = self.used.get(cs, {})
            out[cs] = {name: CounterUse(c.value, used.get(name, Fraction(0)), c.text) for name, c in counters.items()}
        return out

    def device_info(self, name: str) -> DeviceInfo | None:
        """The device parsed as the allocator parses it (once), or None when not published."""
        info = self._parsed.get(name)
        if info is None and name in self._where:
            spec, index, slice_name = self._where[name]
            info = self._parsed[name] = parse_device(spec, index, slice_name)
        return info

    def counter_sets_of(self, device: str) -> list[str]:
        """The counter sets a device draws from, in its published order."""
        raw = self.devices.get(device) or {}
        return [str(c.get("counterSet")) for c in raw.get("consumesCounters") or () if isinstance(c, Mapping)]

    def capacity_used(self, device: str) -> dict[str, Fraction]:
        """Capacity name -> sum of what the device's shares consume (consumable capacity)."""
        out: dict[str, Fraction] = {}
        for hold in self.holds.get(device, ()):
            for name, amount in hold.consumed_capacity.items():
                out[name] = out.get(name, Fraction(0)) + amount
        return out


@dataclass
class Usage:
    pools: dict[tuple[str, str], PoolUsage] = field(default_factory=dict)
    unpublished: list[Hold] = field(default_factory=list)  # results naming devices no newest slice has
    problems: list[str] = field(default_factory=list)

    def nodes(self) -> list[str]:
        return sorted({n for p in self.pools.values() for n in p.node_names})

    def for_node(self, node: str) -> list[PoolUsage]:
        """The pools whose slices name this node, by driver and pool name."""
        return [p for _, p in sorted(self.pools.items()) if node in p.node_names]

    def holds_of(self, claim: str) -> list[Hold]:
        """Every hold of one claim (`namespace/name`), published or not, in result order."""
        out = [h for p in self.pools.values() for hs in p.holds.values() for h in hs if h.claim == claim]
        return out + [h for h in self.unpublished if h.claim == claim]


def _index_slices(slices: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], PoolUsage]:
    pools: dict[tuple[str, str], PoolUsage] = {}
    for slice_name, spec in newest_specs(slices):
        driver, pool_name = str(spec["driver"]), str(spec["pool"]["name"])
        pool = pools.get((driver, pool_name))
        if pool is None:
            pool = pools[(driver, pool_name)] = PoolUsage(driver, pool_name, int(spec["pool"].get("generation", 0)))
        if spec.get("nodeName"):
            pool.node_names.add(str(spec["nodeName"]))
        if spec.get("sharedCounters"):
            pool.counter_sets.update(parse_counter_sets(spec, slice_name))
        for i, raw in enumerate(spec.get("devices") or ()):
            if isinstance(raw, Mapping) and raw.get("name"):
                name = str(raw["name"])
                pool.devices[name] = raw
                pool._where[name] = (spec, i, slice_name)
    return pools


def _hold(label: str, result: Mapping[str, Any], where: str) -> Hold:
    key = (str(result["driver"]), str(result["pool"]), str(result["device"]))
    capacity = {str(name): parse_quantity(value, where=f"{where}.consumedCapacity[{name}]")
                for name, value in (result.get("consumedCapacity") or {}).items()}
    recorded = tuple(parse_consumed_counters(result.get("consumedCounters"), where))
    return Hold(label, str(result.get("request") or ""), key, bool(result.get("adminAccess")),
                result.get("shareID"), capacity, recorded)


def usage_of(slices: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]],
             features: Features | None = None) -> Usage:
    """Sum up what the allocated claims hold in the slices' pools (see the module docstring)."""
    usage = Usage(_index_slices(slices))
    totals: dict[CounterKey, dict[str, Counter]] = {
        (p.driver, p.name, cs): counters for p in usage.pools.values() for cs, counters in p.counter_sets.items()}
    ledger = CounterLedger(totals)
    counts_static = features is None or features.partitionable_devices
    counts_driven = features is None or (features.partitionable_devices and features.shared_consumable_capacity)
    charged: set[DeviceKey] = set()
    for claim in claims:
        label = claim_label(claim)
        try:
            results = allocated_results(claim)
        except InputError as exc:
            usage.problems.append(str(exc))
            continue
        for i, result in enumerate(results):
            where = f"ResourceClaim {label}: status.allocation.devices.results[{i}]"
            try:
                hold = _hold(label, result, where)
            except InputError as exc:
                usage.problems.append(str(exc))
                continue
            pool = usage.pools.get(hold.device[:2])
            if pool is None or hold.device[2] not in pool.devices:
                usage.unpublished.append(hold)
                continue
            pool.holds.setdefault(hold.device[2], []).append(hold)
            if hold.admin:
                continue  # admin access never makes a device unavailable or consumes counters
            if counts_static and hold.device not in charged:
                charged.add(hold.device)
                try:
                    info = pool.device_info(hold.device[2])
                except InputError as exc:
                    usage.problems.append(str(exc))
                    continue
                for cons in info.consumes if info else ():
                    ledger.add(info.counter_key(cons.counter_set), cons.static)
            if counts_driven:
                for counter_set, amounts in hold.consumed_counters:
                    ledger.add((pool.driver, pool.name, counter_set), amounts)
    for (driver, pool_name, cs), used in ledger.used.items():
        pool = usage.pools.get((driver, pool_name))
        if pool is not None:
            pool.used[cs] = dict(used)
    return usage


def counters_left(usage: Usage, driver: str) -> dict[str, dict[str, Fraction]]:
    """Counter set -> counter -> amount left, over the driver's pools (counter set names are unique
    per pool; one node's pool in practice), as the e2e scenarios check them."""
    out: dict[str, dict[str, Fraction]] = {}
    for pool in usage.pools.values():
        if pool.driver == driver:
            for cs, counters in pool.counters().items():
                out[cs] = {name: use.left for name, use in counters.items()}
    return out
