"""The slices and claims one node or one claim involves, found through the store's indexes.

`describe node X` and `describe resourceclaim C` report usage (devices held, counters left) of a
few pools; reading every slice and claim of a 5,000-node store for that cost 82 s and 8.7 GB. The
node index names the node's slices, hence its pools; the pool index gives every slice of those
pools (counter slices included); the allocation index gives the claims holding their devices.
What `driver.allocator.usage.usage_of` computes from these equals what it computes from the whole
store for those pools.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from driver.store.objectstore import ObjectStore

SLICES, CLAIMS = "resourceslices", "resourceclaims"


def pools_of_slices(slices: Collection[Mapping[str, Any]]) -> set[str]:
    out = set()
    for s in slices:
        spec = s.get("spec") or {}
        pool = (spec.get("pool") or {}).get("name") if isinstance(spec.get("pool"), Mapping) else None
        if isinstance(spec.get("driver"), str) and isinstance(pool, str):
            out.add(f"{spec['driver']}/{pool}")
    return out


def pools_of_claim(claim: Mapping[str, Any]) -> set[str]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return {f"{r['driver']}/{r['pool']}" for r in results
            if isinstance(r, Mapping) and isinstance(r.get("driver"), str) and isinstance(r.get("pool"), str)}


def pools_scope(store: ObjectStore, pools: Collection[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every slice of `pools`, every claim holding a device of them)."""
    wanted = sorted(set(pools))
    slices = store.list(SLICES, index={"pool": wanted}) if wanted else []
    return slices, store.claims_in_pools(wanted)


def node_scope(store: ObjectStore, node: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The slices of the pools whose slices name `node`, and the claims holding their devices."""
    return pools_scope(store, pools_of_slices(store.find(SLICES, "node", node)))


def claim_scope(store: ObjectStore, claim: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The slices of the pools a claim's allocation draws from, and the claims holding their devices."""
    slices, claims = pools_scope(store, pools_of_claim(claim))
    return slices, claims
