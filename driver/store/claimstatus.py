"""ResourceClaim status.devices in the local object store (the local-mode DeviceStatusSink).

Same contract as the API server's apply in driver.kube.claimstatus: the driver's entries become
exactly the given ones, other drivers' entries stay, the claim's UID must match (ConflictError
otherwise: the name now belongs to a new claim) and, as kube-apiserver validates, every entry must
name a device allocated to the claim by that driver and fit the 1.37 schema (InputError otherwise). Read-modify-write with
the store's resourceVersion check, retried when another writer (the harness's reservedFor upkeep,
another plugin thread) got in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver import schema
from driver.errors import ConflictError, InputError
from driver.features import Features
from driver.store.objectstore import ObjectStore

CLAIMS = "resourceclaims"


class StoreClaimStatus:
    def __init__(self, store: ObjectStore, *, attempts: int = 5, lock_timeout_s: float = 2.0) -> None:
        """`lock_timeout_s`: how long one write waits for the store's writer lock. It runs inside a
        kubelet call, so another process holding the lock (stuck, or hostile) must cost that
        claim's status write, not the call: unbounded, it used to hang prepare past the kubelet's
        deadline and, two calls later, every prepare of the plugin."""
        self.store = store
        self.attempts = attempts
        self.lock_timeout_s = lock_timeout_s

    def apply_device_status(self, ref: Any, driver: str, entries: list[dict[str, Any]]) -> None:
        for attempt in range(self.attempts):
            claim = self.store.get(CLAIMS, ref.namespace, ref.name)
            uid = (claim.get("metadata") or {}).get("uid")
            if uid != ref.uid:
                raise ConflictError(f"resourceclaim {ref.namespace}/{ref.name}: UID is {uid}, not {ref.uid}")
            status = claim.get("status")
            if not isinstance(status, dict):
                status = claim["status"] = {}
            _check_allocated(claim, driver, entries, f"resourceclaim {ref.namespace}/{ref.name}")
            others = [d for d in status.get("devices") or [] if not (isinstance(d, Mapping) and d.get("driver") == driver)]
            devices = others + [dict(e) for e in entries]
            if devices == (status.get("devices") or []):
                return
            if devices:
                status["devices"] = devices
            else:
                status.pop("devices", None)
            # The schema part of kube-apiserver's status validation (networkData fields, types);
            # gated fields the stored claim already has stay (its allocation's consumedCounters).
            schema.validate(claim, "ResourceClaim", Features(), f"resourceclaim {ref.namespace}/{ref.name}", old=claim)
            try:
                self.store.update(CLAIMS, claim, lock_timeout_s=self.lock_timeout_s)
                return
            except ConflictError:
                if attempt == self.attempts - 1:
                    raise


def _check_allocated(claim: Mapping[str, Any], driver: str, entries: list[dict[str, Any]], where: str) -> None:
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
    allocated = {(r.get("driver"), r.get("pool"), r.get("device"), r.get("shareID") or None)
                 for r in results if isinstance(r, Mapping)}
    for i, e in enumerate(entries):
        key = (e.get("driver"), e.get("pool"), e.get("device"), e.get("shareID") or None)
        if e.get("driver") != driver or key not in allocated:
            raise InputError(f"{where}: status.devices[{i}] ({'/'.join(str(k) for k in key[:3])}) "
                             "is not a device allocated to the claim by this driver")
