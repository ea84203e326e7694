"""ResourceSlices (resource.k8s.io/v1), as kube-apiserver validates them.

Source: k8s.io/kubernetes pkg/apis/resource/validation/validation.go: ValidateResourceSlice(Update),
validateResourceSliceSpec (driver, pool, exactly one node selection, sharedCounters or devices,
the 128/64 device limit, immutable pool name, driver and node on update), validateResourcePool,
validateDevice (name, attributes and capacities limits, taints, counter consumptions, per-device
node selection, binding conditions), validateCounterSet, validateDeviceCounterConsumption,
validateDeviceAttribute (exactly one value, string/version limits, semver), validateDeviceTaint,
validateSingleAllocatableDeviceCapacity, validateSkipNodeOperations, validateDeviceBindingParameters.

Devices and counter sets are also parsed by the allocator afterwards (driver.store.validate), which
checks counter references across the pool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from driver.store.admission import meta, names
from driver.store.admission.claims import driver_name, each, pool_name, qualified_name
from driver.store.admission.field import (FieldError, child, duplicate, forbidden, index, invalid, invalid_each, key,
                                          not_supported, required, too_long, too_many)
from driver.store.admission.scheduling import node_selector

MAX_DEVICES = 128  # resource.ResourceSliceMaxDevices
MAX_DEVICES_ADVANCED = 64  # ResourceSliceMaxDevicesWithAdvancedFeatures (taints, counters, list attributes)
MAX_COUNTER_SETS = 8  # ResourceSliceMaxCounterSets
MAX_COUNTERS = 32  # ResourceSliceMaxCountersPerCounterSet, ...PerDeviceCounterConsumption
MAX_CONSUMPTIONS = 2  # ResourceSliceMaxDeviceCounterConsumptionsPerDevice
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_TAINTS = 16  # DeviceTaintsMaxLength
MAX_VALUE_LENGTH = 64  # DeviceAttributeMaxValueLength
MAX_BINDING_CONDITIONS = 4  # BindingConditionsMaxSize, BindingFailureConditionsMaxSize
_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
SEMVER = re.compile(rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?")
_LIST_KINDS = ("bools", "ints", "strings", "versions")
_SCALAR_KINDS = ("bool", "int", "string", "version")


# A fleet's slices repeat the same few names thousands of times: each name is checked once per
# process (bounded caches), and a field path is built only for a name that fails.
_label_problems = lru_cache(maxsize=8192)(lambda name: tuple(names.is_dns1123_label(name)))
_qualified_problems = lru_cache(maxsize=8192)(lambda name: tuple(qualified_name(name, "")))


def _m(value: Any) -> Mapping[str, Any]:
    if value.__class__ is dict:
        return value
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dns_label(value: str, path: str) -> list[FieldError]:
    problems = _label_problems(value)
    return [invalid(path, value, m) for m in problems] if problems else []


def _qualified(name: str, path: str) -> list[FieldError]:
    """claims.qualified_name (validateQualifiedName) at `path`, from the cache."""
    problems = _qualified_problems(name)
    return [FieldError(e.type, path, e.value, e.detail) for e in problems] if problems else []


def _counter_map(counters: Any, maximum: int, path: str) -> list[FieldError]:
    counters = _m(counters)
    if len(counters) > maximum:
        return [too_many(path, len(counters), maximum)]
    errs: list[FieldError] = []
    for name in sorted(counters):
        if _label_problems(str(name)):
            errs += _dns_label(str(name), path)
    return errs


def _counter_set(cs: Any, path: str) -> list[FieldError]:
    cs = _m(cs)
    errs = [required(child(path, "name"))] if not cs.get("name") else invalid_each(
        child(path, "name"), str(cs["name"]), names.is_dns1123_label(str(cs["name"])))
    if not _m(cs.get("counters")):
        return errs + [required(child(path, "counters"))]
    return errs + _counter_map(cs.get("counters"), MAX_COUNTERS, child(path, "counters"))


def _consumption(c: Any, path: str) -> list[FieldError]:
    c = _m(c)
    errs = [required(child(path, "counterSet"))] if not c.get("counterSet") else _dns_label(
        str(c["counterSet"]), child(path, "counterSet"))
    if not _m(c.get("counters")):
        return errs + [required(child(path, "counters"))]
    return errs + _counter_map(c.get("counters"), MAX_COUNTERS, child(path, "counters"))


def _string_value(value: Any, path: str) -> list[FieldError]:
    return [too_long(path, MAX_VALUE_LENGTH)] if len(str(value).encode()) > MAX_VALUE_LENGTH else []


def _version_value(value: Any, path: str) -> list[FieldError]:
    errs = [] if SEMVER.fullmatch(str(value)) else [invalid(path, str(value), "must be a string compatible with semver.org "
                                                                              "spec 2.0.0")]
    return errs + _string_value(value, path)


def _attribute(attr: Any, path: str) -> list[FieldError]:
    attr = _m(attr)
    if len(attr) == 1:  # the common case: one plain value
        if "int" in attr or "bool" in attr:
            return []
        if "string" in attr and attr["string"] is not None and len(str(attr["string"])) <= MAX_VALUE_LENGTH // 4:
            return []
    errs, count = [], 0
    for kind in _SCALAR_KINDS:
        if attr.get(kind) is not None:
            count += 1
            if kind == "string":
                errs += _string_value(attr[kind], child(path, "string"))
            elif kind == "version":
                errs += _version_value(attr[kind], child(path, "version"))
    for kind in _LIST_KINDS:
        if attr.get(kind) is not None:
            count += 1
            values = _l(attr[kind])
            if not values:
                errs.append(invalid(child(path, kind), values, "must not be empty if specified"))
            for i, v in enumerate(values):
                if kind == "strings":
                    errs += _string_value(v, index(child(path, kind), i))
                elif kind == "versions":
                    errs += _version_value(v, index(child(path, kind), i))
    if count == 0:
        errs.append(invalid(path, "", "exactly one value must be specified"))
    elif count > 1:
        errs.append(invalid(path, dict(attr), "exactly one value must be specified"))
    return errs


def _taint(taint: Any, path: str) -> list[FieldError]:
    taint = _m(taint)
    errs = meta.label_name(str(taint.get("key") or ""), child(path, "key"))
    if taint.get("value"):
        errs += invalid_each(child(path, "value"), str(taint["value"]), names.is_label_value(str(taint["value"])))
    effect = taint.get("effect") or ""
    if not effect:
        errs.append(required(child(path, "effect")))
    elif effect not in ("NoExecute", "NoSchedule", "None"):
        errs.append(not_supported(child(path, "effect"), effect, ["NoExecute", "NoSchedule", "None"]))
    return errs


def _binding(device: Mapping[str, Any], path: str) -> list[FieldError]:
    conditions, failures = _l(device.get("bindingConditions")), _l(device.get("bindingFailureConditions"))
    errs = each(conditions, MAX_BINDING_CONDITIONS, lambda c, at: meta.label_name(str(c), at), child(path, "bindingConditions"))
    errs += each(failures, MAX_BINDING_CONDITIONS, lambda c, at: meta.label_name(str(c), at),
                 child(path, "bindingFailureConditions"))
    for field_name, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        for i, c in enumerate(items):
            if c in items[:i]:
                errs.append(duplicate(index(child(path, field_name), i), c))
            if field_name == "bindingFailureConditions" and c in conditions:
                errs.append(invalid(index(child(path, field_name), i), c,
                                    "bindingFailureConditions must not overlap with bindingConditions"))
    if not conditions and failures:
        errs.append(invalid(child(path, "bindingConditions"), conditions,
                            "bindingConditions are required to use bindingFailureConditions"))
    if not failures and conditions:
        errs.append(invalid(child(path, "bindingFailureConditions"), failures,
                            "bindingFailureConditions are required to use bindingConditions"))
    return errs


def _device(device: Any, path: str, per_device: bool, old: Mapping[str, Any] | None) -> list[FieldError]:
    device = _m(device)
    name = str(device.get("name") or "")
    errs = _dns_label(name, f"{path}.name") if _label_problems(name) else []
    attrs, caps = _m(device.get("attributes")), _m(device.get("capacity"))
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES:
        errs.append(invalid(path, len(attrs) + len(caps), "the total number of attributes and capacities must not "
                                                          f"exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"))
    for attr_name in sorted(attrs):
        if _qualified_problems(str(attr_name)):
            errs += _qualified(str(attr_name), f"{path}.attributes")
        errs += _attribute(attrs[attr_name], f"{path}.attributes[{attr_name}]")
    if old is None or _m(old.get("capacity")) != caps:
        for cap_name in sorted(caps):
            if _qualified_problems(str(cap_name)):
                errs += _qualified(str(cap_name), f"{path}.capacity")
            name = str(cap_name)
            if _m(caps[cap_name]).get("requestPolicy") is not None and device.get("allowMultipleAllocations") is not True:
                errs.append(forbidden(child(key(child(path, "capacity"), str(name)), "requestPolicy"),
                                      "allowMultipleAllocations must be true"))
    if device.get("taints") and (old is None or old.get("taints") != device.get("taints")):
        errs += each(device.get("taints"), MAX_TAINTS, _taint, child(path, "taints"))
    if device.get("consumesCounters"):
        errs += each(device["consumesCounters"], MAX_CONSUMPTIONS, _consumption, child(path, "consumesCounters"),
                     lambda c: str(_m(c).get("counterSet")))
    own = [f for f in ("nodeName", "nodeSelector", "allNodes") if device.get(f) is not None]
    if per_device:
        chosen: list[str] = []
        if device.get("nodeName") is not None:
            if device["nodeName"]:
                chosen.append("`nodeName`")
                errs += invalid_each(child(path, "nodeName"), str(device["nodeName"]),
                                     names.name_is_dns_subdomain(str(device["nodeName"])))
            else:
                errs.append(invalid(child(path, "nodeName"), "", "must not be empty"))
        if device.get("nodeSelector") is not None:
            chosen.append("`nodeSelector`")
            errs += node_selector(device["nodeSelector"], child(path, "nodeSelector"))
        if device.get("allNodes") is not None:
            if device["allNodes"]:
                chosen.append("`allNodes`")
            else:
                errs.append(invalid(child(path, "allNodes"), False, "must be either unset or set to true"))
        message = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
                   "is set to true in the ResourceSlice spec")
        if not chosen:
            errs.append(required(path, message))
        elif len(chosen) > 1:
            errs.append(invalid(path, "{" + ", ".join(chosen) + "}", message))
    elif own:
        errs.append(invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
    if device.get("bindingConditions") or device.get("bindingFailureConditions"):
        errs += _binding(device, path)
    return errs


def _advanced(devices: list[Any]) -> bool:
    for d in devices:
        d = _m(d)
        if _l(d.get("taints")) or _l(d.get("consumesCounters")):
            return True
        if any(_m(a).get(k) is not None for a in _m(d.get("attributes")).values() for k in _LIST_KINDS):
            return True
    return False


def _node_selection(spec: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    chosen: list[str] = []
    if spec.get("nodeName") is not None:
        if spec["nodeName"]:
            chosen.append("`nodeName`")
            errs += invalid_each("spec.nodeName", str(spec["nodeName"]), names.name_is_dns_subdomain(str(spec["nodeName"])))
        else:
            errs.append(invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        errs += node_selector(spec["nodeSelector"], "spec.nodeSelector")
        terms = _l(_m(spec["nodeSelector"]).get("nodeSelectorTerms"))
        if len(terms) != 1:
            errs.append(invalid("spec.nodeSelector.nodeSelectorTerms", terms, "must have exactly one node selector term"))
    for field_name in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(field_name) is not None:
            if spec[field_name]:
                chosen.append(f"`{field_name}`")
            else:
                errs.append(invalid(f"spec.{field_name}", False, "must be either unset or set to true"))
    message = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not chosen:
        errs.append(required("spec", message))
    elif len(chosen) > 1:
        errs.append(invalid("spec", "{" + ", ".join(chosen) + "}", message + ", but multiple fields are set"))
    return errs


def validate_slice(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    if old is None:
        errs = meta.object_meta(obj.get("metadata"), namespaced=False, name_fn=names.name_is_dns_subdomain)
    else:
        errs = meta.object_meta_update(obj.get("metadata"), old.get("metadata"))
    spec, old_spec = _m(obj.get("spec")), _m((old or {}).get("spec"))
    pool = _m(spec.get("pool"))
    errs += driver_name(spec.get("driver"), "spec.driver")
    errs += pool_name(pool.get("name"), "spec.pool.name")
    count, generation = pool.get("resourceSliceCount") or 0, pool.get("generation") or 0
    if isinstance(count, int) and count <= 0:
        errs.append(invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"))
    if isinstance(generation, int) and generation < 0:
        errs.append(invalid("spec.pool.generation", generation, "must be greater than or equal to zero"))
    if old is not None:
        for path, new_value, old_value in (("spec.pool.name", pool.get("name"), _m(old_spec.get("pool")).get("name")),
                                           ("spec.driver", spec.get("driver"), old_spec.get("driver")),
                                           ("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName"))):
            if new_value != old_value:
                errs.append(invalid(path, new_value, meta.IMMUTABLE))
    errs += _node_selection(spec)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = _l(spec.get("devices"))
    old_devices = {str(_m(d).get("name")): _m(d) for d in _l(old_spec.get("devices"))}
    per_device = spec.get("perDeviceNodeSelection") is True
    errs += each(devices, MAX_DEVICES_ADVANCED if _advanced(devices) else MAX_DEVICES,
                 lambda d, at: _device(d, at, per_device, old_devices.get(str(_m(d).get("name")))),
                 "spec.devices", lambda d: str(_m(d).get("name")))
    errs += each(spec.get("sharedCounters"), MAX_COUNTER_SETS, _counter_set, "spec.sharedCounters",
                 lambda c: str(_m(c).get("name")))
    skip = set(_l(spec.get("skipNodeOperations")))
    if "NodePrepareResources" in skip and not skip & {"NodeUnprepareResources", "*"}:
        errs.append(invalid("spec.skipNodeOperations", _l(spec.get("skipNodeOperations")),
                            "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"))
    return errs
