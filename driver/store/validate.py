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
from driver.errors import InputError


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
