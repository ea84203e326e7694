"""Per-candidate checks of the search that are not counters or groups: capacity, taints, constraints.

Each mirrors a piece of the upstream experimental allocator (consumable_capacity.go,
taintPreventsAllocation, matchAttribute/distinctAttribute constraints) on the parsed device model.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from driver.allocator.taintrules import first_untolerated
from driver.allocator.devices import Capacity, DeviceInfo, consumed_amount, qualify
from driver.allocator.derived import derived_value
from driver.allocator.inputs import Constraint, Request
from driver.errors import AllocationError
from driver.allocator.rules import request_driven_counters
from driver.model.quantity import format_quantity


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


def _requested_capacity(
    device: DeviceInfo, request: Request, shared_counters_on: bool
) -> tuple[dict[str, Fraction], str | None]:
    """The request's capacity amounts keyed by the device capacity they name (qualified), and the
    first request key the device has no capacity for (None when every key resolves).

    A key that names a `valueFrom` capacity of the device (KEP-5941) is satisfied by counters, not
    by a capacity, and is left out. Raises FatalRequestError for a capacity requested twice.
    """
    resolved: dict[str, Fraction] = {}
    if not request.capacity:  # most requests: this runs per candidate
        return resolved, None
    via_counters = value_from_names(device) if shared_counters_on else set()
    for key, amount in request.capacity.items():
        name = resolve_capacity_name(key, device)
        if name is None:
            if qualify(key, device.driver) in via_counters:
                continue
            return resolved, key
        if name in resolved:
            raise FatalRequestError(f"capacity {name.split('/', 1)[1]!r} requested twice (as {key!r} and another spelling)")
        resolved[name] = amount
    return resolved, None


def capacity_consumption(
    device: DeviceInfo,
    request: Request,
    used: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
    caps: Mapping[str, Capacity],
    shared_counters_on: bool,
    whole_units: bool = False,
) -> dict[str, Fraction] | None:
    """What the request consumes of each device capacity, or None when it does not fit.

    `caps` are the device capacities keyed by qualified name. `whole_units`: DRAFractionalCapacityRange
    is off (RequestPolicy.round_up). Raises FatalRequestError for requests upstream rejects outright.
    """
    resolved, missing = _requested_capacity(device, request, shared_counters_on)
    if missing is not None:
        return None
    consumed = {}
    for name, cap in caps.items():
        asked = resolved.get(name)
        amount = consumed_amount(asked, cap.value, cap.policy, whole_units)
        if amount < 0:
            raise FatalRequestError(f"capacity {name!r}: capacity value is negative")
        if whole_units and asked is not None and _int64_step_overflow(asked, amount, cap):
            # Upstream rounds on Quantity.Value() here, which wraps past int64: it aborts the
            # allocation ("cannot be represented") rather than skip to another device.
            raise FatalRequestError(f"capacity {name!r}: request {format_quantity(asked)} rounded on the step "
                                    f"range cannot be represented as a 64-bit integer")
        consumed[name] = amount
    for name, cap in caps.items():
        amount = consumed[name]
        if cap.policy is not None and cap.policy.violated_by(amount, whole_units):
            return None
        if used.get(name, 0) + allocating.get(name, 0) + amount > cap.value:
            return None
    return consumed


INT64_MAX = 2**63 - 1


def _int64_step_overflow(asked: Fraction, amount: Fraction, cap: Capacity) -> bool:
    """Whole-unit step rounding of `asked` leaves int64 (DRAFractionalCapacityRange off)."""
    policy = cap.policy
    if policy is None or policy.min is None or policy.step is None or asked < policy.min:
        return False
    return asked > INT64_MAX or amount > INT64_MAX


def capacity_shortfall(
    device: DeviceInfo,
    request: Request,
    used: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
    caps: Mapping[str, Capacity],
    shared_counters_on: bool,
    whole_units: bool = False,
) -> str | None:
    """Why `capacity_consumption` said no, with amounts: what was asked and what is allowed or left."""
    resolved, missing = _requested_capacity(device, request, shared_counters_on)
    if missing is not None:
        return f"asks for capacity {missing}, which the device does not have"
    for name, cap in caps.items():
        short = name.split("/", 1)[1] if name.startswith(device.driver + "/") else name
        asked = resolved.get(name)
        amount = consumed_amount(asked, cap.value, cap.policy, whole_units)
        asked_text = f"asks {format_quantity(asked, like=cap.text)}" if asked is not None else "asks nothing (takes the default)"
        if cap.policy is not None and cap.policy.violated_by(amount, whole_units):
            rounded = f" (rounded to {format_quantity(amount, like=cap.text)})" if asked is not None and amount != asked else ""
            return f"capacity {short}: {asked_text}{rounded}, requestPolicy allows {cap.policy.describe(cap.text)}"
        taken = used.get(name, 0) + allocating.get(name, 0)
        if taken + amount > cap.value:
            return (f"capacity {short}: needs {format_quantity(amount, like=cap.text)}, "
                    f"{format_quantity(max(cap.value - taken, 0), like=cap.text)} of {cap.text} left")
    return None


def counter_shortfall(alloc: Any, device: DeviceInfo, pool: Any, counter_set: str, request: Request) -> str | None:
    """Which counters of `counter_set` the device needs more of than is left, with amounts.

    A request-driven (`valueFrom`, KEP-5941) amount says where it came from: the capacity the
    request asked for, or, when the request names none, the counter's requestPolicy default (or the
    whole counter when there is no default), so "refused for its default bandwidth" is visible."""
    key = device.counter_key(counter_set)
    over = alloc.pool_overcommitted(pool)
    if over is not None:
        return f"counter set {over} is already over-committed by existing allocations ({_overcommit(alloc, pool, over)})"
    counters = pool.counter_sets.get(counter_set, {})
    needs: dict[str, Fraction] = {}
    origin: dict[str, str] = {}
    for cons in device.consumes:
        if cons.counter_set == counter_set:
            needs.update(cons.static)
    if alloc.features.shared_consumable_capacity:
        asked = {qualify(k, device.driver): (k, v) for k, v in (request.capacity or {}).items()}
        driven = request_driven_counters(device, {q: v for q, (_, v) in asked.items()}, pool.counter_sets) or ()
        sources = {name: cap for cons in device.consumes if cons.counter_set == counter_set
                   for name, cap in cons.value_from.items()}
        for cs, amounts in driven:
            if cs != counter_set:
                continue
            for name, amount in amounts.items():
                needs[name] = needs.get(name, 0) + amount
                origin[name] = _driven_origin(request, sources.get(name, ""), device.driver, asked, amount,
                                               counters.get(name))
    parts = []
    for name, amount in sorted(needs.items()):
        left = alloc.ledger.available(key, name)
        if amount > left:
            total = counters.get(name)
            like = total.text if total is not None else None
            parts.append(f"{name} needs {format_quantity(amount, like=like)}{origin.get(name, '')}, "
                         f"{format_quantity(max(left, 0), like=like)} left")
    return "; ".join(parts) or None


def _driven_origin(request: Request, cap_name: str, driver: str, asked: Mapping[str, tuple[str, Fraction]],
                   amount: Fraction, counter: Any) -> str:
    """Where a request-driven amount came from, as " (...)" after it."""
    hit = asked.get(qualify(cap_name, driver)) if cap_name else None
    if hit is not None:
        key, value = hit
        if value == amount:
            return f" (capacity.requests[{key}])"
        like = counter.text if counter is not None else None
        return f" (capacity.requests[{key}] {format_quantity(value, like=like)}, rounded up by the counter's requestPolicy)"
    unasked = f"request {request.name} sets no capacity.requests[{cap_name.rpartition('/')[2] or cap_name}]"
    if counter is not None and counter.policy is not None and counter.policy.default is not None:
        return f" (the counter's requestPolicy default: {unasked})"
    return f" (the whole counter: {unasked} and the counter has no requestPolicy default)"


def _overcommit(alloc: Any, pool: Any, counter_set: str) -> str:
    """`memory 50Gi used of 40Gi` for each counter of an over-committed set."""
    key = (pool.driver, pool.name, counter_set)
    counters = pool.counter_sets.get(counter_set, {})
    out = []
    for name in alloc.ledger.over(key):
        total = counters.get(name)
        used = alloc.ledger.used.get(key, {}).get(name, 0)
        if total is None:
            out.append(f"{name} {format_quantity(used)} used of an undefined counter")
        else:
            out.append(f"{name} {format_quantity(used, like=total.text)} used of {format_quantity(total.value, like=total.text)}")
    return ", ".join(out)


def status_capacity_name(qualified: str, device: DeviceInfo) -> str:
    """Key for consumedCapacity in the status: spelled as the device published it (upstream 1.37)."""
    return qualified if qualified in device.capacity else qualified.split("/", 1)[1]


def taint_blocks(device: DeviceInfo, request: Request) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint the device's slice lists that the request does not
    tolerate, if any (DeviceTaintRule taints: `Allocator.blocking_taint`)."""
    return first_untolerated(device.taints, request.tolerations) if device.taints else None


def lookup_attribute(device: DeviceInfo, fq_name: str) -> Mapping[str, Any] | None:
    """The raw attribute value of a fully qualified name; unqualified names are in the driver's domain."""
    attrs = device.raw.get("attributes") or {}
    raw = attrs.get(fq_name)
    if raw is None:
        domain, _, ident = fq_name.partition("/")
        if domain == device.driver:
            raw = attrs.get(ident)
    return raw if isinstance(raw, Mapping) else None


_LISTS = (("ints", "int"), ("bools", "bool"), ("strings", "string"), ("versions", "version"))
_SCALARS = ("string", "int", "bool", "version")


def attribute_set(raw: Mapping[str, Any] | None) -> tuple[str, frozenset] | None:
    """DRAListTypeAttributes view of a value: (element type, set of elements); a scalar is a
    one-element set. None for an empty list or no value (such a device satisfies no constraint)."""
    if raw is None:
        return None
    for plural, kind in _LISTS:
        values = raw.get(plural)
        if values:
            return kind, frozenset(values)
    for kind in _SCALARS:
        if raw.get(kind) is not None:
            return kind, frozenset((raw[kind],))
    return None


def scalar_value(raw: Mapping[str, Any]) -> tuple[str, Any] | None:
    """(type, value) of a scalar attribute; None for list-typed or empty values."""
    for kind in _SCALARS:
        if raw.get(kind) is not None:
            return kind, raw[kind]
    return None


class ConstraintState:
    """Incremental state of one claim constraint, with exact undo for backtracking.

    With DRAListTypeAttributes (upstream 1.37 semantics) every value is a set: matchAttribute keeps
    the rolling intersection of the chosen devices' sets (it must stay non-empty, and the types must
    agree), distinctAttribute needs the sets pairwise disjoint. Without the gate only scalars
    compare: a list-valued attribute never matches or differs from another device's value, though
    (as upstream) the first device of a constraint is taken whatever its value.
    """

    def __init__(self, constraint: Constraint, list_types: bool = True, derived: bool = False, claim: str = ""):
        self.constraint = constraint
        self.list_types = list_types
        self.derived = derived  # DRADerivedAttributes: requests' derived attributes shadow the device's
        self.claim = claim
        self.entries: list[tuple[DeviceInfo, Any]] = []  # in the order devices were added
        self.running: list[tuple[str, frozenset] | None] = []  # matchAttribute: intersection so far

    @property
    def count(self) -> int:
        return len(self.entries)

    def add(self, request: Request, device: DeviceInfo) -> bool:
        if not self.constraint.applies(request):
            return True
        found, value = self._compared(request, device)
        if not found:
            return False
        if self.constraint.kind == "matchAttribute":
            ok, narrowed = self._match(value)
            if not ok:
                return False
            self.running.append(narrowed)
        elif self.entries and not self._distinct(value):
            return False
        self.entries.append((device, value))
        return True

    def _compared(self, request: Request, device: DeviceInfo) -> tuple[bool, Any]:
        """(whether the device has the attribute, what the constraint compares: the attribute's set
        of values with list types, else the attribute itself)."""
        raw = self._value(request, device)
        if raw is None:
            return False, None
        return True, attribute_set(raw) if self.list_types else raw

    def _value(self, request: Request, device: DeviceInfo) -> Mapping[str, Any] | None:
        """The constraint's attribute for a device chosen for `request`: the request's derived
        attribute of that name when there is one (KEP-6080 shadowing), else the device's own."""
        if self.derived and request.derived:
            wanted = self.constraint.attribute
            for name, selector in request.derived:
                if name == wanted:
                    try:
                        return derived_value(device, name, selector, request.name, self.list_types)
                    except AllocationError as exc:
                        raise AllocationError(f"claim {self.claim}: {exc}") from None
        return lookup_attribute(device, self.constraint.attribute)

    def describe(self, request: Request | None = None) -> str:
        """The constraint in words, saying which requests derive its attribute (when they do)."""
        text = self.constraint.describe()
        if self.derived and request is not None and any(n == self.constraint.attribute for n, _ in request.derived):
            text += f" (derived attribute of request {request.name})"
        return text

    def admits(self, request: Request, device: DeviceInfo) -> bool:
        """Whether `add` would take the device, without taking it (the search asks first: it is
        much cheaper than charging counters for a device the constraint refuses anyway)."""
        if not self.constraint.applies(request):
            return True
        found, value = self._compared(request, device)
        if not found:
            return False
        if self.constraint.kind == "matchAttribute":
            return self._match(value)[0]
        return not self.entries or self._distinct(value)

    def _match(self, value: Any) -> tuple[bool, Any]:
        if not self.entries:
            if self.list_types:
                return value is not None, value
            return True, value
        if self.list_types:
            current = self.running[-1]
            if value is None or current is None or value[0] != current[0] or current[1].isdisjoint(value[1]):
                return False, None
            return True, (current[0], current[1] & value[1])
        first = scalar_value(self.entries[0][1])
        new = scalar_value(value)
        return new is not None and new == first, None

    def _distinct(self, value: Any) -> bool:
        if self.list_types:
            if value is None:
                return False
            return all(old is None or old[0] != value[0] or old[1].isdisjoint(value[1]) for _, old in self.entries)
        new = scalar_value(value)
        if new is None:
            return False
        return all(scalar_value(old) != new for _, old in self.entries)

    def remove(self, request: Request, device: DeviceInfo) -> None:
        if not self.constraint.applies(request):
            return
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i][0] is device:
                del self.entries[i]
                break
        if self.constraint.kind == "matchAttribute":
            del self.running[i:]
            for _, value in self.entries[i:]:  # only when a device other than the newest left
                previous = self.running[-1] if self.running else None
                self.running.append(value if previous is None or not self.list_types
                                    else (value[0], previous[1] & value[1]))
