"""Parsed, allocation-ready views of ResourceSlice devices and counter sets.

The allocator and the plugin's preparation-time revalidation both need the same facts about a
device: what it consumes from which counter set (static `value` or request-driven `valueFrom`), its
compatibility groups per counter set, its capacities and their request policies. Parsing them once
into small frozen objects keeps the search loop free of string-to-quantity work and guarantees that
both paths read the slice the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any, NamedTuple

from driver.errors import InputError
from driver.model.quantity import format_quantity, parse_quantity

DeviceKey = tuple[str, str, str]  # driver, pool, device
CounterKey = tuple[str, str, str]  # driver, pool, counter set


def is_mapping(value: Any) -> bool:
    """isinstance(value, Mapping), with the usual case (a dict) decided without the ABC check, which
    costs more than parsing a quantity when a fleet's devices are parsed."""
    return type(value) is dict or isinstance(value, Mapping)


_QUANTITIES: dict[Any, Fraction] = {}  # published text -> parsed value: slices repeat a few dozen strings
_QUANTITIES_MAX = 65_536


def _q(value: Any, where: str) -> Fraction:
    """A quantity as an exact number: an int when whole (most are; int arithmetic is much cheaper
    than Fraction arithmetic in the search's counter accounting), else a Fraction."""
    hit = _QUANTITIES.get(value) if type(value) is str else None
    if hit is not None:
        return hit
    try:
        q = parse_quantity(value)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    out = q.numerator if q.denominator == 1 else q
    if type(value) is str:
        if len(_QUANTITIES) >= _QUANTITIES_MAX:
            _QUANTITIES.clear()
        _QUANTITIES[value] = out  # type: ignore[assignment]
    return out  # type: ignore[return-value]


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


class Counter(NamedTuple):
    """One counter of a shared counter set."""

    value: Fraction
    policy: RequestPolicy | None = None
    text: str = ""  # as published, so results can be formatted in the same style


class Consumption(NamedTuple):
    """One `consumesCounters` entry of a device."""

    counter_set: str
    static: Mapping[str, Fraction]
    value_from: Mapping[str, str]  # counter name -> capacity name it is driven by
    groups: frozenset[str]  # empty = "no groups" (unset, null and [] are the same)


class Capacity(NamedTuple):
    value: Fraction
    policy: RequestPolicy | None
    text: str  # original text, to format results in the same style


class DeviceInfo:
    """A device of a ResourceSlice with everything the rules need, parsed once (immutable by
    convention; a plain class with slots because a fleet parses hundreds of thousands of them)."""

    __slots__ = ("driver", "pool", "name", "slice_name", "raw", "capacity", "allow_multiple", "consumes", "taints",
                 "declares_groups", "binding_conditions", "binding_failure_conditions", "binds_to_node", "memo", "key",
                 "plain")

    def __init__(
        self, driver: str, pool: str, name: str, slice_name: str, raw: Mapping[str, Any],
        capacity: Mapping[str, Capacity], allow_multiple: bool, consumes: tuple[Consumption, ...],
        taints: tuple[Mapping[str, Any], ...] = (), declares_groups: bool = False,
        binding_conditions: tuple[str, ...] | None = None, binding_failure_conditions: tuple[str, ...] | None = None,
        binds_to_node: bool = False,
    ):
        self.driver = driver
        self.pool = pool
        self.name = name
        self.slice_name = slice_name
        self.raw = raw
        self.capacity = capacity  # as published (qualified or not)
        self.allow_multiple = allow_multiple
        self.consumes = consumes
        self.taints = taints
        self.declares_groups = declares_groups
        # DRADeviceBindingConditions: None when the device does not set the field (an empty list is set).
        self.binding_conditions = binding_conditions
        self.binding_failure_conditions = binding_failure_conditions
        self.binds_to_node = binds_to_node
        # Facts derived from this device alone (CEL input, selector results by expressions, capacities
        # by qualified name), computed on first use and kept as long as the parsed device is.
        self.memo: dict = {}
        # The search looks the key up for every candidate: build the tuple once.
        self.key: DeviceKey = (driver, pool, name)
        # Every attribute a plain int, bool or string, so selectors can read the published device
        # (celexpr.plain_attributes); decided when a selector first needs it.
        self.plain: bool | None = None

    def __repr__(self) -> str:
        return f"DeviceInfo({'/'.join(self.key)})"

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


_NO_GROUPS: frozenset[str] = frozenset()


def parse_consumes(raw_list: Sequence[Mapping[str, Any]] | None, where: str) -> tuple[Consumption, ...]:
    """The `consumesCounters` entries of a device; `where` is the device's path (for messages).
    parse_devices reads the usual entries itself; this is the parse that explains the others."""
    out = []
    for i, entry in enumerate(raw_list or ()):
        counter_set = entry.get("counterSet")
        if not counter_set:
            raise InputError(f"{where}.consumesCounters[{i}].counterSet: required")
        counters = entry.get("counters") or {}
        static = {}
        value_from: dict[str, str] = {}
        for cname, counter in counters.items():
            counter = counter or {}
            value = counter.get("value")
            vf = counter.get("valueFrom")
            if vf is None and value is not None:  # the common shape: a fixed amount
                hit = _QUANTITIES.get(value) if type(value) is str else None
                static[str(cname)] = hit if hit is not None else _q(value, f"{where}.consumesCounters[{i}].counters[{cname}].value")
                continue
            at = f"{where}.consumesCounters[{i}]"
            if vf is None:
                raise InputError(f"{at}.counters[{cname}]: needs value or valueFrom")
            cap = vf.get("capacityName") or vf.get("capacityKey")
            if not cap:
                raise InputError(f"{at}.counters[{cname}].valueFrom: needs capacityName (or capacityKey)")
            if value is not None:
                raise InputError(f"{at}.counters[{cname}]: set exactly one of value and valueFrom")
            value_from[str(cname)] = str(cap)
        groups = entry.get("compatibilityGroups")
        out.append(Consumption(str(counter_set), static, value_from,
                               frozenset(str(g) for g in groups) if groups else _NO_GROUPS))
    return tuple(out)


def parse_device(spec: Mapping[str, Any], index: int, slice_name: str) -> DeviceInfo:
    """One device of a slice; field paths in messages are built only for a message (a fleet parses
    hundreds of thousands of devices)."""
    return parse_devices(spec, slice_name, (index,))[0]


def parse_devices(spec: Mapping[str, Any], slice_name: str, indices: Sequence[int] | None = None) -> list[DeviceInfo]:
    """Devices of a slice (all, or those at `indices`), each checked as `parse_device` checks it.

    Every scheduling cycle without a cache parses every device of the node, so the usual device is
    read in one pass, without building field paths or calling helpers: capacities and counters that
    are `{value: <a quantity text seen before>}` under string names (a shape of any other kind looks
    up None, which is never a known text), no fields beyond name, attributes, capacity and
    consumesCounters. Anything else takes the full parse, which decides and explains."""
    devices = spec["devices"]
    driver, pool = str(spec["driver"]), str(spec["pool"]["name"])
    known, new, no_value_from, no_groups = _QUANTITIES, _new_tuple, _NO_VALUE_FROM, _NO_GROUPS
    out = []
    for index in range(len(devices)) if indices is None else indices:
        raw = devices[index]
        if type(raw) is not dict and not isinstance(raw, Mapping) or not raw.get("name"):
            raise InputError(f"ResourceSlice {slice_name}: spec.devices[{index}].name: required")
        get = raw.get
        caps = get("capacity")
        capacity: dict[str, Capacity] | None = {}
        if caps:
            try:
                for cname, cap in caps.items():
                    value = cap["value"] if len(cap) == 1 and type(cname) is str else None
                    capacity[cname] = new(Capacity, (known[value], None, value))  # type: ignore[index]
            except (KeyError, TypeError, AttributeError):
                capacity = _parse_capacity(caps, f"ResourceSlice {slice_name}: spec.devices[{index}]")
        raw_consumes = get("consumesCounters")
        consumes: Any = ()
        groups = False
        if raw_consumes:
            consumes = []
            try:
                for entry in raw_consumes:
                    counter_set = entry["counterSet"]
                    if type(counter_set) is not str or not counter_set:
                        raise KeyError
                    static = {cname: known[counter["value"] if len(counter) == 1 and type(cname) is str else None]
                              for cname, counter in entry["counters"].items()}
                    sets = entry.get("compatibilityGroups")
                    if sets:
                        groups = True
                        sets = frozenset(str(g) for g in sets)
                    consumes.append(new(Consumption, (counter_set, static, no_value_from, sets or no_groups)))
                consumes = tuple(consumes)
            except (KeyError, TypeError, AttributeError):
                consumes = parse_consumes(raw_consumes, f"ResourceSlice {slice_name}: spec.devices[{index}]")
                groups = any(c.groups for c in consumes)
        name = raw["name"]
        name = name if type(name) is str else str(name)
        if len(raw) == 1 + ("attributes" in raw) + (caps is not None) + (raw_consumes is not None):
            out.append(DeviceInfo(driver, pool, name, slice_name, raw, capacity, False, consumes, (), groups))
            continue  # no other field set: the usual device
        bindings = get("bindingConditions")
        failures = get("bindingFailureConditions")
        taints = get("taints")
        out.append(DeviceInfo(
            driver, pool, name, slice_name, raw, capacity,
            bool(get("allowMultipleAllocations")), consumes,
            tuple(taints) if taints else (),
            groups,
            None if bindings is None else _string_list(bindings, f"ResourceSlice {slice_name}: spec.devices[{index}].bindingConditions"),
            None if failures is None else _string_list(failures, f"ResourceSlice {slice_name}: spec.devices[{index}].bindingFailureConditions"),
            bool(get("bindsToNode")),
        ))
    return out


_new_tuple = tuple.__new__  # NamedTuple construction without the generated __new__'s frame


def _parse_capacity(caps: Any, where: str) -> dict[str, Capacity]:
    capacity = {}
    for cname, cap in caps.items():
        if not is_mapping(cap) or cap.get("value") is None:
            raise InputError(f"{where}.capacity[{cname}].value: required")
        value, policy = cap["value"], cap.get("requestPolicy")
        amount = _QUANTITIES.get(value) if type(value) is str else None
        if amount is None:
            amount = _q(value, f"{where}.capacity[{cname}].value")
        if policy:
            policy = RequestPolicy.parse(policy, f"{where}.capacity[{cname}].requestPolicy")
        capacity[str(cname)] = Capacity(amount, policy or None, str(value))
    return capacity


_NO_VALUE_FROM: Mapping[str, str] = MappingProxyType({})


def _string_list(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: must be a list of strings")
    return tuple(value)


def parse_counter_sets(spec: Mapping[str, Any], slice_name: str) -> dict[str, dict[str, Counter]]:
    out: dict[str, dict[str, Counter]] = {}
    for i, cs in enumerate(spec.get("sharedCounters") or ()):
        counters = _known_counters(cs)
        if counters is not None:
            out[cs["name"]] = counters
            continue
        where = f"ResourceSlice {slice_name}: spec.sharedCounters[{i}]"
        if not cs.get("name"):
            raise InputError(f"{where}.name: required")
        counters = {}
        for cname, c in (cs.get("counters") or {}).items():
            if not is_mapping(c) or c.get("value") is None:
                raise InputError(f"{where}.counters[{cname}].value: required")
            counters[str(cname)] = Counter(
                value=_q(c["value"], f"{where}.counters[{cname}].value"),
                policy=RequestPolicy.parse(c.get("requestPolicy"), f"{where}.counters[{cname}].requestPolicy"),
                text=str(c["value"]),
            )
        out[str(cs["name"])] = counters
    return out


def _known_counters(cs: Any) -> dict[str, Counter] | None:
    """A counter set's counters when the set has a string name and every counter is `{value: <a
    quantity text seen before>}` under a string name, else None (the full parse decides and explains)."""
    try:
        name = cs["name"]
        if type(name) is not str or not name:
            return None
        out = {}
        for cname, c in cs["counters"].items():
            if type(cname) is not str or len(c) != 1:
                return None
            value = c["value"]
            out[cname] = _new_tuple(Counter, (_QUANTITIES[value], None, value))
    except (KeyError, TypeError, AttributeError):
        return None
    return out
