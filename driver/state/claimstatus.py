"""ResourceClaim `status.devices` for prepared VFs (DRAResourceClaimDeviceStatus, GA in 1.37).

What we report, per prepared SR-IOV VF of a claim: driver, pool, device (and shareID when the
allocation has one — the four fields key the list), a `Ready` condition, and `networkData` with
the VF's interface name and hardware address (sysfs, read at prepare time; no IPs: no CNI runs
here). Entries are removed again on unprepare. GPU-like devices get no entry: there is nothing a
user would learn from one that the allocation does not already say.

How: through a DeviceStatusSink — the API server (driver.kube.claimstatus: server-side apply of
the status subresource, field manager = driver name, so other drivers' entries are untouched) or
the local store (driver.store.claimstatus). Status is informational: a failure never fails the
prepare. A 403 (RBAC or the admission policy forbids it) is a warning once, naming the permission
to grant, then debug. All writes of one kubelet call share a time budget, so a slow API server
cannot push prepare past the kubelet's 45 s deadline.

When: in the same step as the CDI specs, before the claim is recorded as PrepareCompleted, so a
crash at any point is followed by a retried prepare that writes it; an entry that already says
what we would write (a retry, a second pod) is not written again, and a still-Ready condition
keeps its lastTransitionTime.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from driver.deadline import Deadline
from driver.errors import ConflictError, FakeDraError, ForbiddenError, NotFoundError
from driver.slices.names import env_token
from driver.model.deviceattrs import attr
from driver.state.types import ClaimRef, NetworkData, PreparedDevice
from driver.store.objectstore import now_timestamp

log = logging.getLogger("fake-dra.claimstatus")

READY = "Ready"
REASON = "Prepared"
MESSAGE = "VF prepared for the claim's containers by the kubelet plugin"
REQUIRED_PERMISSION = ("patch on resourceclaims/status and associated-node:patch on resourceclaims/driver "
                       "(resourceNames: [<driver name>])")


class DeviceStatusSink(Protocol):
    """Where status.devices entries go. `apply_device_status(ref, driver, entries)` makes the
    claim's entries of `driver` exactly `entries` ([] removes them) and leaves other drivers'
    entries alone. Raises NotFoundError (claim gone), ConflictError (UID changed: a new claim
    under the same name), ForbiddenError (403), another FakeDraError or OSError otherwise."""

    def apply_device_status(self, ref: ClaimRef, driver: str, entries: list[dict[str, Any]]) -> None: ...


def _key(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    return (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID") or None)


def current_entries(claim: Mapping[str, Any], driver: str) -> list[dict[str, Any]]:
    """The claim's status.devices entries of `driver` as stored."""
    devices = (claim.get("status") or {}).get("devices") or []
    if not isinstance(devices, list):  # a hostile object; what we write replaces our part of it
        return []
    return [dict(d) for d in devices if isinstance(d, Mapping) and d.get("driver") == driver]


def is_vf(device: PreparedDevice, published: Mapping[str, Any] | None, driver: str) -> bool:
    """A VF by its published `type`, or (device gone from the inventory) by the type recorded in
    its CDI env at prepare time."""
    if published:
        return attr(dict(published), "type", driver) == "vf"
    return device.env.get(f"FAKE_DRA_{env_token(device.device)}_TYPE") == "vf"


def vf_entries(driver: str, claim: Mapping[str, Any], devices: Sequence[PreparedDevice],
               pool_devices: Mapping[str, Mapping[str, Any]], network_data: NetworkData | None,
               now: str) -> list[dict[str, Any]]:
    """The status.devices entries this driver wants on the claim (pure apart from network_data)."""
    existing = {_key(e): e for e in current_entries(claim, driver)}
    generation = (claim.get("metadata") or {}).get("generation")
    out = []
    for dev in devices:
        published = pool_devices.get(dev.device)
        if not is_vf(dev, published, driver):
            continue
        entry: dict[str, Any] = {"driver": driver, "pool": dev.pool, "device": dev.device}
        if dev.share_id:
            entry["shareID"] = dev.share_id
        since = now
        conditions = existing.get(_key(entry), {}).get("conditions")
        for cond in conditions if isinstance(conditions, list) else ():
            if isinstance(cond, Mapping) and cond.get("type") == READY and cond.get("status") == "True":
                since = str(cond.get("lastTransitionTime") or now)  # no transition: keep the time
        condition: dict[str, Any] = {"type": READY, "status": "True", "reason": REASON, "message": MESSAGE,
                                     "lastTransitionTime": since}
        if isinstance(generation, int):
            condition["observedGeneration"] = generation
        entry["conditions"] = [condition]
        net = network_data(published) if (network_data is not None and published) else None
        if net:
            entry["networkData"] = dict(net)
        out.append(entry)
    return out


def _same(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    """Equal as sets of entries (the list is keyed; its order carries no meaning)."""
    return sorted(json.dumps(e, sort_keys=True) for e in a) == sorted(json.dumps(e, sort_keys=True) for e in b)


class ClaimStatusReporter:
    """Writes and clears the VF entries of prepared claims through a sink, never raising."""

    def __init__(self, sink: DeviceStatusSink, driver_name: str, *, network_data: NetworkData | None = None,
                 budget_s: float = 10.0, write_reserve_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, now: Callable[[], str] = now_timestamp) -> None:
        self._sink = sink
        self.driver_name = driver_name
        self._network_data = network_data
        self._budget_s = budget_s
        # A write is started only while the kubelet call has this long left (the API sink's request
        # timeout), so a slow API server can never push the call past its deadline or a shutdown's
        # cancellation: the status is informational, the call's answer is not.
        self._write_reserve_s = write_reserve_s
        self._clock = clock
        self._now = now
        self._forbidden_logged = False
        self.writes = 0  # successful writes (metrics, tests)

    def prepared(self, items: Sequence[tuple[ClaimRef, Mapping[str, Any], Sequence[PreparedDevice]]],
                 pool_devices: Mapping[str, Mapping[str, Any]], call: Deadline | None = None) -> None:
        """After the claims' CDI specs are written: make their VF entries say Ready (within `call`)."""
        deadline = self._clock() + self._budget_s
        now = self._now()
        for ref, claim, devices in items:
            try:
                want = vf_entries(self.driver_name, claim, devices, pool_devices, self._network_data, now)
                if _same(want, current_entries(claim, self.driver_name)):
                    continue  # already says this (a retried prepare, a claim without VFs)
            except Exception as exc:  # noqa: BLE001 - informational: this claim's status only
                log.warning("cannot compute the claim's device status; skipping it",
                            extra={"claim": f"{ref.namespace}/{ref.name}", "error": f"{type(exc).__name__}: {exc}"})
                continue
            self._apply(ref, want, deadline, "write", call)

    def unprepared(self, items: Sequence[tuple[ClaimRef, Sequence[PreparedDevice]]],
                   pool_devices: Mapping[str, Mapping[str, Any]], call: Deadline | None = None) -> None:
        """After the claims' CDI specs are removed: drop their entries (claims without VFs never
        had any, so they cost no request)."""
        deadline = self._clock() + self._budget_s
        for ref, devices in items:
            if any(is_vf(d, pool_devices.get(d.device), self.driver_name) for d in devices):
                self._apply(ref, [], deadline, "clear", call)

    def _apply(self, ref: ClaimRef, entries: list[dict[str, Any]], deadline: float, what: str,
               call: Deadline | None = None) -> None:
        claim = f"{ref.namespace}/{ref.name}"
        if self._clock() > deadline:
            log.warning(f"claim status {what} skipped: this call's time budget for status writes is spent",
                        extra={"claim": claim, "budget_s": self._budget_s})
            return
        if call is not None and call.remaining() < self._write_reserve_s:
            log.warning(f"claim status {what} skipped: the kubelet call is cancelled or too close to its deadline",
                        extra={"claim": claim, "remaining_s": round(call.remaining(), 3)})
            return
        try:
            self._sink.apply_device_status(ref, self.driver_name, entries)
            self.writes += 1
        except ForbiddenError as exc:
            if not self._forbidden_logged:
                self._forbidden_logged = True
                log.warning(f"not allowed to {what} ResourceClaim status.devices; skipping status for VFs "
                            f"(grant {REQUIRED_PERMISSION})", extra={"claim": claim, "error": str(exc)})
            else:
                log.debug("claim status forbidden", extra={"claim": claim})
        except (NotFoundError, ConflictError) as exc:
            # Deleted, or replaced by a new claim of the same name: nothing of ours to update.
            log.info(f"claim status {what} skipped: claim gone or replaced", extra={"claim": claim, "error": str(exc)})
        except (FakeDraError, OSError) as exc:
            log.warning(f"claim status {what} failed; the claim stays prepared",
                        extra={"claim": claim, "error": str(exc)})
