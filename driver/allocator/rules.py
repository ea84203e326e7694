"""The one implementation of the counter and compatibility-group rules (KEP-4815, KEP-5963, KEP-5941).

Two callers need exactly the same rules: the allocator's search (incrementally, with rollback) and
the kubelet plugin's preparation-time revalidation (`validate_combination`, for version skew and
schedulers that do not enforce groups). Both use the pieces below:

* `GroupIntersection` — the rolling intersection of compatibility groups per (driver, pool, counter
  set), with the "no groups only with no groups" rule tracked explicitly (as upstream does).
* `CounterLedger` — counters consumed per (driver, pool, counter set) against the published totals.
* `request_driven_counters` — `valueFrom` resolution: capacity request -> counter amount through the
  counter's `requestPolicy` (default / validRange / validValues).

Accounting rules (shared by both paths): a device's static `value` consumption is charged once per
device (additional shares of an `allowMultipleAllocations` device do not charge again, as upstream);
request-driven (`valueFrom`) consumption is charged per allocation result, from the
`consumedCounters` the allocator recorded in that result; with `DRASharedConsumableCapacity` off it
is zero. Compatibility groups are read live from the slice (the 1.37 behaviour).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.allocator.devices import (
    Counter,
    CounterKey,
    DeviceInfo,
    DeviceKey,
    RequestPolicy,
    consumed_amount,
    parse_counter_sets,
    parse_devices,
    qualify,
)
from driver.errors import InputError
from driver.features import Features
from driver.model.quantity import format_quantity, parse_quantity


@dataclass(frozen=True)
class PlacedDevice:
    """One device placed for one claim request (an allocation result, existing or proposed)."""

    claim: str
    request: str
    driver: str
    pool: str
    device: str
    consumed_counters: tuple[dict, ...] | None = None
    share_id: str | None = None


@dataclass(frozen=True)
class Violation:
    kind: str  # "groups" | "counters" | "exclusive" | "unknown-device" | "recorded"
    counter_set: str | None
    devices: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class GroupIntersection:
    """Rolling compatibility-group state of one counter set (mirrors upstream's semantics).

    Empty state admits anything. Once a device without groups is placed, only devices without
    groups are admitted; once a device with groups is placed, a candidate must share at least one
    group with the intersection of all grouped devices placed so far.
    """

    has_members: bool = False
    all_empty: bool = False
    groups: frozenset[str] = frozenset()

    def admits(self, groups: frozenset[str]) -> bool:
        if not self.has_members:
            return True
        if not groups:
            return self.all_empty
        if self.all_empty:
            return False
        return not self.groups.isdisjoint(groups)

    def add(self, groups: frozenset[str]) -> GroupIntersection:
        if not self.has_members:
            return GroupIntersection(True, not groups, groups)
        if self.all_empty or not groups:
            return self
        return GroupIntersection(True, False, self.groups & groups)

    def describe(self) -> str:
        if not self.has_members:
            return "nothing allocated"
        if self.all_empty:
            return "devices without compatibility groups"
        return "groups " + ",".join(sorted(self.groups)) if self.groups else "no common group"


class CounterLedger:
    """Counters consumed per (driver, pool, counter set), checked against the published totals."""

    def __init__(self, totals: Mapping[CounterKey, Mapping[str, Counter]]):
        self.totals = totals
        self.used: dict[CounterKey, dict[str, Fraction]] = defaultdict(dict)

    def add(self, key: CounterKey, amounts: Mapping[str, Fraction], sign: int = 1) -> None:
        used = self.used[key]
        for name, amount in amounts.items():
            used[name] = used.get(name, 0) + sign * amount

    def over(self, key: CounterKey) -> list[str]:
        """Names of counters of this set whose use exceeds the total (or that do not exist)."""
        total = self.totals.get(key)
        used = self.used.get(key, {})
        if total is None:
            return sorted(used)
        return [n for n, amount in used.items() if n not in total or amount > total[n].value]

    def fits(self, key: CounterKey, amounts: Mapping[str, Fraction]) -> bool:
        total = self.totals.get(key)
        if total is None:
            return False
        used = self.used.get(key, {})
        for name, amount in amounts.items():
            counter = total.get(name)
            if counter is None or used.get(name, 0) + amount > counter.value:
                return False
        return True

    def available(self, key: CounterKey, name: str) -> Fraction:
        total = self.totals.get(key, {}).get(name)
        return (total.value if total else Fraction(0)) - self.used.get(key, {}).get(name, Fraction(0))


def request_driven_counters(
    device: DeviceInfo,
    capacity_requests: Mapping[str, Fraction],
    counter_sets: Mapping[str, Mapping[str, Counter]],
) -> tuple[tuple[str, dict[str, Fraction]], ...] | None:
    """Resolve the device's `valueFrom` counters for a request (KEP-5941).

    `capacity_requests` are keyed by fully qualified capacity name. Returns (counter set, amounts)
    per consumption entry that has request-driven counters, or None when a counter's requestPolicy
    rejects the amount (the device cannot serve this request).
    """
    out = []
    for cons in device.consumes:
        if not cons.value_from:
            continue
        amounts: dict[str, Fraction] = {}
        counters = counter_sets.get(cons.counter_set, {})
        for cname, cap_name in cons.value_from.items():
            counter = counters.get(cname)
            if counter is None:
                return None
            requested = capacity_requests.get(qualify(cap_name, device.driver))
            amount = consumed_amount(requested, counter.value, counter.policy)
            if counter.policy is not None and counter.policy.violated_by(amount):
                return None
            amounts[cname] = amount
        out.append((cons.counter_set, amounts))
    return tuple(out)


def counter_policy_shortfall(
    device: DeviceInfo, capacity_requests: Mapping[str, Fraction], counter_sets: Mapping[str, Mapping[str, Counter]]
) -> str | None:
    """Why `request_driven_counters` said no: the counter, what was asked and what its policy allows."""
    for cons in device.consumes:
        counters = counter_sets.get(cons.counter_set, {})
        for cname, cap_name in cons.value_from.items():
            counter = counters.get(cname)
            if counter is None:
                return f"counter {cname} of counter set {cons.counter_set} is not defined"
            requested = None
            for key, value in capacity_requests.items():
                if qualify(key, device.driver) == qualify(cap_name, device.driver):
                    requested = value
            amount = consumed_amount(requested, counter.value, counter.policy)
            if counter.policy is not None and counter.policy.violated_by(amount):
                asked = format_quantity(requested if requested is not None else amount, like=counter.text)
                rounded = f" (rounded to {format_quantity(amount, like=counter.text)})" if requested is not None and amount != requested else ""
                return (f"counter {cname} of counter set {cons.counter_set}: asks {asked}{rounded} via capacity "
                        f"{cap_name}, requestPolicy allows {counter.policy.describe(counter.text)}")
    return None


def consumed_counters_field(
    parts: Iterable[tuple[str, Mapping[str, Fraction]]], counter_sets: Mapping[str, Mapping[str, Counter]]
) -> list[dict]:
    """`consumedCounters` of an allocation result: [{counterSet, counters: {name: {value}}}]."""
    out = []
    for counter_set, amounts in parts:
        known = counter_sets.get(counter_set, {})
        counters = {}
        for name, amount in sorted(amounts.items()):
            like = known[name].text if name in known else None
            counters[name] = {"value": format_quantity(amount, like=like or None)}
        out.append({"counterSet": counter_set, "counters": counters})
    return out


def parse_consumed_counters(raw: Sequence[Mapping[str, Any]] | None, where: str) -> list[tuple[str, dict[str, Fraction]]]:
    """Read a recorded `consumedCounters` list back (values may be {value: q} or plain quantities).

    Amounts must be non-negative: a negative one would hand counters back to everybody else."""
    if raw is not None and not isinstance(raw, (list, tuple)):
        raise InputError(f"{where}.consumedCounters: expected a list")
    out = []
    for i, entry in enumerate(raw or ()):
        if not isinstance(entry, Mapping) or not entry.get("counterSet"):
            raise InputError(f"{where}.consumedCounters[{i}].counterSet: required")
        counters = entry.get("counters") or {}
        if not isinstance(counters, Mapping):
            raise InputError(f"{where}.consumedCounters[{i}].counters: expected a map of counter name to amount")
        amounts = {}
        for name, value in counters.items():
            at = f"{where}.consumedCounters[{i}] (counter set {entry['counterSet']}, counter {name})"
            text = value.get("value") if isinstance(value, Mapping) else value
            amount = parse_quantity(text, where=at)
            if amount < 0:
                raise InputError(f"{at}: recorded amount {format_quantity(amount)} is negative")
            amounts[str(name)] = amount
        out.append((str(entry["counterSet"]), amounts))
    return out


def recorded_counters(
    device: DeviceInfo, raw: Sequence[Mapping[str, Any]] | None, counter_sets: Mapping[str, Mapping[str, Counter]],
    where: str, enforce_policy: bool = True,
) -> list[tuple[str, dict[str, Fraction]]]:
    """The `consumedCounters` recorded in one allocation result, checked against its device.

    The preparation-time check must not trust the claim: every amount is non-negative, names a
    counter set the device consumes from (each at most once) and a counter the device consumes
    from it, and (with `enforce_policy`) a request-driven amount is one the counter's requestPolicy
    allows (its default, or inside validRange on a step from min, or one of validValues), as the
    allocator only records such amounts. A counter the device consumes with a fixed `value` may be
    recorded only at that value, and is not charged again. Returns the request-driven amounts to
    charge; raises InputError naming `where`, the counter set and the counter.
    """
    consumes = {c.counter_set: c for c in device.consumes}
    out = []
    seen: set[str] = set()
    for i, (counter_set, amounts) in enumerate(parse_consumed_counters(raw, where)):
        at = f"{where}.consumedCounters[{i}] (counter set {counter_set}"
        cons = consumes.get(counter_set)
        if cons is None:
            sets = ", ".join(sorted(consumes)) or "none"
            raise InputError(f"{at}): device {device.name} does not consume from this counter set (it consumes from: {sets})")
        if counter_set in seen:
            raise InputError(f"{at}): listed twice")
        seen.add(counter_set)
        driven: dict[str, Fraction] = {}
        for name, amount in amounts.items():
            here = f"{at}, counter {name})"
            if name in cons.static:
                if amount != cons.static[name]:
                    raise InputError(f"{here}: device {device.name} consumes a fixed "
                                     f"{format_quantity(cons.static[name])}, the result records {format_quantity(amount)}")
                continue
            if name not in cons.value_from:
                raise InputError(f"{here}: device {device.name} does not consume this counter")
            counter = counter_sets.get(counter_set, {}).get(name)
            if counter is None:
                raise InputError(f"{here}: the published counter set has no such counter")
            if enforce_policy and counter.policy is not None and not _policy_allows(counter.policy, amount):
                raise InputError(f"{here}: recorded amount {format_quantity(amount, like=counter.text or None)} is not "
                                 f"allowed by the counter's requestPolicy ({counter.policy.describe(counter.text or None)})")
            driven[name] = amount
        out.append((counter_set, driven))
    return out


def _policy_allows(policy: RequestPolicy, amount: Fraction) -> bool:
    """Could the allocator have recorded `amount` under this policy? (round_up's results only)"""
    if policy.default is not None and amount == policy.default:
        return True
    if policy.has_range:
        if policy.min is not None and amount < policy.min:
            return False
        return not policy.violated_by(amount)
    if policy.valid_values:
        return amount in policy.valid_values
    return True


def index_slices(slices: Sequence[Mapping[str, Any]]) -> tuple[dict[DeviceKey, DeviceInfo], dict[CounterKey, dict[str, Counter]]]:
    """Devices and counter sets of the newest generation of each pool, parsed once."""
    devices: dict[DeviceKey, DeviceInfo] = {}
    totals: dict[CounterKey, dict[str, Counter]] = {}
    for name, spec in newest_specs(slices):
        for cs_name, counters in parse_counter_sets(spec, name).items():
            totals[(spec["driver"], spec["pool"]["name"], cs_name)] = counters
        for info in parse_devices(spec, name) if spec.get("devices") else ():
            devices[info.key] = info
    return devices, totals


def pool_counter_sets(totals: Mapping[CounterKey, Mapping[str, Counter]], driver: str, pool: str) -> dict[str, Mapping[str, Counter]]:
    """The counter sets of one pool, by name (what `recorded_counters` checks against)."""
    return {key[2]: counters for key, counters in totals.items() if key[0] == driver and key[1] == pool}


def newest_specs(slices: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, spec) of the slices of the newest generation of each pool."""
    items = []
    for i, obj in enumerate(slices):
        spec = obj["spec"] if "spec" in obj else obj
        name = (obj.get("metadata") or {}).get("name") or f"#{i}"
        items.append((name, spec))
    newest: dict[tuple[str, str], int] = {}
    for _, spec in items:
        pk = (spec["driver"], spec["pool"]["name"])
        newest[pk] = max(newest.get(pk, 0), int(spec["pool"].get("generation", 0)))
    return [
        (n, s) for n, s in items if int(s["pool"].get("generation", 0)) == newest[(s["driver"], s["pool"]["name"])]
    ]


def validate_combination(
    slices: Sequence[dict], placed: Sequence[PlacedDevice], features: Features
) -> list[Violation]:
    """Check that devices placed together respect counters, groups and exclusivity.

    `slices` are ResourceSlice objects or specs (newest generation per pool is used). Pass every
    device already prepared on the node plus the new claim's. Compatibility groups are only
    checked when `features.compatibility_groups` is on; the plugin should pass all-on features to
    be strict regardless of the scheduler's gate.
    """
    devices, totals = index_slices(slices)
    pool_sets: dict[tuple[str, str], dict[str, Mapping[str, Counter]]] = {}

    violations: list[Violation] = []
    by_device: dict[DeviceKey, list[PlacedDevice]] = defaultdict(list)
    seen: set[tuple] = set()
    for p in placed:
        ident = (p.claim, p.request, p.driver, p.pool, p.device, p.share_id)
        if ident in seen:  # the same result listed twice is one placement
            continue
        seen.add(ident)
        by_device[(p.driver, p.pool, p.device)].append(p)

    ledger = CounterLedger(totals)
    on_set: dict[CounterKey, list[tuple[str, frozenset[str]]]] = defaultdict(list)
    for key, placements in by_device.items():
        label = "/".join(key)
        info = devices.get(key)
        if info is None:
            violations.append(Violation("unknown-device", None, (label,), f"device {label} is not published in any ResourceSlice"))
            continue
        multi = info.allow_multiple and features.consumable_capacity
        if len(placements) > 1 and not multi:
            claims = ", ".join(sorted(f"{p.claim} ({p.request})" for p in placements))
            violations.append(Violation("exclusive", None, (label,), f"device {label} is allocated more than once: {claims}"))
        if not features.partitionable_devices:
            continue
        for cons in info.consumes:
            ckey = info.counter_key(cons.counter_set)
            ledger.add(ckey, cons.static)
            on_set[ckey].append((info.name, cons.groups))
        if features.shared_consumable_capacity:
            sets = pool_sets.get((info.driver, info.pool))
            if sets is None:
                sets = pool_sets[(info.driver, info.pool)] = pool_counter_sets(totals, info.driver, info.pool)
            for p in placements:
                # Placements already made are not re-judged by today's requestPolicy (the slice may
                # have changed since); a record that is negative or names counters the device does
                # not consume is reported and charges nothing.
                try:
                    recorded = recorded_counters(info, p.consumed_counters, sets,
                                                 f"claim {p.claim} device {label}", enforce_policy=False)
                except InputError as exc:
                    violations.append(Violation("recorded", None, (label,), str(exc)))
                    continue
                for counter_set, amounts in recorded:
                    ledger.add((info.driver, info.pool, counter_set), amounts)

    for ckey in sorted(ledger.used):
        over = ledger.over(ckey)
        if over:
            members = tuple(sorted(n for n, _ in on_set.get(ckey, ())))
            detail = ", ".join(
                f"{n} {format_quantity(ledger.used[ckey][n])} > {format_quantity(totals[ckey][n].value)}"
                if ckey in totals and n in totals[ckey] else f"{n} (not defined)"
                for n in sorted(over)
            )
            violations.append(Violation("counters", ckey[2], members,
                f"counters exhausted on counter set {ckey[2]} of pool {ckey[0]}/{ckey[1]}: {detail} "
                f"(devices: {', '.join(members)})"))

    if features.compatibility_groups and features.partitionable_devices:
        for ckey in sorted(on_set):
            state = GroupIntersection()
            ok = True
            for _, groups in sorted(on_set[ckey]):
                if not state.admits(groups):
                    ok = False
                    break
                state = state.add(groups)
            if not ok:
                members = tuple(sorted(n for n, _ in on_set[ckey]))
                desc = "; ".join(f"{n}: {','.join(sorted(g)) or '(no groups)'}" for n, g in sorted(on_set[ckey]))
                violations.append(Violation("groups", ckey[2], members,
                    f"groups incompatible on counter set {ckey[2]} of pool {ckey[0]}/{ckey[1]}: {desc}"))
    return violations
