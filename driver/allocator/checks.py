"""Per-candidate checks of the search that are not counters or groups: capacity, taints, constraints.

Each mirrors a piece of the upstream experimental allocator (consumable_capacity.go,
taintPreventsAllocation, matchAttribute/distinctAttribute constraints) on the parsed device model.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from driver.allocator.devices import Capacity, DeviceInfo, consumed_amount, qualify
from driver.allocator.inputs import Constraint, Request


class FatalRequestError(Exception):
    """The request itself is unusable (e.g. names a capacity twice); aborts the claim like upstream."""


def resolve_capacity_name(requested: str, device: DeviceInfo) -> str | None:
    """Fully qualified name of the device capacity a request key refers to, or None."""
    caps, driver = device.capacity, device.driver
    if requested in caps:
        return qualify(requested, driver)
    domain, sep, ident = requested.partition("/")
    if sep:
        return requested if domain == driver and ident in caps else None
    return f"{driver}/{requested}" if f"{driver}/{requested}" in caps else None


def value_from_names(device: DeviceInfo) -> set[str]:
    return {qualify(name, device.driver) for cons in device.consumes for name in cons.value_from.values()}


def capacity_consumption(
    device: DeviceInfo,
    request: Request,
    used: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
    caps: Mapping[str, Capacity],
    shared_counters_on: bool,
) -> dict[str, Fraction] | None:
    """What the request consumes of each device capacity, or None when it does not fit.

    `caps` are the device capacities keyed by qualified name. A request key that names a
    `valueFrom` capacity of the device (KEP-5941) is satisfied by counters, not by a capacity.
    Raises FatalRequestError for requests upstream rejects outright.
    """
    resolved: dict[str, Fraction] = {}
    # Only needed to resolve request keys: most requests have none, and this runs per candidate.
    via_counters = value_from_names(device) if shared_counters_on and request.capacity else set()
    for key, amount in (request.capacity or {}).items():
        name = resolve_capacity_name(key, device)
        if name is None:
            if qualify(key, device.driver) in via_counters:
                continue
            return None
        if name in resolved:
            raise FatalRequestError(f"capacity {name.split('/', 1)[1]!r} requested twice (as {key!r} and another spelling)")
        resolved[name] = amount
    consumed = {}
    for name, cap in caps.items():
        amount = consumed_amount(resolved.get(name), cap.value, cap.policy)
        if amount < 0:
            raise FatalRequestError(f"capacity {name!r}: capacity value is negative")
        consumed[name] = amount
    for name, cap in caps.items():
        amount = consumed[name]
        if cap.policy is not None and cap.policy.violated_by(amount):
            return None
        if used.get(name, 0) + allocating.get(name, 0) + amount > cap.value:
            return None
    return consumed


def status_capacity_name(qualified: str, device: DeviceInfo) -> str:
    """Key for consumedCapacity in the status: spelled as the device published it (upstream 1.37)."""
    return qualified if qualified in device.capacity else qualified.split("/", 1)[1]


def _tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("key") and tol.get("key") != taint.get("key"):
        return False
    if tol.get("operator", "Equal") == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def taint_blocks(device: DeviceInfo, request: Request) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint the request does not tolerate, if any."""
    for taint in device.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
            _tolerates(t, taint) for t in request.tolerations
        ):
            return taint
    return None


def lookup_attribute(device: DeviceInfo, fq_name: str) -> tuple | None:
    """(type, value) of a fully qualified attribute; unqualified names are in the driver's domain."""
    attrs = device.raw.get("attributes") or {}
    raw = attrs.get(fq_name)
    if raw is None:
        domain, _, ident = fq_name.partition("/")
        if domain == device.driver:
            raw = attrs.get(ident)
    if not isinstance(raw, Mapping):
        return None
    for kind in ("string", "int", "bool", "version"):
        if kind in raw:
            return (kind, raw[kind])
    return None  # list-typed attributes need DRAListTypeAttributes, which this allocator does not model


class ConstraintState:
    """Incremental state of one claim constraint, with exact undo for backtracking."""

    def __init__(self, constraint: Constraint):
        self.constraint = constraint
        self.count = 0
        self.value: tuple | None = None
        self.seen: dict[tuple, int] = {}

    def add(self, request: Request, device: DeviceInfo) -> bool:
        if not self.constraint.applies(request):
            return True
        value = lookup_attribute(device, self.constraint.attribute)
        if value is None:
            return False
        if self.constraint.kind == "matchAttribute":
            if self.count and value != self.value:
                return False
            if not self.count:
                self.value = value
        else:
            if self.seen.get(value):
                return False
            self.seen[value] = self.seen.get(value, 0) + 1
        self.count += 1
        return True

    def remove(self, request: Request, device: DeviceInfo) -> None:
        if not self.constraint.applies(request):
            return
        self.count -= 1
        if self.constraint.kind == "distinctAttribute":
            value = lookup_attribute(device, self.constraint.attribute)
            self.seen[value] -= 1
        elif not self.count:
            self.value = None
