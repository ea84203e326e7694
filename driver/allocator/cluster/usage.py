"""What is in use in a cluster's pools: per pool, counters total/used/left and who holds each device.

`ClusterView.usage()` answers "what is taken, and what is left?" the way kube-scheduler sees the
cluster, for `fake-dra show --store`, `fake-dra describe`, the demo's partition map, the e2e
backends and a fleet scheduler's summaries. It is a read of the view's incremental state, not a
replay of the claims: the view keeps, per pool, who holds what (`PoolAllocations`) and a
`PoolAccount` of the counters consumed, updated claim by claim like the accounts node allocators
copy from; a report copies the pool's counters and holds. The rules are the allocator's:

* only the newest generation of each pool counts, all of its slices whichever node they are for
  (a pool spanning nodes is one pool); a pool short of slices is reported, marked `incomplete`;
* a result naming a device the pool no longer publishes holds nothing (`Usage.unpublished`, and
  per pool `PoolUsage.unpublished`);
* a device's static `consumesCounters` values are charged once while at least one non-admin result
  holds it (further shares of an `allowMultipleAllocations` device charge nothing);
* request-driven (`valueFrom`, KEP-5941) amounts are charged per result, as recorded in its
  `consumedCounters`;
* adminAccess results are listed (`Hold.admin`) but hold nothing and charge nothing;
* the view's gates apply: `DRAPartitionableDevices` off charges no counters,
  `DRASharedConsumableCapacity` off leaves recorded `valueFrom` amounts unread (zero).

Devices are indexed as published and parsed only when held (or asked for), so a report over 1,000
nodes costs about one pass over the slices' device lists; a device that cannot be parsed holds no
counters and is described in `Usage.problems`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.allocator.cluster.accounts import Hold, PoolAccount, PoolAllocations, PoolId
from driver.allocator.devices import Counter, DeviceInfo, is_mapping
from driver.allocator.parsed import ParsedSlice
from driver.allocator.pools import Pool
from driver.errors import InputError
from driver.features import Features


@dataclass(frozen=True)
class CounterUse:
    """One counter of a shared counter set: its published total and what the holds consume."""

    total: Fraction
    used: Fraction
    text: str  # the total as published (format amounts like it: driver.model.quantity.format_quantity)

    @property
    def left(self) -> Fraction:
        return self.total - self.used


class PublishedPool:
    """A pool as the newest generation of its slices publishes it: devices by name as published
    (parsed one by one when needed), counter sets, the nodes its slices name. Immutable once
    built; the view builds a new one when a slice of the pool changes."""

    def __init__(self, driver: str, name: str, slices: Sequence[ParsedSlice]):
        self.driver, self.name = driver, name
        self.generation = max(ps.generation for ps in slices)
        members = [ps for ps in slices if ps.generation == self.generation]
        self.incomplete = len(members) != members[0].count
        self.node_names = frozenset(ps.node_name for ps in members if ps.node_name)
        self.members = members
        self.counter_sets: dict[str, dict[str, Counter]] = {}
        self.devices: dict[str, Mapping[str, Any]] = {}  # name -> the device as published
        # name -> index in its slice's device list. Plain ints: a fleet has 100,000s of devices, and
        # a tuple per device would wake the garbage collector over the whole heap many times.
        self._index: dict[str, int] = {}
        devices, index = self.devices, self._index
        for ps in members:
            if ps.has_counters:
                self.counter_sets.update(ps.counter_sets)
            for i, raw in enumerate(ps.spec.get("devices") or ()):
                name = raw.get("name") if type(raw) is dict or is_mapping(raw) else None
                if name:
                    name = name if type(name) is str else str(name)
                    devices[name] = raw
                    index[name] = i
        self.problems: list[str] = []  # held devices that could not be parsed

    def device_info(self, name: str) -> DeviceInfo | None:
        """The device parsed as the allocator parses it (InputError if it cannot be), or None."""
        i = self._index.get(name)
        if i is None:
            return None
        raw = self.devices[name]
        return next(ps for ps in self.members if (listed := ps.spec.get("devices") or ()) and i < len(listed)
                    and listed[i] is raw).device(i)

    def lookup(self, name: str) -> DeviceInfo | None:
        """For the pool's account: a device that cannot be parsed holds nothing, and is a problem."""
        try:
            return self.device_info(name)
        except InputError as exc:
            if str(exc) not in self.problems:
                self.problems.append(str(exc))
            return None

    def account(self, allocations: PoolAllocations, features: Features) -> PoolAccount:
        """A counter account of the whole pool (no group state: a report has no use for it)."""
        pool = Pool(self.driver, self.name, counter_sets=self.counter_sets)
        return PoolAccount(pool, allocations, features, lookup=self.lookup, groups=False)


@dataclass
class PoolUsage:
    """One pool's usage: what it publishes, what is held, what its counters have left."""

    driver: str
    name: str
    generation: int
    node_names: set[str] = field(default_factory=set)  # nodeName of its slices (empty: none names one)
    devices: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # name -> published device
    counter_sets: Mapping[str, Mapping[str, Counter]] = field(default_factory=dict)
    holds: dict[str, list[Hold]] = field(default_factory=dict)  # published device -> holds, in commit order
    used: dict[str, dict[str, Fraction]] = field(default_factory=dict)  # counter set -> counter -> used
    incomplete: bool = False  # fewer slices of the newest generation than its resourceSliceCount
    unpublished: list[Hold] = field(default_factory=list)  # holds naming devices it no longer publishes
    _published: PublishedPool | None = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def node(self) -> str | None:
        """The node of a node-local pool (every slice names the same nodeName), else None."""
        return next(iter(self.node_names)) if len(self.node_names) == 1 else None

    def counters(self) -> dict[str, dict[str, CounterUse]]:
        """Counter set -> counter -> total and used, every published counter included, as published."""
        out: dict[str, dict[str, CounterUse]] = {}
        for cs, counters in self.counter_sets.items():
            used = self.used.get(cs, {})
            out[cs] = {name: CounterUse(c.value, used.get(name, Fraction(0)), c.text) for name, c in counters.items()}
        return out

    def device_info(self, name: str) -> DeviceInfo | None:
        """The device parsed as the allocator parses it (once), or None when not published."""
        return self._published.device_info(name) if self._published is not None else None

    def counter_sets_of(self, device: str) -> list[str]:
        """The counter sets a device draws from, in its published order."""
        raw = self.devices.get(device) or {}
        return [str(c.get("counterSet")) for c in raw.get("consumesCounters") or () if is_mapping(c)]

    def capacity_used(self, device: str) -> dict[str, Fraction]:
        """Capacity name (as recorded) -> sum of what the device's shares consume (consumable capacity)."""
        out: dict[str, Fraction] = {}
        for hold in self.holds.get(device, ()):
            for name, amount in hold.consumed_capacity.items():
                out[name] = out.get(name, Fraction(0)) + amount
        return out


@dataclass
class Usage:
    """Usage of a set of pools (a whole view, or one driver's or one pool's part of it)."""

    pools: dict[PoolId, PoolUsage] = field(default_factory=dict)
    unpublished: list[Hold] = field(default_factory=list)  # results naming devices no newest slice has
    problems: list[str] = field(default_factory=list)  # records that could not be read, one line each
    # every claim's holds in result order (claims in commit order), for holds_of
    claims: Mapping[str, Sequence[Hold]] = field(default_factory=dict, repr=False)
    _by_label: dict[str, list[Hold]] | None = field(default=None, repr=False, compare=False)

    def nodes(self) -> list[str]:
        return sorted({n for p in self.pools.values() for n in p.node_names})

    def for_node(self, node: str) -> list[PoolUsage]:
        """The pools whose slices name this node, by driver and pool name."""
        return [p for _, p in sorted(self.pools.items()) if node in p.node_names]

    def holds_of(self, claim: str) -> list[Hold]:
        """Every hold of one claim (`namespace/name`), published or not, in result order."""
        if self._by_label is None:
            by_label: dict[str, list[Hold]] = {}
            for holds in self.claims.values():
                for hold in holds:
                    by_label.setdefault(hold.claim, []).append(hold)
            self._by_label = by_label
        return list(self._by_label.get(claim, ()))


def read_usage(published: Sequence[tuple[PublishedPool, PoolAccount, PoolAllocations]],
               orphans: Sequence[PoolAllocations], claims: Mapping[str, Sequence[Hold]]) -> Usage:
    """A snapshot of the pools' accounts (`published`), plus the holds on pools no slice publishes
    (`orphans`); `claims`: the selected holds of each claim, in result order."""
    usage = Usage(claims=claims)
    unpublished: set[int] = set()
    for pub, account, allocations in published:
        pool = PoolUsage(pub.driver, pub.name, pub.generation, set(pub.node_names), pub.devices, pub.counter_sets,
                         used={cs: dict(amounts) for cs, amounts in account.used.items()},
                         incomplete=pub.incomplete, _published=pub)
        for device, holds in allocations.holds.items():
            if device in pub.devices:
                pool.holds[device] = list(holds)
            else:
                pool.unpublished += holds
        usage.pools[(pub.driver, pub.name)] = pool
        unpublished.update(map(id, pool.unpublished))
        usage.problems += pub.problems
    for allocations in orphans:
        unpublished.update(id(h) for holds in allocations.holds.values() for h in holds)
    if unpublished:  # rare: listed in claim order, each claim's in result order
        usage.unpublished = [h for holds in claims.values() for h in holds if id(h) in unpublished]
    return usage
