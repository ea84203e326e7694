"""What allocated claims hold, per pool, kept up to date claim by claim.

kube-scheduler's DRA plugin keeps the set of allocated devices incrementally from claim informer
events (pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go: "cheaper than
repeatedly calling List ... each time PreFilter is called") and the allocator derives a pool's
available counters from it once per pool (structured/internal/experimental
allocator_experimental.go checkAvailableCounters: "computed ... the first time the available
counters are needed for each pool"). Here both are kept incrementally:

* `Hold`: one allocation result, parsed once when its claim arrives. adminAccess results are kept
  (a report shows them) but hold nothing others need: no exclusivity, no counters, no groups
  (upstream foreachAllocatedDevice skips them).
* `PoolAllocations`, per (driver, pool) whatever is published: who holds what, which devices are
  held exclusively, which have shares and what the shares consume of their capacity.
* `PoolAccount`, per pool *content* (the slices one node's pool was built from, or the newest
  generation of the whole pool for usage reports): counters consumed (a device's static `value`s
  once while anything holds it, `consumedCounters` per result) and the compatibility groups its
  held devices impose, folded in pool order. Nodes that gather the same slices for a pool (the
  usual case, one generation) share one account.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.allocator.devices import DeviceInfo, DeviceKey, qualify
from driver.allocator.inputs import allocated_results, claim_label
from driver.allocator.pools import Pool
from driver.allocator.rules import GroupIntersection, parse_consumed_counters
from driver.errors import InputError
from driver.features import Features
from driver.model.quantity import parse_quantity

PoolId = tuple[str, str]
_STALE = object()


@dataclass(frozen=True)
class Hold:
    """One allocation result: a claim's hold on one device, as recorded in the claim's status."""

    claim: str  # namespace/name
    request: str
    device: DeviceKey  # driver, pool, device
    admin: bool = False  # adminAccess: listed, but holds nothing others need
    share_id: str | None = None  # a share of an allowMultipleAllocations device
    consumed_capacity: Mapping[str, Fraction] = field(default_factory=dict)  # capacity name as recorded -> amount
    # request-driven (KEP-5941) counters as recorded: (counter set, {counter: amount}); read only when
    # the view's gates let the scheduler count them (DRAPartitionableDevices, DRASharedConsumableCapacity)
    consumed_counters: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()

    @property
    def pool_id(self) -> PoolId:
        return (self.device[0], self.device[1])


def claim_holds(obj: Mapping[str, Any], features: Features, problems: list[str] | None = None,
                label: str | None = None) -> list[Hold]:
    """The results of an allocated claim, in result order; `label`: its claim_label, when known.

    A malformed result raises InputError naming the claim and field; with `problems`, it is
    described there instead and skipped (a report shows what it can read)."""
    label = label or claim_label(obj)
    try:
        results = allocated_results(obj)
    except InputError as exc:
        if problems is None:
            raise
        problems.append(str(exc))
        return []
    driven = features.shared_consumable_capacity and features.partitionable_devices
    out = []
    for i, r in enumerate(results):
        try:
            out.append(_hold(label, r, i, driven))
        except InputError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
    return out


_PLAIN_RESULT = frozenset(("request", "driver", "pool", "device"))  # what most results record


def _hold(label: str, r: Mapping[str, Any], i: int, driven: bool) -> Hold:
    if r.keys() <= _PLAIN_RESULT:  # an exclusive result without recorded consumption: nothing to parse
        return Hold(label, str(r.get("request") or ""), (str(r["driver"]), str(r["pool"]), str(r["device"])))
    where = f"ResourceClaim {label}: status.allocation.devices.results[{i}]"
    share_id = r.get("shareID")
    capacity = {str(name): parse_quantity(value, where=f"{where}.consumedCapacity[{name}]")
                for name, value in (r.get("consumedCapacity") or {}).items()}
    counters = tuple(parse_consumed_counters(r.get("consumedCounters"), where)) if driven else ()
    return Hold(label, str(r.get("request") or ""), (str(r["driver"]), str(r["pool"]), str(r["device"])),
                bool(r.get("adminAccess")), None if share_id is None else str(share_id), capacity, counters)


class PoolAllocations:
    """Who holds which device of one (driver, pool): every hold by device, exclusive holders,
    shares and what they consume of their device's capacity."""

    def __init__(self) -> None:
        self.holds: dict[str, list[Hold]] = {}  # device name -> every result naming it, in commit order
        self.in_use: set[DeviceKey] = set()  # held exclusively by some result
        self.shared: set[DeviceKey] = set()  # has at least one share
        self.capacity: dict[DeviceKey, dict[str, Fraction]] = {}  # what the shares consume (qualified names)
        self._exclusive: dict[DeviceKey, int] = {}
        self._shares: dict[DeviceKey, int] = {}

    def add(self, hold: Hold) -> bool:
        """Record a result; True when it is the first that holds its device (not adminAccess)."""
        key = hold.device
        self.holds.setdefault(key[2], []).append(hold)
        if hold.admin:
            return False
        if hold.share_id is None:
            self._exclusive[key] = self._exclusive.get(key, 0) + 1
            self.in_use.add(key)
        else:
            self._shares[key] = self._shares.get(key, 0) + 1
            self.shared.add(key)
            bucket = self.capacity.setdefault(key, {})
            for name, amount in hold.consumed_capacity.items():
                qn = qualify(name, key[0])
                bucket[qn] = bucket.get(qn, 0) + amount
        return self._exclusive.get(key, 0) + self._shares.get(key, 0) == 1

    def remove(self, hold: Hold) -> bool:
        """Forget a result; True when no result holds its device any more (it held it)."""
        key = hold.device
        holds = self.holds[key[2]]
        holds.remove(hold)
        if not holds:
            del self.holds[key[2]]
        if hold.admin:
            return False
        if hold.share_id is None:
            self._exclusive[key] -= 1
            if not self._exclusive[key]:
                del self._exclusive[key]
                self.in_use.discard(key)
        else:
            self._shares[key] -= 1
            bucket = self.capacity[key]
            for name, amount in hold.consumed_capacity.items():
                qn = qualify(name, key[0])
                bucket[qn] -= amount
            if not self._shares[key]:
                del self._shares[key], self.capacity[key]
                self.shared.discard(key)
        return not self._exclusive.get(key) and not self._shares.get(key)

    @property
    def empty(self) -> bool:
        return not self.holds


class PoolAccount:
    """Counters and compatibility groups that allocated claims take from one pool content.

    Built from the pool's allocations when a node first needs it, then kept current by the view's
    claim updates. Readers only copy from it; the group state is replaced as a whole on change.
    """

    def __init__(self, pool: Pool, allocations: PoolAllocations, features: Features,
                 lookup: Callable[[str], DeviceInfo | None] | None = None, groups: bool = True):
        """`lookup` finds a held device by name (default: among the pool's parsed devices); a
        device it does not find holds no counters and no groups (no longer published, upstream).
        `groups=False` keeps no group state (a usage report has no use for it)."""
        self.pool = pool
        self.partitionable = features.partitionable_devices
        self.groups_on = features.compatibility_groups and groups
        if lookup is None:  # the first device of a name wins (reversed: the first is written last)
            lookup = {dev.name: dev for dev in reversed(pool.devices + pool.elsewhere + pool.other_devices)}.get
        self.lookup = lookup
        self.used: dict[str, dict[str, Fraction]] = {}  # counter set -> counter -> consumed
        self.charged: set[DeviceKey] = set()  # devices whose static counters are consumed
        self.holders: dict[DeviceKey, DeviceInfo] = {}  # charged devices with counters: their groups bind
        self.groups: dict[str, GroupIntersection] = {}
        self._over: object = _STALE
        for holds in allocations.holds.values():
            first = True
            for hold in holds:
                if not hold.admin:
                    self.add(hold, first=first, refold=False)
                    first = False
        self.refold()

    def add(self, hold: Hold, first: bool, refold: bool = True) -> None:
        """Charge a result that holds its device (not adminAccess); `first`: the device's first."""
        dev = self.lookup(hold.device[2])
        if dev is None:
            return  # no longer published: holds no counters and no groups (upstream)
        if first and self.partitionable:
            self.charged.add(dev.key)
            for cons in dev.consumes:
                self._add(cons.counter_set, cons.static, 1)
            if dev.consumes and self.groups_on:
                self.holders[dev.key] = dev
                if refold:
                    self.refold()
        for counter_set, amounts in hold.consumed_counters:
            self._add(counter_set, amounts, 1)

    def remove(self, hold: Hold, last: bool, refold: bool = True) -> None:
        dev = self.lookup(hold.device[2])
        if dev is None:
            return
        if last and dev.key in self.charged:
            self.charged.discard(dev.key)
            for cons in dev.consumes:
                self._add(cons.counter_set, cons.static, -1)
            if self.holders.pop(dev.key, None) is not None and refold:
                self.refold()
        for counter_set, amounts in hold.consumed_counters:
            self._add(counter_set, amounts, -1)

    def _add(self, counter_set: str, amounts: Mapping[str, Fraction], sign: int) -> None:
        self._over = _STALE
        used = self.used.setdefault(counter_set, {})
        for name, amount in amounts.items():
            left = used.get(name, 0) + sign * amount
            if left or sign > 0:
                used[name] = left
            else:
                used.pop(name, None)  # as if never charged: what a view built afresh holds

    @property
    def overcommitted(self) -> str | None:
        """The first counter set (by name) whose consumption exceeds its total: it blocks every
        counter-consuming device of the pool (upstream). Computed when asked, after a change."""
        if self._over is _STALE:
            totals = self.pool.counter_sets
            self._over = next((cs for cs in sorted(totals) if any(
                name not in totals[cs] or amount > totals[cs][name].value
                for name, amount in self.used.get(cs, {}).items())), None)
        return self._over  # type: ignore[return-value]

    def refold(self) -> None:
        """The group state held devices impose (upstream compatibilityGroupsBaselineForPool): each
        held device's groups folded in with `add`, in pool order, without an admission check, read
        live from the slice. Order matters only when a driver re-published held devices with
        clashing groups; then the first in pool order decides."""
        holders: Any = self.holders.values()
        if any(dev.declares_groups for dev in holders):  # devices without groups fold the same in any order
            position = self.pool.position
            holders = sorted(holders, key=lambda d: position.get(d.key, -1))
        groups: dict[str, GroupIntersection] = {}
        for dev in holders:
            for cons in dev.consumes:
                groups[cons.counter_set] = groups.get(cons.counter_set, GroupIntersection()).add(cons.groups)
        self.groups = groups
