"""kube-apiserver's admission of one object: defaults, mutating plugins, strategy, typed validation.

The schema (driver.schema) says whether an object decodes; this package does what kube-apiserver
does next, kind by kind, with its field paths and messages (field.py): set the defaults
(defaults.py, podefaults.py), run the mutating admission plugins and the registry strategy's
PrepareForCreate / PrepareForUpdate (mutate.py), then the kind's Validate or ValidateUpdate
function (meta.py and the per-kind modules). The store's `apply` (driver.store.apply.plan) calls it
for every document; docs/validation.md lists what is ported and what is not.

Public API
----------
`decode(kind, obj, old=None) -> dict`
    A copy of `obj` as kube-apiserver decodes it: with the kind's defaults and, for an update, the
    fields `kubectl apply` keeps from the stored object `old` (mutate.carry_over). The schema check
    runs on this (a slice without `pool.generation` is generation 0, not "Required value").
`admit(kind, obj, old=None, copy=True) -> dict`
    A copy (`obj` itself with copy=False) of a decoded `obj` after the admission plugins and the
    strategy, checked by the kind's validation (`old`: the stored object of an update). InputError `The Pod "x" is invalid: <field
    errors>` (kubectl's wording of a 422) or `pods "x" is forbidden: ...` (an admission plugin's 403).
`errors(kind, obj, old=None) -> list[FieldError]`
    The validation alone, as data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from driver.errors import InputError
from driver.store.admission import claims, corekinds, defaults, mutate, pod, slices, workloads
from driver.store.admission.field import FieldError, copy_json, invalid_message

__all__ = ["FieldError", "admit", "decode", "errors"]

Validator = Callable[[Mapping[str, Any], Mapping[str, Any] | None], list[FieldError]]


def _pod(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    return pod.validate_create(obj) if old is None else pod.validate_update(obj, old)


_VALIDATORS: dict[str, Validator] = {
    "Pod": _pod,
    "Node": corekinds.validate_node,
    "Namespace": corekinds.validate_namespace,
    "Event": lambda obj, _old: corekinds.validate_event(obj),
    "DeviceClass": claims.validate_class,
    "ResourceClaim": claims.validate_claim,
    "ResourceClaimTemplate": claims.validate_template,
    "ResourceSlice": slices.validate_slice,
    "Deployment": workloads.validate_deployment,
    "ReplicaSet": workloads.validate_replicaset,
    "Job": workloads.validate_job,
}
# How kube-apiserver names a kind's resource in a Forbidden message (`pods "x" is forbidden`).
_RESOURCES = {"Pod": "pods"}


def decode(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> dict[str, Any]:
    out = copy_json(obj)
    if old is not None:
        mutate.carry_over(kind, out, old)
    defaults.apply(kind, out)
    return out


def errors(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    validator = _VALIDATORS.get(kind)
    return validator(obj, old) if validator is not None else []


def admit(kind: str, obj: dict[str, Any], old: Mapping[str, Any] | None = None, *, copy: bool = True) -> dict[str, Any]:
    out = copy_json(obj) if copy else obj
    stored = decode(kind, old) if old is not None else None  # reading from storage applies defaults too
    name = str((out.get("metadata") or {}).get("name") or "")
    if kind == "Pod":
        mutate.default_toleration_seconds(out)
        try:
            mutate.priority(out, stored)
        except mutate.AdmissionForbidden as exc:
            raise InputError(f'{_RESOURCES[kind]} "{name}" is forbidden: {exc}') from None
    if stored is None:
        mutate.prepare_create(kind, out)
    else:
        mutate.prepare_update(kind, out, stored)
    # Reads from storage default again: a job's labels default to its template's, generated ones
    # included, so that is what a client sees (and stores here).
    defaults.apply(kind, out)
    problems = errors(kind, out, stored)
    if problems:
        raise InputError(invalid_message(kind, name, problems))
    return out
