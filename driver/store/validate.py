"""The allocator's reading of objects written through `fake-dra apply`, after kube-apiserver's checks.

The API server validates what it stores: the schema (field names, types, required fields) is
driver.schema's, checked first; kube-apiserver's typed validation is driver.store.admission's,
checked next. What the scheduler then reads these objects with, the reference allocator's own input
parsers, runs last, so an object the allocator or the plugin would still choke on is refused when
applied, with the field path in the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.allocator.inputs import allocated_results, parse_claim, parse_class
from driver.allocator.parsed import index_slices
from driver.allocator.poolstatus import parse_pool_status_request
from driver.allocator.taintrules import parse_rule
from driver.errors import InputError
from driver.slices.names import is_dns_label


def check_object(kind: str, obj: Mapping[str, Any]) -> None:
    """InputError naming the field when `obj` (of `kind`, already valid against the 1.37 schema,
    driver.schema) is not something its readers accept."""
    if kind == "ResourceClaim":
        parse_claim(obj)
        allocated_results(obj)
    elif kind == "ResourceClaimTemplate":
        _check_template(obj)
    elif kind == "DeviceClass":
        parse_class(obj)
    elif kind == "ResourceSlice":
        _check_slice(obj)
    elif kind == "DeviceTaintRule":
        parse_rule(obj)
    elif kind == "ResourcePoolStatusRequest":
        parse_pool_status_request(obj)
    elif kind == "PodGroup":
        _check_pod_group(obj)


def _check_template(obj: Mapping[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    label = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    inner = (obj.get("spec") or {}).get("spec")
    if not isinstance(inner, Mapping):
        raise InputError(f"ResourceClaimTemplate {label}: spec.spec: required (the claim spec to stamp out)")
    try:
        parse_claim({"metadata": meta, "spec": inner})
    except InputError as exc:
        raise InputError(str(exc).replace(f"ResourceClaim {label}: spec.", f"ResourceClaimTemplate {label}: spec.spec.", 1)) from None


def _check_slice(obj: Mapping[str, Any]) -> None:
    (parsed,) = index_slices([obj])
    # A ParsedSlice parses its counter sets and devices on first access, raising InputError there.
    _ = parsed.counter_sets, parsed.devices


def _check_pod_group(obj: Mapping[str, Any]) -> None:
    """scheduling.k8s.io/v1beta1 PodGroup, the part DRA reads: spec.resourceClaims entries each a
    DNS-label name, unique, with exactly one of resourceClaimName / resourceClaimTemplateName
    (k8s.io/api scheduling/v1beta1 PodGroupResourceClaim)."""
    meta = obj.get("metadata") or {}
    label = f"PodGroup {meta.get('namespace') or 'default'}/{meta.get('name')}"
    seen: set[str] = set()
    for i, entry in enumerate(((obj.get("spec") or {}).get("resourceClaims")) or ()):
        where = f"{label}: spec.resourceClaims[{i}]"
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not is_dns_label(name):
            raise InputError(f"{where}.name: {name!r} must be a DNS label")
        if name in seen:
            raise InputError(f"{where}.name: Duplicate value: {name!r}")
        seen.add(name)
        sources = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if entry.get(k)]
        if len(sources) != 1:
            raise InputError(f"{where}: must specify exactly one of resourceClaimName, resourceClaimTemplateName")
