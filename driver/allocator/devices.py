"""Parsed, allocation-ready views of ResourceSlice devices and counter sets.

The allocator and the plugin's preparation-time revalidation both need the same facts about a
device: what it consumes from which counter set (static `value` or request-driven `valueFrom`), its
compatibility groups per counter set, its capacities and their request policies. Parsing them once
into small frozen objects keeps the search loop free of string-to-quantity work and guarantees that
both paths read the slice the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.errors import InputError
from driver.model.quantity import format_quantity, parse_quantity

DeviceKey = tuple[str, str, str]  # driver, pool, device
CounterKey = tuple[str, str, str]  # driver, pool, counter set


def _q(value: Any, where: str) -> Fraction:
    """A quantity as an exact number: an int when whole (most are; int arithmetic is much cheaper
    than Fraction arithmetic in the search's counter accounting), else a Fraction."""
    try:
        q = parse_quantity(value)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return q.numerator if q.denominator == 1 else q  # type: ignore[return-value]


@dataclass(frozen=True)
class RequestPolicy:
    """`requestPolicy` of a device capacity or (KEP-5941) of a shared counter."""

    default: Fraction | None = None
    min: Fraction | None = None
    max: Fraction | None = None
    step: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, where: str) -> RequestPolicy | None:
        if not raw:
            return None
        rng = raw.get("validRange") or {}
        return cls(
            default=_q(raw["default"], f"{where}.default") if raw.get("default") is not None else None,
            min=_q(rng["min"], f"{where}.validRange.min") if rng.get("min") is not None else None,
            max=_q(rng["max"], f"{where}.validRange.max") if rng.get("max") is not None else None,
            step=_q(rng["step"], f"{where}.validRange.step") if rng.get("step") is not None else None,
            valid_values=tuple(
                _q(v, f"{where}.validValues[{i}]") for i, v in enumerate(raw.get("validValues") or ())
            ),
        )

    def describe(self, like: str | None = None) -> str:
        """The policy in words, quantities formatted like `like` (the capacity or counter value)."""
        def q(v: Fraction) -> str:
            return format_quantity(v, like=like)

        parts = []
        if self.has_range:
            rng = [f"min {q(self.min)}" if self.min is not None else "", f"max {q(self.max)}" if self.max is not None else "",
                   f"step {q(self.step)}" if self.step is not None else ""]
            parts.append("validRange " + ", ".join(r for r in rng if r))
        elif self.valid_values:
            parts.append("validValues " + ", ".join(q(v) for v in self.valid_values))
        if self.default is not None:
            parts.append(f"default {q(self.default)}")
        return "; ".join(parts) or "no limits"

    @property
    def has_range(self) -> bool:
        return self.min is not None or self.max is not None or self.step is not None

    def round_up(self, requested: Fraction, whole_units: bool = False) -> Fraction:
        """Round a requested amount up as upstream does (validRange min/step, else validValues).

        `whole_units`: DRAFractionalCapacityRange off. Upstream then does the step arithmetic on
        Quantity.Value(), which rounds request, min and step up to whole units (200m becomes 1).
        """
        if self.min is not None:
            if requested < self.min:
                return self.min
            if self.step is None or self.step <= 0:
                return requested
            if whole_units:
                low, step = _ceil(self.min), _ceil(self.step)
                return Fraction(low + -((-(_ceil(requested) - low)) // step) * step)
            steps = -((-(requested - self.min)) // self.step)
            return self.min + steps * self.step
        for value in self.valid_values:
            if requested <= value:
                return value
        return requested

    def violated_by(self, amount: Fraction, whole_units: bool = False) -> bool:
        """True when a (rounded) amount is not acceptable under this policy (`whole_units`: see round_up)."""
        if self.default is not None and amount == self.default:
            return False
        if self.has_range:
            if self.max is not None and amount > self.max:
                return True
            if self.step is not None and self.step > 0:
                if whole_units:
                    return (_ceil(amount) - _ceil(self.min or 0)) % _ceil(self.step) != 0
                if (amount - (self.min or 0)) % self.step != 0:
                    return True
            return False
        if self.valid_values:
            return amount not in self.valid_values
        return False


def _ceil(value: Fraction) -> int:
    """Quantity.Value(): the amount rounded up to a whole unit."""
    return -((-value) // 1)


def consumed_amount(requested: Fraction | None, total: Fraction, policy: RequestPolicy | None,
                    whole_units: bool = False) -> Fraction:
    """How much a request consumes of a capacity/counter worth `total` (upstream calculateConsumedQuantity).

    No request: the policy default, else everything. A request without a policy is consumed as-is.
    """
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else total
    if policy is None:
        return requested
    return policy.round_up(requested, whole_units)


@dataclass(frozen=True)
class Counter:
    """One counter of a shared counter set."""

    value: Fraction
    policy: RequestPolicy | None = None
    text: str = ""  # as published, so results can be formatted in the same style


@dataclass(frozen=True)
class Consumption:
    """One `consumesCounters` entry of a device."""

    counter_set: str
    static: Mapping[str, Fraction]
    value_from: Mapping[str, str]  # counter name -> capacity name it is driven by
    groups: frozenset[str]  # empty = "no groups" (unset, null and [] are the same)


@dataclass(frozen=True)
class Capacity:
    value: Fraction
    policy: RequestPolicy | None
    text: str  # original text, to format results in the same style


@dataclass(frozen=True, eq=False)
class DeviceInfo:
    """A device of a ResourceSlice with everything the rules need, parsed once."""

    driver: str
    pool: str
    name: str
    slice_name: str
    raw: Mapping[str, Any]
    capacity: Mapping[str, Capacity]  # as published (qualified or not)
    allow_multiple: bool
    consumes: tuple[Consumption, ...]
    taints: tuple[Mapping[str, Any], ...] = ()
    declares_groups: bool = False
    # DRADeviceBindingConditions: None when the device does not set the field (an empty list is set).
    binding_conditions: tuple[str, ...] | None = None
    binding_failure_conditions: tuple[str, ...] | None = None
    binds_to_node: bool = False
    # Facts derived from this device alone (CEL input, selector results by expressions, capacities
    # by qualified name), computed on first use and kept as long as the parsed device is.
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    key: DeviceKey = field(init=False, compare=False, repr=False)  # (driver, pool, device)

    def __post_init__(self) -> None:
        # The search looks the key up for every candidate: build the tuple once.
        object.__setattr__(self, "key", (self.driver, self.pool, self.name))

    def counter_key(self, counter_set: str) -> CounterKey:
        return (self.driver, self.pool, counter_set)

    def capacity_by_qualified_name(self) -> dict[str, Capacity]:
        """Capacities keyed by fully qualified name; the driver-qualified spelling wins on conflicts."""
        out: dict[str, Capacity] = {}
        for name, cap in self.capacity.items():
            if "/" not in name:
                out.setdefault(f"{self.driver}/{name}", cap)
        for name, cap in self.capacity.items():
            if "/" in name:
                out[name] = cap
        return out


def qualify(name: str, driver: str) -> str:
    """Fully qualified capacity/attribute name: unqualified names belong to the driver's domain."""
    return name if "/" in name else f"{driver}/{name}"


def parse_consumes(raw_list: Sequence[Mapping[str, Any]] | None, where: str) -> tuple[Consumption, ...]:
    out = []
    for i, entry in enumerate(raw_list or ()):
        at = f"{where}.consumesCounters[{i}]"
        if not entry.get("counterSet"):
            raise InputError(f"{at}.counterSet: required")
        static: dict[str, Fraction] = {}
        value_from: dict[str, str] = {}
        for cname, counter in (entry.get("counters") or {}).items():
            counter = counter or {}
            vf = counter.get("valueFrom")
            if vf is not None:
                cap = vf.get("capacityName") or vf.get("capacityKey")
                if not cap:
                    raise InputError(f"{at}.counters[{cname}].valueFrom: needs capacityName (or capacityKey)")
                value_from[cname] = str(cap)
                if counter.get("value") is not None:
                    raise InputError(f"{at}.counters[{cname}]: set exactly one of value and valueFrom")
            elif counter.get("value") is not None:
                static[cname] = _q(counter["value"], f"{at}.counters[{cname}].value")
            else:
                raise InputError(f"{at}.counters[{cname}]: needs value or valueFrom")
        groups = frozenset(str(g) for g in (entry.get("compatibilityGroups") or ()))
        out.append(Consumption(str(entry["counterSet"]), static, value_from, groups))
    return tuple(out)


def parse_device(spec: Mapping[str, Any], index: int, slice_name: str) -> DeviceInfo:
    raw = spec["devices"][index]
    where = f"ResourceSlice {slice_name}: spec.devices[{index}]"
    if not isinstance(raw, Mapping) or not raw.get("name"):
        raise InputError(f"{where}.name: required")
    capacity = {}
    for cname, cap in (raw.get("capacity") or {}).items():
        if not isinstance(cap, Mapping) or cap.get("value") is None:
            raise InputError(f"{where}.capacity[{cname}].value: required")
        capacity[str(cname)] = Capacity(
            value=_q(cap["value"], f"{where}.capacity[{cname}].value"),
            policy=RequestPolicy.parse(cap.get("requestPolicy"), f"{where}.capacity[{cname}].requestPolicy"),
            text=str(cap["value"]),
        )
    consumes = parse_consumes(raw.get("consumesCounters"), where)
    return DeviceInfo(
        driver=str(spec["driver"]),
        pool=str(spec["pool"]["name"]),
        name=str(raw["name"]),
        slice_name=slice_name,
        raw=raw,
        capacity=capacity,
        allow_multiple=bool(raw.get("allowMultipleAllocations")),
        consumes=consumes,
        taints=tuple(raw.get("taints") or ()),
        declares_groups=any(c.groups for c in consumes),
        binding_conditions=_string_list(raw.get("bindingConditions"), f"{where}.bindingConditions"),
        binding_failure_conditions=_string_list(raw.get("bindingFailureConditions"), f"{where}.bindingFailureConditions"),
        binds_to_node=bool(raw.get("bindsToNode")),
    )


def _string_list(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: must be a list of strings")
    return tuple(value)


def parse_counter_sets(spec: Mapping[str, Any], slice_name: str) -> dict[str, dict[str, Counter]]:
    out: dict[str, dict[str, Counter]] = {}
    for i, cs in enumerate(spec.get("sharedCounters") or ()):
        where = f"ResourceSlice {slice_name}: spec.sharedCounters[{i}]"
        if not cs.get("name"):
            raise InputError(f"{where}.name: required")
        counters = {}
        for cname, c in (cs.get("counters") or {}).items():
            if not isinstance(c, Mapping) or c.get("value") is None:
                raise InputError(f"{where}.counters[{cname}].value: required")
            counters[str(cname)] = Counter(
                value=_q(c["value"], f"{where}.counters[{cname}].value"),
                policy=RequestPolicy.parse(c.get("requestPolicy"), f"{where}.counters[{cname}].requestPolicy"),
                text=str(c["value"]),
            )
        out[str(cs["name"])] = counters
    return out
