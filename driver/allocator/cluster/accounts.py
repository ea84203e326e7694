"""What allocated claims hold, per pool, kept up to date claim by claim.

kube-scheduler's DRA plugin keeps the set of allocated devices incrementally from claim informer
events (pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go: "cheaper than
repeatedly calling List ... each time PreFilter is called") and the allocator derives a pool's
available counters from it once per pool (structured/internal/experimental
allocator_experimental.go checkAvailableCounters: "computed ... the first time the available
counters are needed for each pool"). Here both are kept incrementally:

* `HeldResult`: one allocation result that counts (adminAccess results hold nothing: upstream
  foreachAllocatedDevice), parsed once when its claim arrives.
* `PoolAllocations`, per (driver, pool) whatever is published: which devices are held exclusively,
  which have shares and what the shares consume of their capacity, and who holds what.
* `PoolAccount`, per pool *content* (the slices one node's pool was built from): counters consumed
  (a device's static `value`s once while anything holds it, `consumedCounters` per result) and the
  compatibility groups its held devices impose, folded in pool order. Nodes that gather the same
  slices for a pool (the usual case, one generation) share one account.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.allocator.devices import DeviceInfo, DeviceKey, qualify
from driver.allocator.inputs import allocated_results, claim_label
from driver.allocator.pools import Pool
from driver.allocator.rules import GroupIntersection, parse_consumed_counters
from driver.features import Features
from driver.model.quantity import parse_quantity

PoolId = tuple[str, str]
_STALE = object()


@dataclass(frozen=True)
class HeldResult:
    """One result of an allocated claim that holds its device (not an adminAccess result)."""

    claim: str  # the claim's key in the view
    label: str  # namespace/name
    request: str
    device: DeviceKey
    share_id: str | None  # a share of an allowMultipleAllocations device
    consumed_capacity: Mapping[str, Fraction]  # qualified capacity name -> amount (shares only)
    consumed_counters: tuple[tuple[str, Mapping[str, Fraction]], ...]  # recorded KEP-5941 amounts

    @property
    def pool_id(self) -> PoolId:
        return (self.device[0], self.device[1])


def held_results(obj: Mapping[str, Any], key: str, features: Features) -> list[HeldResult]:
    """The results of an allocated claim that hold devices; InputError for malformed ones."""
    label = claim_label(obj)
    out = []
    for i, r in enumerate(allocated_results(obj)):
        if r.get("adminAccess"):
            continue  # admin access never makes a device unavailable
        device = (str(r["driver"]), str(r["pool"]), str(r["device"]))
        where = f"ResourceClaim {label}: status.allocation.devices.results[{i}]"
        share_id = r.get("shareID")
        consumed: dict[str, Fraction] = {}
        for name, value in (r.get("consumedCapacity") or {}).items() if share_id is not None else ():
            qn = qualify(str(name), device[0])
            consumed[qn] = consumed.get(qn, 0) + parse_quantity(value, where=f"{where}.consumedCapacity[{name}]")
        counters: tuple = ()
        if features.shared_consumable_capacity and features.partitionable_devices:
            counters = tuple(parse_consumed_counters(r.get("consumedCounters"), where))
        out.append(HeldResult(key, label, str(r.get("request") or ""), device,
                              None if share_id is None else str(share_id), consumed, counters))
    return out


class PoolAllocations:
    """Who holds which device of one (driver, pool): exclusive holders, shares and their capacity."""

    def __init__(self) -> None:
        self.results: dict[str, list[HeldResult]] = {}  # device name -> results holding it
        self.in_use: set[DeviceKey] = set()  # held exclusively by some result
        self.shared: set[DeviceKey] = set()  # has at least one share
        self.capacity: dict[DeviceKey, dict[str, Fraction]] = {}  # what the shares consume
        self._exclusive: dict[DeviceKey, int] = {}
        self._shares: dict[DeviceKey, int] = {}

    def add(self, res: HeldResult) -> bool:
        """Record a result; True when it is the device's first holder."""
        key = res.device
        holders = self.results.setdefault(key[2], [])
        holders.append(res)
        if res.share_id is None:
            self._exclusive[key] = self._exclusive.get(key, 0) + 1
            self.in_use.add(key)
        else:
            self._shares[key] = self._shares.get(key, 0) + 1
            self.shared.add(key)
            bucket = self.capacity.setdefault(key, {})
            for name, amount in res.consumed_capacity.items():
                bucket[name] = bucket.get(name, 0) + amount
        return len(holders) == 1

    def remove(self, res: HeldResult) -> bool:
        """Forget a result; True when the device has no holder left."""
        key = res.device
        holders = self.results[key[2]]
        holders.remove(res)
        if res.share_id is None:
            self._exclusive[key] -= 1
            if not self._exclusive[key]:
                del self._exclusive[key]
                self.in_use.discard(key)
        else:
            self._shares[key] -= 1
            bucket = self.capacity[key]
            for name, amount in res.consumed_capacity.items():
                bucket[name] -= amount
            if not self._shares[key]:
                del self._shares[key], self.capacity[key]
                self.shared.discard(key)
        if holders:
            return False
        del self.results[key[2]]
        return True

    @property
    def empty(self) -> bool:
        return not self.results


class PoolAccount:
    """Counters and compatibility groups that allocated claims take from one pool content.

    Built from the pool's allocations when a node first needs it, then kept current by the view's
    claim updates. Readers only copy from it; the group state is replaced as a whole on change.
    """

    def __init__(self, pool: Pool, allocations: PoolAllocations, features: Features):
        self.pool = pool
        self.partitionable = features.partitionable_devices
        self.groups_on = features.compatibility_groups
        self.by_name: dict[str, DeviceInfo] = {}
        for dev in pool.devices + pool.elsewhere + pool.other_devices:
            self.by_name.setdefault(dev.name, dev)
        self.used: dict[str, dict[str, Fraction]] = {}  # counter set -> counter -> consumed
        self.charged: set[DeviceKey] = set()  # devices whose static counters are consumed
        self.holders: dict[DeviceKey, DeviceInfo] = {}  # charged devices with counters: their groups bind
        self.groups: dict[str, GroupIntersection] = {}
        self._over: object = _STALE
        for results in allocations.results.values():
            for i, res in enumerate(results):
                self.add(res, first=i == 0, refold=False)
        self.refold()

    def add(self, res: HeldResult, first: bool, refold: bool = True) -> None:
        dev = self.by_name.get(res.device[2])
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
        for counter_set, amounts in res.consumed_counters:
            self._add(counter_set, amounts, 1)

    def remove(self, res: HeldResult, last: bool, refold: bool = True) -> None:
        dev = self.by_name.get(res.device[2])
        if dev is None:
            return
        if last and dev.key in self.charged:
            self.charged.discard(dev.key)
            for cons in dev.consumes:
                self._add(cons.counter_set, cons.static, -1)
            if self.holders.pop(dev.key, None) is not None and refold:
                self.refold()
        for counter_set, amounts in res.consumed_counters:
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
        position = self.pool.position
        groups: dict[str, GroupIntersection] = {}
        for dev in sorted(self.holders.values(), key=lambda d: position.get(d.key, -1)):
            for cons in dev.consumes:
                groups[cons.counter_set] = groups.get(cons.counter_set, GroupIntersection()).add(cons.groups)
        self.groups = groups
