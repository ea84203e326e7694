"""Opaque driver configuration (`config[].opaque` with this driver's name) parsed and validated.

Why: the DeviceClass and the claim may carry vendor parameters; the kubelet plugin is the only
component that interprets them, so a typo must become a per-claim error that names the config
entry and field instead of being ignored. Versioned kinds (apiVersion fake-dra.example.com/v1alpha1):

    kind: GpuConfig            # gpu, mig, vgpu, timeshare devices
    sharing:
      strategy: Exclusive | TimeSlicing | MPS
      timeSlicing: {interval: Default | Short | Medium | Long}
      mps: {activeThreadPercentage: 1-100}
    kind: VfConfig             # vf, nic devices
    vlan: 0-4094
    mtu: 68-9216
    trust: bool
    spoofCheck: bool

Allocation config entries are applied in order (class entries precede claim entries in the
allocation result), later entries win; `requests` limits an entry to those requests (a request
`r` also covers its subrequests `r/x`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver.errors import PrepareError

API_VERSION = "fake-dra.example.com/v1alpha1"
GPU_TYPES = frozenset({"gpu", "mig", "vgpu", "timeshare"})
NIC_TYPES = frozenset({"vf", "nic"})


@dataclass(frozen=True)
class DeviceConfig:
    """A validated opaque config: its kind and the normalized parameters exported to CDI."""

    kind: str
    params: Mapping[str, Any]
    where: str


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PrepareError(f"{where}: must be an object, got {type(value).__name__}")
    return value


def _only(value: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise PrepareError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _enum(value: Any, choices: Sequence[str], where: str) -> str:
    if value not in choices:
        raise PrepareError(f"{where}: {value!r} is not one of {', '.join(choices)}")
    return value


def _int(value: Any, lo: int, hi: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise PrepareError(f"{where}: must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise PrepareError(f"{where}: must be true or false, got {value!r}")
    return value


def _gpu(p: Mapping[str, Any], where: str) -> dict[str, Any]:
    _only(p, {"apiVersion", "kind", "sharing"}, where)
    sharing = _obj(p.get("sharing", {}), f"{where}.sharing")
    _only(sharing, {"strategy", "timeSlicing", "mps"}, f"{where}.sharing")
    strategy = _enum(sharing.get("strategy", "Exclusive"), ("Exclusive", "TimeSlicing", "MPS"), f"{where}.sharing.strategy")
    out: dict[str, Any] = {"strategy": strategy}
    if "timeSlicing" in sharing:
        if strategy != "TimeSlicing":
            raise PrepareError(f"{where}.sharing.timeSlicing: only valid with strategy TimeSlicing")
        ts = _obj(sharing["timeSlicing"], f"{where}.sharing.timeSlicing")
        _only(ts, {"interval"}, f"{where}.sharing.timeSlicing")
        out["interval"] = _enum(ts.get("interval", "Default"), ("Default", "Short", "Medium", "Long"),
                                f"{where}.sharing.timeSlicing.interval")
    if "mps" in sharing:
        if strategy != "MPS":
            raise PrepareError(f"{where}.sharing.mps: only valid with strategy MPS")
        mps = _obj(sharing["mps"], f"{where}.sharing.mps")
        _only(mps, {"activeThreadPercentage"}, f"{where}.sharing.mps")
        if "activeThreadPercentage" in mps:
            out["activeThreadPercentage"] = _int(mps["activeThreadPercentage"], 1, 100,
                                                 f"{where}.sharing.mps.activeThreadPercentage")
    return out


def _vf(p: Mapping[str, Any], where: str) -> dict[str, Any]:
    _only(p, {"apiVersion", "kind", "vlan", "mtu", "trust", "spoofCheck"}, where)
    out: dict[str, Any] = {}
    if "vlan" in p:
        out["vlan"] = _int(p["vlan"], 0, 4094, f"{where}.vlan")
    if "mtu" in p:
        out["mtu"] = _int(p["mtu"], 68, 9216, f"{where}.mtu")
    for key in ("trust", "spoofCheck"):
        if key in p:
            out[key] = _bool(p[key], f"{where}.{key}")
    return out


_KINDS = {"GpuConfig": (_gpu, GPU_TYPES), "VfConfig": (_vf, NIC_TYPES)}


def parse_opaque(parameters: Any, where: str) -> DeviceConfig:
    """Validate one opaque `parameters` object; PrepareError names `where` and the field."""
    p = _obj(parameters, where)
    if p.get("apiVersion") != API_VERSION:
        raise PrepareError(f"{where}.apiVersion: expected {API_VERSION!r}, got {p.get('apiVersion')!r}")
    kind = p.get("kind")
    if kind not in _KINDS:
        raise PrepareError(f"{where}.kind: unknown kind {kind!r} (known: {', '.join(sorted(_KINDS))})")
    parse, _types = _KINDS[kind]
    return DeviceConfig(kind=kind, params=parse(p, where), where=where)


def _covers(entry_requests: Sequence[str], request: str) -> bool:
    if not entry_requests:
        return True
    parent = request.split("/", 1)[0]
    return request in entry_requests or parent in entry_requests


def configs_for_results(
    allocation_config: Any, driver_name: str, results: Sequence[Mapping[str, Any]], device_types: Sequence[str]
) -> list[DeviceConfig | None]:
    """Effective config per result (same order as `results`); entries of other drivers are ignored.

    Every entry of this driver is validated even if it matches no result, so a malformed class
    config fails loudly instead of lurking until some request happens to match it.
    """
    if allocation_config in (None, []):
        return [None] * len(results)
    if not isinstance(allocation_config, list):
        raise PrepareError("status.allocation.devices.config: must be a list")
    parsed: list[tuple[list[str], DeviceConfig]] = []
    for i, entry in enumerate(allocation_config):
        where = f"config[{i}]"
        entry = _obj(entry, where)
        opaque = entry.get("opaque")
        if not isinstance(opaque, Mapping) or opaque.get("driver") != driver_name:
            continue
        requests = entry.get("requests") or []
        if not isinstance(requests, list) or not all(isinstance(r, str) for r in requests):
            raise PrepareError(f"{where}.requests: must be a list of request names")
        source = entry.get("source", "FromClaim")
        parsed.append((requests, parse_opaque(opaque.get("parameters"), f"{where}.opaque.parameters ({source})")))
    out: list[DeviceConfig | None] = []
    for result, dtype in zip(results, device_types, strict=True):
        chosen: DeviceConfig | None = None
        for requests, cfg in parsed:
            if _covers(requests, str(result.get("request", ""))):
                chosen = cfg
        if chosen is not None and dtype not in _KINDS[chosen.kind][1]:
            raise PrepareError(
                f"{chosen.where}: {chosen.kind} cannot configure device {result.get('device')!r} of type {dtype!r}"
            )
        out.append(chosen)
    return out
