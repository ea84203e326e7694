"""What is in use in a set of pools, from object lists: a `ClusterView` built and read once.

`fake-dra show --store`, `fake-dra describe node|resourceclaim` and the demo's partition map hold
lists of ResourceSlices and ResourceClaims (the local object store, or an API server's lists), not
a view kept by informers. `usage_of` builds the `ClusterView` those lists describe and returns its
`usage()`, so there is one usage model and one accounting, the allocator's (rules in
driver/allocator/cluster/usage.py). A program that keeps a view calls `view.usage()` instead.

Public API (types defined in driver.allocator.cluster, re-exported here):
`usage_of(slices, claims, features=None) -> Usage`: without `features` every record counts (all
gates on: what the objects say); with them, the scheduler's gate rules. Unreadable results are
described in `Usage.problems` instead of raised (malformed slices still raise InputError).
`Usage.pools[(driver, pool)]` -> `PoolUsage` with `counters()` (counter set -> counter ->
`CounterUse(total, used, text)`, `.left`), `holds` (device -> [`Hold`]), `devices` (device -> as
published), `device_info`, `counter_sets_of`, `capacity_used`, `node`/`node_names`, `incomplete`,
`unpublished`; `Usage.for_node(name)`, `Usage.nodes()`, `Usage.holds_of("ns/claim")`,
`Usage.unpublished`, `Usage.problems`. `counters_left(usage, driver)`: what the e2e scenarios check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from driver.allocator.cluster import ClusterView, CounterUse, Hold, PoolUsage, Usage
from driver.features import Features

__all__ = ["CounterUse", "Hold", "PoolUsage", "Usage", "counters_left", "usage_of"]


def usage_of(slices: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]],
             features: Features | None = None) -> Usage:
    """Sum up what the allocated claims hold in the slices' pools (see the module docstring)."""
    view = ClusterView(features=Features.all_on() if features is None else features)
    view.add_slices(slices)
    problems: list[str] = []
    view.replace_claims(claims, problems=problems)
    usage = view.usage()
    usage.problems[:0] = problems
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
