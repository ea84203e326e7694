"""DeviceClasses, ResourceClaims and ResourceClaimTemplates (resource.k8s.io/v1).

Source: k8s.io/kubernetes pkg/apis/resource/validation/validation.go: ValidateDeviceClass(Update)
with validateDeviceClassSpec, ValidateResourceClaim(Update), ValidateResourceClaimTemplate(Update),
validateDeviceClaim (requests, constraints, config), validateDeviceRequest, validateExactDeviceRequest,
validateDeviceSubRequest, validateDeviceAllocationMode, validateSelector, validateDeviceDerivedAttribute,
validateDeviceConstraint, validateRequestNameRef, validateOpaqueConfiguration / validateRawExtension,
validateDeviceToleration, validateAllocationResult / validateDeviceRequestAllocationResult, and the
list helpers validateSet / validateSlice (a list over its limit is one "Too many" error and nothing
else is checked in it, for DOS protection).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from driver.store.admission import cel, meta, names, resources, scheduling
from driver.store.admission.field import (FieldError, child, duplicate, forbidden, index, invalid, invalid_each,
                                          not_supported, required, too_long, too_many)

DEVICE_REQUESTS_MAX = 32  # resource.DeviceRequestsMaxSize
DEVICE_SELECTORS_MAX = 32  # resource.DeviceSelectorsMaxSize
DEVICE_CONSTRAINTS_MAX = 32  # resource.DeviceConstraintsMaxSize
DEVICE_CONFIG_MAX = 32  # resource.DeviceConfigMaxSize
FIRST_AVAILABLE_MAX = 8  # resource.FirstAvailableDeviceRequestMaxSize
TOLERATIONS_MAX = 16  # resource.DeviceTolerationsMaxLength
RESULTS_MAX = 32  # resource.AllocationResultsMaxSize
OPAQUE_PARAMETERS_MAX = 10 * 1024  # resource.OpaqueParametersMaxLength
POOL_NAME_MAX = 253  # resource.PoolNameMaxLength
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
_REF_MESSAGE = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


Item = Callable[[Any, str], list[FieldError]]


def each(items: Any, maximum: int, check: Item, path: str, item_key: Callable[[Any], Any] | None = None) -> list[FieldError]:
    """validateSlice (item_key None) / validateSet: the size limit short-circuits."""
    items = _l(items)
    if maximum >= 0 and len(items) > maximum:
        return [too_many(path, len(items), maximum)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += check(item, index(path, i))
    if item_key is not None:
        seen: list[Any] = []
        for i, item in enumerate(items):
            k = item_key(item)
            if k in seen:
                errs.append(duplicate(index(path, i), k))
            else:
                seen.append(k)
    return errs


def driver_name(name: Any, path: str) -> list[FieldError]:
    """ValidateCSIDriverName: required, 63 bytes, a DNS subdomain (case-insensitively)."""
    name = str(name or "")
    if not name:
        return [required(path)]
    errs = [too_long(path, 63)] if len(name.encode()) > 63 else []
    return errs + invalid_each(path, name, names.is_dns1123_subdomain(name.lower()))


def pool_name(name: Any, path: str) -> list[FieldError]:
    name = str(name or "")
    if not name:
        return [required(path)]
    errs = [too_long(path, POOL_NAME_MAX)] if len(name.encode()) > POOL_NAME_MAX else []
    for part in name.split("/"):
        errs += invalid_each(path, part, names.is_dns1123_subdomain(part))
    return errs


def _label(name: Any, path: str) -> list[FieldError]:
    return invalid_each(path, str(name or ""), names.is_dns1123_label(str(name or "")))


def _device_class(name: Any, path: str) -> list[FieldError]:
    if not name:
        return [required(path)]
    return invalid_each(path, str(name), names.is_dns1123_subdomain(str(name)))


def selectors(items: Any, path: str, stored: bool = False) -> list[FieldError]:
    def one(selector: Any, at: str) -> list[FieldError]:
        expr = _m(selector).get("cel")
        if expr is None:
            return [required(child(at, "cel"))]
        text = _m(expr).get("expression")
        if not text:
            return [required(child(at, "cel", "expression"), "expression is empty")]
        return cel.expression(str(text), child(at, "cel", "expression"), stored=stored)
    return each(items, DEVICE_SELECTORS_MAX, one, path)


def toleration(t: Any, path: str) -> list[FieldError]:
    """validateDeviceToleration (the operator defaults to Equal)."""
    t = _m(t)
    errs: list[FieldError] = []
    if t.get("key"):
        errs += meta.label_name(str(t["key"]), child(path, "key"))
    op, value = t.get("operator") or "", str(t.get("value") or "")
    if op == "Exists":
        if value:
            errs.append(invalid(child(path, "value"), value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        errs += invalid_each(child(path, "value"), value, names.is_label_value(value))
    elif not op:
        errs.append(required(child(path, "operator")))
    else:
        errs.append(not_supported(child(path, "operator"), op, ["Equal", "Exists"]))
    effect = t.get("effect")
    if effect and effect not in TAINT_EFFECTS:
        errs.append(not_supported(child(path, "effect"), effect, sorted(TAINT_EFFECTS)))
    return errs


def _allocation_mode(request: Mapping[str, Any], path: str) -> list[FieldError]:
    mode, count = request.get("allocationMode") or "", request.get("count") or 0
    if mode == "All":
        return [invalid(child(path, "count"), count, "must not be specified when allocationMode is 'All'")] if count else []
    if mode == "ExactCount":
        return [invalid(child(path, "count"), count, "must be greater than zero")] if count <= 0 else []
    return [not_supported(child(path, "allocationMode"), mode, ["All", "ExactCount"])]


def _derived(items: Any, path: str, request: str, constraint_attrs: Mapping[str, set[str]]) -> list[FieldError]:
    def one(attr: Any, at: str) -> list[FieldError]:
        attr, errs = _m(attr), []
        name = str(attr.get("name") or "")
        parent = request.split("/", 1)[0]
        if name and not any(name in constraint_attrs.get(k, set()) for k in ("", request, parent)):
            errs.append(invalid(child(at, "name"), name, "must be referenced by at least one matchAttribute or "
                                                         "distinctAttribute constraint targeting this request"))
        if attr.get("expression"):
            errs += cel.expression(str(attr["expression"]), child(at, "expression"))
        return errs
    return each(items, -1, one, path, lambda a: str(_m(a).get("name")))


def _exact(request: Mapping[str, Any], path: str, name: str, attrs: Mapping[str, set[str]],
           stored: bool, sub: bool = False) -> list[FieldError]:
    errs = _label(request.get("name"), child(path, "name")) if sub else []
    errs += _device_class(request.get("deviceClassName"), child(path, "deviceClassName"))
    errs += selectors(request.get("selectors"), child(path, "selectors"), stored)
    errs += _derived(request.get("derivedAttributes"), child(path, "derivedAttributes"), name, attrs)
    errs += _allocation_mode(request, path)
    tolerations = _l(request.get("tolerations"))
    if len(tolerations) > TOLERATIONS_MAX:
        return errs + [too_many(child(path, "tolerations"), len(tolerations), TOLERATIONS_MAX)]
    for i, t in enumerate(tolerations):
        errs += toleration(t, index(child(path, "tolerations"), i))
    return errs


def request_names(devices: Mapping[str, Any]) -> dict[str, set[str] | None]:
    out: dict[str, set[str] | None] = {}
    for request in _l(devices.get("requests")):
        request = _m(request)
        subs = _l(request.get("firstAvailable"))
        out[str(request.get("name"))] = {str(_m(s).get("name")) for s in subs} if subs else None
    return out


def _has(known: Mapping[str, set[str] | None], ref: str) -> bool:
    parts = ref.split("/")
    if len(parts) > 2 or parts[0] not in known:
        return False
    return len(parts) == 1 or parts[1] in (known[parts[0]] or set())


def _ref(ref: Any, path: str, known: Mapping[str, set[str] | None]) -> list[FieldError]:
    ref = str(ref)
    parts = ref.split("/")
    if len(parts) > 2:
        return [invalid(path, ref, _REF_MESSAGE)]
    errs: list[FieldError] = []
    for part in parts:
        errs += _label(part, path)
    if not _has(known, ref):
        errs.append(invalid(path, ref, _REF_MESSAGE))
    return errs


def _refs(items: Any, path: str, known: Mapping[str, set[str] | None]) -> list[FieldError]:
    return each(items, DEVICE_REQUESTS_MAX, lambda r, at: _ref(r, at, known), path, str)


def raw_extension(value: Any, path: str, stored: bool) -> list[FieldError]:
    """validateRawExtension: a JSON object of at most 10 KiB."""
    if value is None:
        return [required(path)]
    raw = json.dumps(value, separators=(",", ":"))
    if not stored and len(raw.encode()) > OPAQUE_PARAMETERS_MAX:
        return [too_long(path, OPAQUE_PARAMETERS_MAX)]
    if not isinstance(value, Mapping):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def device_configuration(config: Mapping[str, Any], path: str, stored: bool) -> list[FieldError]:
    opaque = config.get("opaque")
    if opaque is None:
        return [required(child(path, "opaque"))]
    opaque = _m(opaque)
    return (driver_name(opaque.get("driver"), child(path, "opaque", "driver"))
            + raw_extension(opaque.get("parameters"), child(path, "opaque", "parameters"), stored))


def _constraint_attrs(constraints: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in _l(constraints):
        c = _m(c)
        attr = c.get("matchAttribute") or c.get("distinctAttribute")
        if not attr:
            continue
        for target in _l(c.get("requests")) or [""]:
            out.setdefault(str(target), set()).add(str(attr))
    return out


def fully_qualified_name(name: Any, path: str) -> list[FieldError]:
    """validateFullyQualifiedName: `<domain>/<C identifier>`."""
    name = str(name)
    errs = qualified_name(name, path)
    if "/" not in name:
        errs.append(invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))
    return errs


def qualified_name(name: str, path: str) -> list[FieldError]:
    """validateQualifiedName: a C identifier (32 bytes) optionally prefixed by a driver-name domain."""
    parts = name.split("/")
    if len(parts) > 2:
        return [invalid(path, name, "must not contain more than one slash")]
    errs: list[FieldError] = []
    if len(parts) == 2:
        errs += [invalid(path, "", "the domain must not be empty")] if not parts[0] else driver_name(parts[0], path)
        if not parts[1]:
            return errs + [invalid(path, "", "the name must not be empty")]
    ident = parts[-1]
    if len(ident.encode()) > 32:
        errs.append(too_long(path, 32))
    return errs + invalid_each(path, ident, names.is_c_identifier(ident))


def device_claim(devices: Any, path: str, stored: bool = False) -> list[FieldError]:
    """validateDeviceClaim."""
    devices = _m(devices)
    known = request_names(devices)
    attrs = _constraint_attrs(devices.get("constraints"))

    def request(req: Any, at: str) -> list[FieldError]:
        req = _m(req)
        name = str(req.get("name") or "")
        errs = _label(name, child(at, "name"))
        subs, exact = _l(req.get("firstAvailable")), req.get("exactly")
        if not subs and exact is None:
            return errs + [required(at, "exactly one of `exactly` or `firstAvailable` is required")]
        if subs and exact is not None:
            return errs + [invalid(at, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple "
                                             "fields are set")]
        if exact is not None:
            return errs + _exact(_m(exact), child(at, "exactly"), name, attrs, stored)
        return errs + each(subs, FIRST_AVAILABLE_MAX,
                           lambda s, sat: _exact(_m(s), sat, f"{name}/{_m(s).get('name')}", attrs, stored, sub=True),
                           child(at, "firstAvailable"), lambda s: str(_m(s).get("name")))

    def constraint(c: Any, at: str) -> list[FieldError]:
        c = _m(c)
        errs = _refs(c.get("requests"), child(at, "requests"), known)
        if c.get("matchAttribute") is not None:
            errs += fully_qualified_name(c["matchAttribute"], child(at, "matchAttribute"))
        elif c.get("distinctAttribute") is not None:
            errs += fully_qualified_name(c["distinctAttribute"], child(at, "distinctAttribute"))
        else:
            errs.append(required(at, 'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple '
                                     "fields are set"))
        return errs

    def config(c: Any, at: str) -> list[FieldError]:
        c = _m(c)
        return _refs(c.get("requests"), child(at, "requests"), known) + device_configuration(c, at, stored)

    errs = each(devices.get("requests"), DEVICE_REQUESTS_MAX, request, child(path, "requests"),
                lambda r: str(_m(r).get("name")))
    errs += each(devices.get("constraints"), DEVICE_CONSTRAINTS_MAX, constraint, child(path, "constraints"))
    return errs + each(devices.get("config"), DEVICE_CONFIG_MAX, config, child(path, "config"))


def allocation_result(allocation: Any, path: str, known: Mapping[str, set[str] | None]) -> list[FieldError]:
    """validateAllocationResult for an allocation the document sets (not for a stored one)."""
    allocation = _m(allocation)

    def result(r: Any, at: str) -> list[FieldError]:
        r = _m(r)
        errs = _ref(r.get("request") or "", child(at, "request"), known)
        errs += driver_name(r.get("driver"), child(at, "driver")) + pool_name(r.get("pool"), child(at, "pool"))
        errs += _label(r.get("device"), child(at, "device"))
        for i, t in enumerate(_l(r.get("tolerations"))):
            errs += toleration(t, index(child(at, "tolerations"), i))
        return errs

    devices = _m(allocation.get("devices"))
    errs = each(devices.get("results"), RESULTS_MAX, result, child(path, "devices", "results"))
    if allocation.get("nodeSelector") is not None:
        errs += scheduling.node_selector(allocation["nodeSelector"], child(path, "nodeSelector"))
    return errs


def _claim_name(name: str, prefix: bool) -> list[str]:
    return names.name_is_dns_subdomain(name, prefix)


def validate_class(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    errs = meta.object_meta(obj.get("metadata"), namespaced=False, name_fn=names.name_is_long_name)
    if old is not None:
        errs += meta.object_meta_update(obj.get("metadata"), old.get("metadata"))
    spec, old_spec = _m(obj.get("spec")), _m((old or {}).get("spec"))
    errs += selectors(spec.get("selectors"), "spec.selectors",
                      stored=old is not None and spec.get("selectors") == old_spec.get("selectors"))
    stored = old is not None and spec.get("config") == old_spec.get("config")
    errs += each(spec.get("config"), DEVICE_CONFIG_MAX, lambda c, at: device_configuration(_m(c), at, stored),
                 "spec.config")
    ext = spec.get("extendedResourceName")
    if ext is not None and not resources.is_extended(str(ext)):
        errs.append(invalid("spec.extendedResourceName", str(ext), "must be a valid extended resource name"))
    return errs


def validate_claim(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    errs = meta.object_meta(obj.get("metadata"), namespaced=True, name_fn=_claim_name)
    if old is not None:
        errs += meta.object_meta_update(obj.get("metadata"), old.get("metadata"))
        if obj.get("spec") != old.get("spec"):
            errs.append(invalid("spec", obj.get("spec"), meta.IMMUTABLE))
    else:
        errs += device_claim(_m(obj.get("spec")).get("devices"), "spec.devices")
    return errs + _status(obj, old)


def _status(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """The local store lets a document carry a claim's status (it stands in for the scheduler): an
    allocation once set may be cleared but not changed (validateResourceClaimStatusUpdate), a new
    one is checked as a new allocation result, reservedFor needs an allocation."""
    status, old_status = _m(obj.get("status")), _m((old or {}).get("status"))
    alloc, old_alloc = status.get("allocation"), old_status.get("allocation")
    errs: list[FieldError] = []
    if _l(status.get("reservedFor")) and alloc is None:
        errs.append(forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
    if old_alloc and alloc and alloc != old_alloc:
        errs.append(invalid("status.allocation", alloc, meta.IMMUTABLE))
    elif alloc and alloc != old_alloc:
        errs += allocation_result(alloc, "status.allocation", request_names(_m(_m(obj.get("spec")).get("devices"))))
    return errs


def validate_template(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    if old is not None:
        errs = meta.object_meta_update(obj.get("metadata"), old.get("metadata"))
        if obj.get("spec") != old.get("spec"):
            errs.append(invalid("spec", obj.get("spec"), meta.IMMUTABLE))
        return errs
    errs = meta.object_meta(obj.get("metadata"), namespaced=True, name_fn=_claim_name)
    spec = _m(obj.get("spec"))
    errs += meta.template_meta(spec.get("metadata"), "spec.metadata")
    return errs + device_claim(_m(spec.get("spec")).get("devices"), "spec.spec.devices")
