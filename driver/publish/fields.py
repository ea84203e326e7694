"""Which ResourceSlice fields belong to which feature gate, and how to compare slices semantically.

Three jobs share one table of gated fields so they can never disagree:
- dropped-field detection: diff what we wrote against what the server stored and name the gates that
  must be off (the Go helper's DroppedFieldsError, extended to the gates this driver cares about);
- the local store's apiserver simulation, which strips fields of gates that STORE/featuregates.yaml
  turns off, exactly like kube-apiserver's dropDisabledFields (kept if the old object used them);
- steady-state comparison (desired vs stored) that tolerates what a server round-trip changes:
  omitted empty values and quantities re-serialised in canonical form (`1024Mi` == `1Gi`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from driver.errors import InputError
from driver.model.quantity import parse_quantity

PARTITIONABLE = "DRAPartitionableDevices"
GROUPS = "DRADeviceCompatibilityGroups"
CONSUMABLE = "DRAConsumableCapacity"
SHARED_CONSUMABLE = "DRASharedConsumableCapacity"
DETECTED_GATES: tuple[str, ...] = (PARTITIONABLE, GROUPS, CONSUMABLE, SHARED_CONSUMABLE)

_DEVICE_NODE_FIELDS = ("nodeName", "nodeSelector", "allNodes")


def gate_of_path(path: tuple[str, ...]) -> str | None:
    """The gate owning a spec path such as ('devices', 'gpu-0', 'consumesCounters', '0', ...)."""
    keys = set(path)
    if "compatibilityGroups" in keys:
        return GROUPS
    if "valueFrom" in keys:
        return SHARED_CONSUMABLE
    if path[:1] == ("sharedCounters",) and "requestPolicy" in keys:
        return SHARED_CONSUMABLE
    if "sharedCounters" in keys or "consumesCounters" in keys or "perDeviceNodeSelection" in keys:
        return PARTITIONABLE
    if path[:1] == ("devices",) and len(path) >= 3 and path[2] in _DEVICE_NODE_FIELDS:
        return PARTITIONABLE
    if "allowMultipleAllocations" in keys or ("capacity" in keys and "requestPolicy" in keys):
        return CONSUMABLE
    return None


def prune_empty(value: Any) -> Any:
    """Drop None, empty lists and empty maps recursively: the apiserver omits them (omitempty)."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            v = prune_empty(v)
            if v is None or (isinstance(v, (list, dict)) and not v):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [prune_empty(v) for v in value]
    return value


def missing_paths(written: Any, stored: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths present in `written` but absent from `stored` (the fields a server dropped).

    Devices are matched by name (a path element is the device name), other lists by position.
    """
    written, stored = prune_empty(written), prune_empty(stored)
    return _missing(written, stored, path)


def _missing(written: Any, stored: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    if isinstance(written, Mapping):
        if not isinstance(stored, Mapping):
            return [path]
        for key, value in written.items():
            if key not in stored:
                out.append(path + (key,))
            else:
                out.extend(_missing(value, stored[key], path + (key,)))
    elif isinstance(written, list):
        if not isinstance(stored, list):
            return [path]
        if path[-1:] == ("devices",) and all(isinstance(d, Mapping) and "name" in d for d in written):
            by_name = {d.get("name"): d for d in stored if isinstance(d, Mapping)}
            for dev in written:
                if dev["name"] not in by_name:
                    out.append(path + (dev["name"],))
                else:
                    out.extend(_missing(dev, by_name[dev["name"]], path + (dev["name"],)))
        else:
            for i, value in enumerate(written):
                if i >= len(stored):
                    out.append(path + (str(i),))
                else:
                    out.extend(_missing(value, stored[i], path + (str(i),)))
    return out


def dropped_gates(written_spec: Mapping[str, Any], stored_spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """Gate name -> dotted paths the server dropped; gate `unknown` for drops no table entry explains."""
    if written_spec == stored_spec:  # the common case (every gate on), without the walk below
        return {}
    result: dict[str, list[str]] = {}
    written = prune_empty(written_spec)
    for p in missing_paths(written_spec, stored_spec):
        gate = _owned_exactly(p)
        if gate is None:
            # A map emptied by stripping disappears as a whole (`bw: {valueFrom}` -> gone): look inside.
            inner = {gate_of_path(lp) for lp in _leaf_paths(_at(written, p), p)} - {None, PARTITIONABLE}
            gate = min(inner) if inner else gate_of_path(p)
        result.setdefault(gate or "unknown", []).append(".".join(p))
    return result


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for i, key in enumerate(path):
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list):
            if path[i - 1:i] == ("devices",):
                value = next((d for d in value if isinstance(d, Mapping) and d.get("name") == key), None)
            else:
                value = value[int(key)] if key.isdigit() and int(key) < len(value) else None
        else:
            return None
    return value


def gates_used(spec: Mapping[str, Any]) -> set[str]:
    """Gates whose fields appear anywhere in a slice spec (an empty spec uses none)."""
    return {g for p in _leaf_paths(prune_empty(spec), ()) if (g := gate_of_path(p))}


def _leaf_paths(value: Any, path: tuple[str, ...]) -> Iterable[tuple[str, ...]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield path + (k,)
            yield from _leaf_paths(v, path + (k,))
    elif isinstance(value, list):
        named = path[-1:] == ("devices",)
        for i, v in enumerate(value):
            key = str(v.get("name")) if named and isinstance(v, Mapping) else str(i)
            yield from _leaf_paths(v, path + (key,))


def gates_present(spec: Mapping[str, Any]) -> set[str]:
    """The gates owning a field present in `spec` (the places `_owned_exactly` names), found by
    looking where such fields can be rather than walking every value: the pre-check that spares
    `strip_disabled` its deep copy on almost every write. (Plain `dict` checks: parsed objects are
    dicts, and an ABC check per value would cost more than the copy it spares.)"""
    found: set[str] = set()
    if spec.get("sharedCounters") or spec.get("perDeviceNodeSelection"):
        found.add(PARTITIONABLE)
    for cs in spec.get("sharedCounters") or ():
        if type(cs) is dict and any(type(c) is dict and "requestPolicy" in c for c in (cs.get("counters") or {}).values()):
            found.add(SHARED_CONSUMABLE)
    for dev in spec.get("devices") or ():
        if type(dev) is not dict:
            continue
        if "consumesCounters" in dev or "nodeName" in dev or "nodeSelector" in dev or "allNodes" in dev:
            found.add(PARTITIONABLE)
        if "allowMultipleAllocations" in dev:
            found.add(CONSUMABLE)
        for cap in (dev.get("capacity") or {}).values():
            if type(cap) is dict and "requestPolicy" in cap:
                found.add(CONSUMABLE)
        for entry in dev.get("consumesCounters") or ():
            if type(entry) is not dict:
                continue
            if "compatibilityGroups" in entry:
                found.add(GROUPS)
            for c in (entry.get("counters") or {}).values():
                if type(c) is dict and "valueFrom" in c:
                    found.add(SHARED_CONSUMABLE)
    return found


def strip_disabled(spec: Mapping[str, Any], off: Iterable[str], keep: Iterable[str] = ()) -> dict[str, Any]:
    """`spec` without the fields of gates in `off`, except gates in `keep` (used by the old object):
    a copy, or `spec` itself when it has none of those fields (callers never change either)."""
    drop = set(off) - set(keep)
    if PARTITIONABLE in drop:
        drop |= {GROUPS, SHARED_CONSUMABLE}  # nested inside partitionable fields
    if not drop & gates_present(spec):
        return spec if isinstance(spec, dict) else dict(spec)
    out = copy.deepcopy(dict(spec))
    _strip(out, (), drop)
    return out


def _strip(value: Any, path: tuple[str, ...], drop: set[str]) -> None:
    if isinstance(value, dict):
        for key in list(value):
            sub = path + (key,)
            if _owned_exactly(sub) in drop:
                del value[key]
            else:
                _strip(value[key], sub, drop)
    elif isinstance(value, list):
        named = path[-1:] == ("devices",)
        for i, item in enumerate(value):
            key = str(item.get("name")) if named and isinstance(item, dict) else str(i)
            _strip(item, path + (key,), drop)


def _owned_exactly(path: tuple[str, ...]) -> str | None:
    """The gate that owns exactly this field (not merely a parent of it)."""
    if not path:
        return None
    last = path[-1]
    if last == "compatibilityGroups":
        return GROUPS
    if last == "valueFrom" or (last == "requestPolicy" and path[0] == "sharedCounters"):
        return SHARED_CONSUMABLE
    if path in (("sharedCounters",), ("perDeviceNodeSelection",)):
        return PARTITIONABLE
    if path[0] == "devices" and len(path) == 3 and path[2] in ("consumesCounters",) + _DEVICE_NODE_FIELDS:
        return PARTITIONABLE
    if path[0] == "devices" and len(path) == 3 and path[2] == "allowMultipleAllocations":
        return CONSUMABLE
    if path[0] == "devices" and len(path) == 5 and path[2] == "capacity" and last == "requestPolicy":
        return CONSUMABLE
    return None


# -- semantic equality ---------------------------------------------------------------------------

_QUANTITY_KEYS = {"value", "default", "min", "max", "step", "validValues"}


def _quantity(value: Any) -> Fraction | None:
    try:
        return parse_quantity(value)
    except InputError:
        return None


def semantic_equal(a: Any, b: Any) -> bool:
    """Deep equality ignoring omitted empties and quantity spelling (under quantity-valued keys)."""
    if a == b:  # the common steady-state case, without building pruned copies
        return True
    return _eq(prune_empty(a), prune_empty(b), quantity=False)


def _eq(a: Any, b: Any, quantity: bool) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            return False
        return all(_eq(a[k], b[k], k in _QUANTITY_KEYS) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_eq(x, y, quantity) for x, y in zip(a, b, strict=True))
    if quantity and a != b:
        qa, qb = _quantity(a), _quantity(b)
        return qa is not None and qa == qb
    return a == b
