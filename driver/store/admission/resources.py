"""Resource names and quantities of containers, pods and nodes (requests, limits, capacity, claims).

Sources: k8s.io/kubernetes pkg/apis/core/validation/validation.go (validateResourceName,
validateContainerResourceName, validatePodResourceName, ValidateResourceQuantityValue,
validateResourceRequirements, validateResourceClaimNames, validateResourceQuantityHugePageValue,
validatePodResources) and pkg/apis/core/helper/helpers.go (IsStandardResourceName,
IsStandardContainerResourceName, IsNativeResource, IsExtendedResourceName, IsIntegerResourceName,
IsOvercommitAllowed, IsHugePageResourceName). Quantities are compared exactly (driver.model.quantity)
and printed in the canonical form `Quantity.String()` gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from driver.errors import InputError
from driver.model.quantity import canonical_quantity, parse_quantity
from driver.store.admission import names
from driver.store.admission.field import (FieldError, child, duplicate, forbidden, index, invalid, invalid_each, key,
                                          not_found, not_supported, required)
from driver.store.admission.meta import NEGATIVE

_STANDARD = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
}
_INTEGER = {"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
            "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"}
_CONTAINER = {"cpu", "memory", "ephemeral-storage"}
HUGEPAGES = "hugepages-"
POD_LEVEL = ("cpu", "memory")  # resourcehelper.SupportedPodLevelResources (hugepages also pass)


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES)


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    if is_native(name) or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def _is_standard(name: str) -> bool:
    return name in _STANDARD or name.startswith((HUGEPAGES, "requests." + HUGEPAGES))


def quantity(value: Any) -> Fraction | None:
    """The value of a quantity field; None when it does not parse (the schema reported that)."""
    try:
        return parse_quantity(value)
    except (InputError, TypeError, ValueError):
        return None


def canonical(value: Any) -> str:
    try:
        return canonical_quantity(value)
    except (InputError, TypeError, ValueError):
        return str(value)


def resource_name(name: str, path: str) -> list[FieldError]:
    """validateResourceName: a qualified name; unprefixed ones must be standard."""
    errs = invalid_each(path, name, names.is_qualified_name(name))
    if errs:
        return errs
    if "/" not in name and not _is_standard(name):
        return [invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = resource_name(name, path)
    if "/" not in name:
        if name not in _CONTAINER and not is_hugepages(name):
            return errs + [invalid(path, name, "must be a standard resource for containers")]
    elif not is_native(name) and not is_extended(name):
        return errs + [invalid(path, name, "doesn't follow extended resource name standard")]
    return errs


def pod_resource_name(name: str, path: str) -> list[FieldError]:
    errs = resource_name(name, path)
    if errs:
        return errs
    if name not in POD_LEVEL and not is_hugepages(name):
        return [not_supported(path, name, list(POD_LEVEL))]
    return []


def quantity_value(name: str, value: Any, path: str) -> list[FieldError]:
    """ValidateResourceQuantityValue: not negative; whole numbers for integer resources."""
    q = quantity(value)
    if q is None:
        return []
    errs = []
    if q < 0:
        errs.append(invalid(path, canonical(value), NEGATIVE))
    if (name in _INTEGER or is_extended(name)) and (q * 1000) % 1000 != 0:
        errs.append(invalid(path, canonical(value), "must be an integer"))
    return errs


def _hugepage_size(name: str) -> Fraction | None:
    return quantity(name[len(HUGEPAGES):])


def _hugepages_value(name: str, value: Any, path: str) -> list[FieldError]:
    size, q = _hugepage_size(name), quantity(value)
    if size is None or q is None or size <= 0:
        return []
    if q <= 0 or (q / size).denominator != 1:
        return [invalid(path, canonical(value), f"{canonical(value)} is not positive integer multiple of {name}")]
    return []


def requirements(reqs: Any, pod_claims: set[str], path: str, *, pod_level: bool = False) -> list[FieldError]:
    """validateResourceRequirements (container or pod level) with the claim names check."""
    reqs = reqs if isinstance(reqs, Mapping) else {}
    name_fn = pod_resource_name if pod_level else container_resource_name
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    limits = reqs.get("limits") if isinstance(reqs.get("limits"), Mapping) else {}
    requests = reqs.get("requests") if isinstance(reqs.get("requests"), Mapping) else {}
    errs: list[FieldError] = []
    lim_qos = req_qos = lim_huge = req_huge = False
    for name, value in sorted(limits.items()):
        at = key(lim_path, str(name))
        errs += name_fn(str(name), at) + quantity_value(str(name), value, at)
        if is_hugepages(str(name)):
            lim_huge = True
            errs += _hugepages_value(str(name), value, at)
        lim_qos = lim_qos or name in ("cpu", "memory")
    for name, value in sorted(requests.items()):
        at = key(req_path, str(name))
        errs += name_fn(str(name), at) + quantity_value(str(name), value, at)
        q = quantity(value)
        if name in limits:
            lim = quantity(limits[name])
            if q is not None and lim is not None:
                if q != lim and not is_overcommit_allowed(str(name)):
                    errs.append(invalid(req_path, canonical(value),
                                        f"must be equal to {name} limit of {canonical(limits[name])}"))
                elif q > lim:
                    errs.append(invalid(req_path, canonical(value),
                                        f"must be less than or equal to {name} limit of {canonical(limits[name])}"))
        elif not is_overcommit_allowed(str(name)):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        if is_hugepages(str(name)):
            req_huge = True
            errs += _hugepages_value(str(name), value, at)
        req_qos = req_qos or name in ("cpu", "memory")
    if not lim_qos and not req_qos and (lim_huge or req_huge):
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    if pod_level:
        if reqs.get("claims") is not None:
            errs.insert(0, forbidden(child(path, "claims"), "claims cannot be set for Resources at pod-level"))
        return errs
    return errs + claim_names(reqs.get("claims"), pod_claims, child(path, "claims"))


def claim_names(claims: Any, pod_claims: set[str], path: str) -> list[FieldError]:
    """validateResourceClaimNames: each entry names an entry of pod.spec.resourceClaims, once (a
    whole claim, or a request of it, not both)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims if isinstance(claims, list) else []):
        claim = claim if isinstance(claim, Mapping) else {}
        name, request = str(claim.get("name") or ""), str(claim.get("request") or "")
        at = index(path, i)
        if not name:
            errs.append(required(at))
            continue
        if name in seen:
            errs.append(duplicate(at, name))
        else:
            k = name
            if request:
                errs += invalid_each(child(at, "request"), request, names.is_dns1123_label(request))
                k = f"{name}/{request}"
            if k in seen:
                errs.append(duplicate(at, k))
            elif not request:
                errs += [duplicate(at, name) for s in sorted(seen) if "/" in s and s.split("/", 1)[0] == name]
            seen.add(k)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            errs.append(not_found(at, name, detail))
    return errs


def node_resources(status: Any) -> list[FieldError]:
    """ValidateNodeResources: capacity and allocatable quantities."""
    status = status if isinstance(status, Mapping) else {}
    errs: list[FieldError] = []
    for section in ("capacity", "allocatable"):
        values = status.get(section)
        for name, value in sorted((values if isinstance(values, Mapping) else {}).items()):
            errs += quantity_value(str(name), value, f"status.{section}.{name}")
    return errs
