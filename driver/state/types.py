"""Values and interfaces shared by prepare/unprepare, CDI, checkpoint and health.

Why: the state layer does no gRPC and no Kubernetes I/O; the composition root injects a claim
source (local store or API server) and a pool provider (discovery + rendering), both described
here as Protocols so tests can hand in plain objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from driver.deadline import Deadline
from driver.state.names import shorten

# A published device -> its resource.k8s.io/v1 NetworkDeviceData (interfaceName, hardwareAddress),
# or None when it has no network interface (driver.state.netinfo reads it from sysfs).
NetworkData = Callable[[Mapping[str, Any]], "dict[str, str] | None"]


@dataclass(frozen=True)
class ClaimRef:
    """What the kubelet sends per claim."""

    namespace: str
    name: str
    uid: str


class ClaimSource(Protocol):
    """Reads a ResourceClaim as a raw dict. Raises NotFoundError when it does not exist and
    another FakeDraError when the source is unavailable (after its own retries, which must end by
    `deadline` and on its cancellation: driver.deadline.Deadline.check / wait)."""

    def get_claim(self, namespace: str, name: str, deadline: Deadline | None = None) -> dict[str, Any]: ...


class PoolView(Protocol):
    """The part of driver.slices.Pool the plugin needs (the current rendered pool)."""

    name: str
    slices: tuple[dict[str, Any], ...]

    def devices(self) -> dict[str, dict[str, Any]]: ...


@dataclass(frozen=True)
class PreparedDevice:
    """One allocated device of a prepared claim, as recorded in the checkpoint."""

    request_names: tuple[str, ...]
    pool: str
    device: str
    cdi_device_ids: tuple[str, ...]
    # Kept so revalidation after a restart sees what was placed: valueFrom snapshots, shares.
    consumed_counters: tuple[dict[str, Any], ...] | None = None
    share_id: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    # Allocated with adminAccess: kube-scheduler does not count such a result as allocated (no
    # exclusivity, counters or compatibility groups), so revalidation must not either.
    admin_access: bool = False
    # The personality's normalized opaque config (AppliedConfig.canonical), when it compares configs of
    # claims sharing a device (NVIDIA's consumable shares); fake-dra's own configs leave it unset.
    config: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requestNames": list(self.request_names),
            "pool": self.pool,
            "device": self.device,
            "cdiDeviceIDs": list(self.cdi_device_ids),
        }
        if self.consumed_counters is not None:
            out["consumedCounters"] = [dict(c) for c in self.consumed_counters]
        if self.share_id is not None:
            out["shareID"] = self.share_id
        if self.env:
            out["env"] = dict(self.env)
        if self.admin_access:
            out["adminAccess"] = True
        if self.config is not None:
            out["config"] = self.config
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PreparedDevice:
        """ValueError/TypeError/KeyError for a record of the wrong shape: a checkpoint holding one is
        'corrupt' (moved aside, rebuilt from the CDI specs), a spec holding one is skipped. Checked
        here because revalidation trusts these records: a non-string shareID used to make every
        later claim on the same counters fail with an error blaming that new claim."""
        consumed = d.get("consumedCounters")
        share_id = d.get("shareID")
        if not isinstance(d["pool"], str) or not isinstance(d["device"], str):
            raise ValueError("a prepared device needs a string pool and device")
        if share_id is not None and not isinstance(share_id, str):
            raise ValueError(f"device {d['device']}: shareID must be a string")
        if consumed is not None and not (isinstance(consumed, list) and all(isinstance(c, Mapping) for c in consumed)):
            raise ValueError(f"device {d['device']}: consumedCounters must be a list of objects")
        config = d.get("config")
        if config is not None and not isinstance(config, str):
            raise ValueError(f"device {d['device']}: config must be a string")
        return cls(
            request_names=tuple(str(r) for r in d.get("requestNames", ())),
            pool=d["pool"],
            device=d["device"],
            cdi_device_ids=tuple(str(c) for c in d.get("cdiDeviceIDs", ())),
            consumed_counters=tuple(dict(c) for c in consumed) if consumed is not None else None,
            share_id=share_id,
            env={str(k): str(v) for k, v in (d.get("env") or {}).items()},
            admin_access=d.get("adminAccess") is True,
            config=config,
        )


@dataclass(frozen=True)
class PrepareResult:
    """Per-claim answer: devices on success, or an error string the kubelet will retry on."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class DeviceHealthStatus:
    pool: str
    device: str
    health: str  # "HEALTHY" | "UNHEALTHY" | "UNKNOWN"
    last_updated: int
    message: str = ""


def dedupe_refs(refs: Sequence[ClaimRef], results: dict[str, Any], error: Callable[..., Any]) -> list[ClaimRef]:
    """Unique claims by UID; a UID sent twice with different names is an error for that UID."""
    seen: dict[str, ClaimRef] = {}
    bad: set[str] = set()
    for ref in refs:
        prev = seen.get(ref.uid)
        if prev is None:
            seen[ref.uid] = ref
        elif prev != ref:
            bad.add(ref.uid)
            results[ref.uid] = error(error=f"claim UID {shorten(ref.uid)} listed twice with different names "
                                           f"({shorten(prev.namespace)}/{shorten(prev.name)} and "
                                           f"{shorten(ref.namespace)}/{shorten(ref.name)})")
    return [r for uid, r in seen.items() if uid not in bad]
