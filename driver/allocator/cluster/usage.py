"""How much of each pool the allocated claims hold: counters left per counter set, and who holds
which device. What a scheduler's view says about capacity, for reports and dashboards.

A pool is read from the slices of its newest generation (all of them, whichever node they are
for); its account is kept current by the view like the accounts the allocator copies from, so a
usage query costs the pool's counters and holders, not a replay of the cluster's claims.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.allocator.cluster.accounts import HeldResult, PoolAccount, PoolAllocations
from driver.allocator.pools import Pool


@dataclass(frozen=True)
class CounterUsage:
    """One counter of a pool: its total as published, what allocated claims consume, what is left."""

    counter_set: str
    counter: str
    total: Fraction
    used: Fraction
    text: str  # the total as published (format `used`/`left` like it: driver.model.quantity.format_quantity)

    @property
    def left(self) -> Fraction:
        return self.total - self.used


@dataclass(frozen=True)
class Holder:
    """One allocation result holding a device (adminAccess results hold nothing and are not listed)."""

    claim: str  # namespace/name
    request: str
    share_id: str | None  # set for a share of an allowMultipleAllocations device
    consumed_capacity: Mapping[str, Fraction]  # qualified capacity name -> amount (shares)
    consumed_counters: tuple[tuple[str, Mapping[str, Fraction]], ...]  # recorded KEP-5941 amounts

    @classmethod
    def of(cls, res: HeldResult) -> Holder:
        return cls(res.label, res.request, res.share_id, dict(res.consumed_capacity), res.consumed_counters)


@dataclass
class PoolUsage:
    """One pool: its counters (set by set, counter by counter, in name order) and holders by device."""

    driver: str
    pool: str
    generation: int
    nodes: list[str]  # nodes named by its slices (empty: allNodes / selectors only)
    counters: list[CounterUsage] = field(default_factory=list)
    holders: dict[str, list[Holder]] = field(default_factory=dict)  # device name -> holders
    incomplete: bool = False  # fewer slices of the newest generation than resourceSliceCount
    unpublished: list[str] = field(default_factory=list)  # held devices the pool no longer publishes


def canonical_pool(driver: str, name: str, slices: list[Any], partitionable: bool) -> tuple[Pool, int, bool]:
    """The pool as its newest generation's slices publish it, whichever node they are for."""
    newest = max(ps.generation for ps in slices)
    members = sorted((ps for ps in slices if ps.generation == newest), key=lambda ps: ps.name)
    pool = Pool(driver, name, sources=tuple(members))
    for ps in members:
        if ps.has_counters and partitionable:
            for counter_set, counters in ps.counter_sets.items():
                pool.counter_sets.setdefault(counter_set, counters)
        else:
            pool.devices.extend(ps.devices)
    pool.in_order = list(pool.devices)
    return pool, newest, len(members) != members[0].count


def pool_usage(pool: Pool, generation: int, incomplete: bool, account: PoolAccount,
               allocations: PoolAllocations | None) -> PoolUsage:
    out = PoolUsage(pool.driver, pool.name, generation,
                    sorted({ps.node_name for ps in pool.sources if ps.node_name}), incomplete=incomplete)
    for counter_set in sorted(pool.counter_sets):
        used = account.used.get(counter_set, {})
        for counter, total in sorted(pool.counter_sets[counter_set].items()):
            out.counters.append(CounterUsage(counter_set, counter, total.value, used.get(counter, 0), total.text))
    for device, results in sorted((allocations.results if allocations else {}).items()):
        out.holders[device] = [Holder.of(res) for res in results]
        if device not in account.by_name:
            out.unpublished.append(device)
    return out
