"""Which devices of a pool allocated ResourceClaims hold: one reading of claim status for every backend.

Kept free of the kubernetes client so the local-store backend (driver.publish.backend) can use it
without loading the client library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def allocated_from_claims(claims: Iterable[Mapping[str, Any]], driver: str, pool: str) -> set[str]:
    """Device names of (driver, pool) in status.allocation.devices.results of the claims."""
    names: set[str] = set()
    for claim in claims:
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        names.update(r["device"] for r in results
                     if r.get("driver") == driver and r.get("pool") == pool and r.get("device"))
    return names
