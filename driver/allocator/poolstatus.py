"""ResourcePoolStatusRequest (KEP-5677, resource.k8s.io/v1alpha3, alpha in 1.37): how many devices of a
driver's pools are free, answered from the allocator's usage.

A request names a driver (required), optionally one pool and a limit (default 100, 1..1000); the
control plane fills `status` once, after which the object is immutable (the user deletes and
recreates it for new figures). The field meanings are the 1.37 API type's (k8s.io/api
resource/v1alpha3 ResourcePoolStatusRequest, PoolStatus):

- `poolCount`: pools that matched, `pools`: the first `limit` of them sorted by driver, then pool;
- per pool `generation` (only the newest counts), `resourceSliceCount`, `nodeName` for a node-local
  pool, `totalDevices`; `allocatedDevices`: devices held by an allocated claim (an adminAccess result
  holds nothing, as for the scheduler); `unavailableDevices`: devices not allocated but carrying a
  NoSchedule or NoExecute taint (their slice's or a DeviceTaintRule's); `availableDevices` = total -
  allocated - unavailable;
- a pool whose newest generation is not fully published gets `validationError` and no counts;
- `shareableSummary` for pools with `allowMultipleAllocations` devices: how many have no share
  (`fullyAvailableDevices`) and how many some (`partiallyAvailableDevices`).

Not modelled (docs/allocator.md lists why): `partitionSummary` and the per-capacity totals of
`shareableSummary.capacity`, whose exact arithmetic the API text does not pin down.

`answer_pool_status_request` is the pure function a controller loop (or `fake-dra pool-status`)
calls; it never writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.allocator.cluster.usage import PoolUsage, Usage
from driver.allocator.taintrules import BLOCKING, TaintRules, is_pool_name
from driver.errors import InputError
from driver.model.dnsnames import is_dns_subdomain

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(frozen=True)
class PoolStatusQuery:
    name: str
    driver: str
    pool: str | None
    limit: int


def parse_pool_status_request(obj: Mapping[str, Any]) -> PoolStatusQuery:
    """The request's filters; InputError naming the field for what kube-apiserver refuses (driver a
    DNS subdomain, poolName a pool name, limit 1..1000, defaultPartitionTypeAttribute qualified)."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    where = f"ResourcePoolStatusRequest {name}"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: spec: required")
    driver = spec.get("driver")
    if not driver:
        raise InputError(f"{where}: spec.driver: required")
    if not is_dns_subdomain(driver):
        raise InputError(f"{where}: spec.driver: {driver!r} must be a DNS subdomain")
    pool = spec.get("poolName")
    if pool is not None and not is_pool_name(pool):
        raise InputError(f"{where}: spec.poolName: {pool!r} must be a non-empty resource pool name "
                         "(DNS subdomains separated by '/')")
    limit = spec.get("limit")
    limit = DEFAULT_LIMIT if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"{where}: spec.limit: {limit!r} must be between 1 and {MAX_LIMIT}")
    attr = spec.get("defaultPartitionTypeAttribute")
    if attr is not None and (not isinstance(attr, str) or "/" not in attr):
        raise InputError(f"{where}: spec.defaultPartitionTypeAttribute: {attr!r} must include the domain qualifier")
    return PoolStatusQuery(name, str(driver), pool, limit)


def _tainted(pool: PoolUsage, device: str, raw: Mapping[str, Any], rules: TaintRules | None) -> bool:
    if any(isinstance(t, Mapping) and t.get("effect") in BLOCKING for t in raw.get("taints") or ()):
        return True
    return rules is not None and any(r.effect in BLOCKING for r in rules.for_device(pool.driver, pool.name, device))


def pool_status(pool: PoolUsage, rules: TaintRules | None = None) -> dict[str, Any]:
    """One PoolStatus entry for a pool of a usage report."""
    out: dict[str, Any] = {"driver": pool.driver, "poolName": pool.name, "generation": pool.generation}
    if pool.node is not None:
        out["nodeName"] = pool.node
    if pool.incomplete:
        out["validationError"] = (f"pool {pool.label} generation {pool.generation} is not fully published: fewer "
                                  "ResourceSlices than its resourceSliceCount")
        return out
    published = pool._published
    out["resourceSliceCount"] = len(published.members) if published is not None else 0
    allocated = unavailable = 0
    fully = partially = 0
    shareable = False
    for name, raw in pool.devices.items():
        held = any(not h.admin for h in pool.holds.get(name, ()))
        if raw.get("allowMultipleAllocations"):
            shareable = True
            if held:
                partially += 1
            else:
                fully += 1
        if held:
            allocated += 1
        elif _tainted(pool, name, raw, rules):
            unavailable += 1
    total = len(pool.devices)
    out.update(totalDevices=total, allocatedDevices=allocated, unavailableDevices=unavailable,
               availableDevices=total - allocated - unavailable)
    if shareable:
        out["shareableSummary"] = {"fullyAvailableDevices": fully, "partiallyAvailableDevices": partially}
    return out


def answer_pool_status_request(obj: Mapping[str, Any], usage: Usage, rules: TaintRules | None = None,
                               *, now: str = "") -> dict[str, Any]:
    """The `status` a ResourcePoolStatusRequest gets from a usage report (ClusterView.usage()):
    poolCount, the first `limit` pools sorted by driver then name, and a Complete condition.
    `rules`: the cluster's DeviceTaintRules (devices they taint are unavailable)."""
    query = parse_pool_status_request(obj)
    matched = sorted((p for (driver, name), p in usage.pools.items()
                      if driver == query.driver and (query.pool is None or name == query.pool)),
                     key=lambda p: (p.driver, p.name))
    status: dict[str, Any] = {"poolCount": len(matched)}
    if matched:
        status["pools"] = [pool_status(p, rules) for p in matched[:query.limit]]
    shown = min(len(matched), query.limit)
    message = f"{len(matched)} pool(s) of driver {query.driver} matched" + (
        f", {shown} listed (limit {query.limit})" if shown < len(matched) else "")
    status["conditions"] = [{
        "type": "Complete", "status": "True", "reason": "Calculated", "message": message,
        "lastTransitionTime": now or "1970-01-01T00:00:00Z",
        "observedGeneration": int((obj.get("metadata") or {}).get("generation") or 1),
    }]
    return status
