"""resource.k8s.io/v1 rules the JSON schema does not express, checked on our output.

Why each limit exists and where upstream states it: docs/architecture.md §6, the slice-limit rows.

The strict schema checks shapes; the apiserver additionally rejects over-long lists, non-DNS-label
names, devices and counters in one slice, dangling counter references, ... This checker lets tests
(and the publisher, before it writes) find such problems with a message naming slice and device.
"""

from __future__ import annotations

from collections.abc import Iterable

from driver.celexpr.values import CelValueError, parse_semver
from driver.model.quantity import parse_quantity
from driver.slices.names import is_c_identifier, is_dns_label, is_dns_subdomain
from driver.slices.pool import (
    MAX_ATTRIBUTES_AND_CAPACITIES,
    MAX_CONSUMES_COUNTERS,
    MAX_COUNTER_SETS_PER_SLICE,
    MAX_COUNTERS_PER_SET,
    MAX_DEVICES_PER_SLICE,
    MAX_DEVICES_WITH_COUNTERS,
    MAX_GROUPS,
    MAX_STRING_LEN,
    Pool,
    _needs_small_slice,
)

_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _qualified_name_ok(name: str) -> bool:
    parts = name.split("/")
    if len(parts) == 1:
        return is_c_identifier(parts[0]) and len(parts[0]) <= 32
    if len(parts) == 2:
        return is_dns_subdomain(parts[0], 63) and is_c_identifier(parts[1]) and len(parts[1]) <= 32
    return False


def check_slice_spec(spec: dict, where: str = "slice") -> list[str]:
    """Problems with one ResourceSlice spec, each naming the slice/device/field."""
    problems: list[str] = []
    selected = [f for f in _NODE_SELECTION if spec.get(f)]
    if len(selected) != 1:
        problems.append(f"{where}: exactly one of {', '.join(_NODE_SELECTION)} must be set, got {selected}")
    if "devices" in spec and "sharedCounters" in spec:
        problems.append(f"{where}: devices and sharedCounters in one slice")
    sets = spec.get("sharedCounters") or []
    if len(sets) > MAX_COUNTER_SETS_PER_SLICE:
        problems.append(f"{where}: {len(sets)} counter sets > {MAX_COUNTER_SETS_PER_SLICE}")
    for cs in sets:
        if not is_dns_label(cs["name"]):
            problems.append(f"{where}: counter set name {cs['name']!r} is not a DNS label")
        counters = cs.get("counters") or {}
        if not counters or len(counters) > MAX_COUNTERS_PER_SET:
            problems.append(f"{where}: counter set {cs['name']} has {len(counters)} counters (1..{MAX_COUNTERS_PER_SET})")
        problems.extend(f"{where}: counter {cs['name']}/{n!r} is not a DNS label" for n in counters if not is_dns_label(n))
        for n, counter in counters.items():
            if counter.get("requestPolicy"):
                problems.extend(policy_problems(counter["value"], counter["requestPolicy"], f"{where}: counter {cs['name']}/{n}"))
    devices = spec.get("devices") or []
    limit = MAX_DEVICES_WITH_COUNTERS if any(_needs_small_slice(d) for d in devices) else MAX_DEVICES_PER_SLICE
    if len(devices) > limit:
        problems.append(f"{where}: {len(devices)} devices > {limit}")
    names = [d["name"] for d in devices]
    if len(set(names)) != len(names):
        problems.append(f"{where}: duplicate device names")
    for dev in devices:
        problems.extend(check_device(dev, f"{where}/{dev['name']}"))
    return problems


def policy_problems(value: str, policy: dict, where: str) -> list[str]:
    """The apiserver's requestPolicy rules (validateRequestPolicy in k8s.io/kubernetes): one of
    validRange/validValues, a default inside it, min/max within the value, steps that land on max."""
    problems: list[str] = []
    total = parse_quantity(value)
    default = policy.get("default")
    rng, values = policy.get("validRange"), policy.get("validValues")
    if rng and values:
        return [f"{where}: requestPolicy sets both validRange and validValues"]
    if (rng or values) and default is None:
        return [f"{where}: requestPolicy needs a default with validRange/validValues"]
    if values:
        qs = [parse_quantity(v) for v in values]
        if qs != sorted(qs) or any(q > total for q in qs) or parse_quantity(default) not in qs:
            problems.append(f"{where}: validValues must be sorted, <= {value} and include the default")
    if rng:
        lo, d = parse_quantity(rng["min"]), parse_quantity(default)
        hi = parse_quantity(rng["max"]) if "max" in rng else None
        step = parse_quantity(rng["step"]) if "step" in rng else None
        if lo > total or d < lo or (hi is not None and (lo > hi or hi > total or d > hi)):
            problems.append(f"{where}: validRange needs min <= default <= max <= {value}")
        if step is not None:
            if step <= 0 or lo + step > total:
                problems.append(f"{where}: validRange step {rng['step']} must be > 0 and min + step <= {value}")
            elif (d - lo) % step or (hi is not None and (hi - lo) % step):
                problems.append(f"{where}: validRange default and max must be min + a multiple of step")
    return problems


# List-typed attributes (DRAListTypeAttributes, KEP-5491): each list is non-empty, its elements
# obey the scalar's rules, and a device carries at most 48 values in all (scalars plus list
# elements). Source: kubernetes.io "Dynamic Resource Allocation", section "List type attributes";
# the 1.37 OpenAPI schema describes each list as non-empty.
MAX_ATTRIBUTE_VALUES = 48
_SCALAR_TYPES = {"bool": bool, "int": int, "string": str, "version": str}
_LIST_FIELDS = {"bools": "bool", "ints": "int", "strings": "string", "versions": "version"}


def _scalar_problem(kind: str, item: object) -> str | None:
    if not isinstance(item, _SCALAR_TYPES[kind]) or (kind == "int" and isinstance(item, bool)):
        return f"{kind} value {item!r} has the wrong type"
    if kind in ("string", "version") and len(str(item)) > MAX_STRING_LEN:
        return f"longer than {MAX_STRING_LEN} characters"
    if kind == "version":
        try:
            parse_semver(str(item))
        except CelValueError:
            return f"{item!r} is not a semantic version (semver.org 2.0.0)"
    return None


def _attribute_problems(name: str, value: dict, where: str) -> list[str]:
    (field, item), = value.items()
    if field in _SCALAR_TYPES:
        problem = _scalar_problem(field, item)
        return [f"{where} {problem}"] if problem else []
    if field in _LIST_FIELDS:
        if not isinstance(item, list) or not item:
            return [f"{where}: {field} must be a non-empty list"]
        out = []
        for i, element in enumerate(item):
            problem = _scalar_problem(_LIST_FIELDS[field], element)
            if problem:
                out.append(f"{where}: {field}[{i}] {problem}")
        return out
    return [f"{where}: unknown value field {field!r} (bool, int, string, version or bools, ints, strings, versions)"]


def check_device(dev: dict, where: str) -> list[str]:
    problems = []
    if not is_dns_label(dev["name"]):
        problems.append(f"{where}: device name is not a DNS label")
    attrs, caps = dev.get("attributes") or {}, dev.get("capacity") or {}
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES:
        problems.append(f"{where}: {len(attrs) + len(caps)} attributes+capacities > {MAX_ATTRIBUTES_AND_CAPACITIES}")
    values = 0
    for name, value in attrs.items():
        if not _qualified_name_ok(name):
            problems.append(f"{where}: attribute name {name!r} is not a qualified name")
        if not isinstance(value, dict) or len(value) != 1:
            problems.append(f"{where}: attribute {name} must have exactly one value field")
            continue
        problems.extend(_attribute_problems(name, value, f"{where}: attribute {name}"))
        (field, item), = value.items()
        values += len(item) if field in _LIST_FIELDS and isinstance(item, list) else 1
    if values > MAX_ATTRIBUTE_VALUES:
        problems.append(f"{where}: {values} attribute values (scalars plus list elements) > {MAX_ATTRIBUTE_VALUES}")
    for name, cap in caps.items():
        if not _qualified_name_ok(name):
            problems.append(f"{where}: capacity name {name!r} is not a qualified name")
        if cap.get("requestPolicy") and not dev.get("allowMultipleAllocations"):
            problems.append(f"{where}: capacity {name} has a requestPolicy but allowMultipleAllocations is not true")
        if cap.get("requestPolicy"):
            problems.extend(policy_problems(cap["value"], cap["requestPolicy"], f"{where}: capacity {name}"))
    consumes = dev.get("consumesCounters") or []
    if len(consumes) > MAX_CONSUMES_COUNTERS:
        problems.append(f"{where}: {len(consumes)} consumesCounters entries > {MAX_CONSUMES_COUNTERS}")
    if len({c["counterSet"] for c in consumes}) != len(consumes):
        problems.append(f"{where}: consumesCounters repeats a counter set")
    for entry in consumes:
        groups = entry.get("compatibilityGroups") or []
        if len(groups) > MAX_GROUPS or len(set(groups)) != len(groups):
            problems.append(f"{where}: compatibilityGroups {groups} (at most {MAX_GROUPS}, unique)")
        problems.extend(f"{where}: group {g!r} is not a DNS label" for g in groups if not is_dns_label(g))
        counters = entry.get("counters") or {}
        if not counters or len(counters) > MAX_COUNTERS_PER_SET:
            problems.append(f"{where}: consumes {len(counters)} counters of {entry['counterSet']} (1..32)")
        for name, counter in counters.items():
            if ("value" in counter) == ("valueFrom" in counter):
                problems.append(f"{where}: counter {name} needs exactly one of value or valueFrom")
    return problems


def check_pool(pool: Pool | Iterable[dict]) -> list[str]:
    """Per-slice checks plus pool-wide ones: unique device/counter-set names, references resolve."""
    specs = list(pool.slices if isinstance(pool, Pool) else pool)
    problems: list[str] = []
    for index, spec in enumerate(specs):
        problems.extend(check_slice_spec(spec, f"slice[{index}]"))
    sets: dict[str, dict] = {}
    devices: set[str] = set()
    for spec in specs:
        for cs in spec.get("sharedCounters") or []:
            if cs["name"] in sets:
                problems.append(f"pool: counter set {cs['name']} defined twice")
            sets[cs["name"]] = cs["counters"]
        for dev in spec.get("devices") or []:
            if dev["name"] in devices:
                problems.append(f"pool: device {dev['name']} defined twice")
            devices.add(dev["name"])
    for spec in specs:
        for dev in spec.get("devices") or []:
            for entry in dev.get("consumesCounters") or []:
                known = sets.get(entry["counterSet"])
                if known is None:
                    problems.append(f"pool: {dev['name']} consumes unknown counter set {entry['counterSet']}")
                    continue
                missing = sorted(set(entry["counters"]) - set(known))
                if missing:
                    problems.append(f"pool: {dev['name']} consumes unknown counters {missing} of {entry['counterSet']}")
    return problems
