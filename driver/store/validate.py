"""Semantic checks for objects written through `fake-dra apply`, by the readers that will use them.

The API server validates what it stores: the schema (field names, types, required fields) is
driver.schema's, checked first; the rules beyond it (CEL, names, exactly-one-of) are the
reference allocator's own input parsers here (the scheduler reads these objects through them), so
an object the allocator or the plugin would later choke on is refused when applied, with the field
path in the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.allocator.inputs import allocated_results, parse_claim, parse_class
from driver.allocator.parsed import index_slices
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
    elif kind == "Pod":
        _check_pod(obj)
    elif kind == "Namespace":
        _check_namespace(obj)
    elif kind in ("Deployment", "ReplicaSet", "Job"):
        _check_workload(kind, obj)


def _check_namespace(obj: Mapping[str, Any]) -> None:
    """ValidateNamespace (pkg/apis/core/validation): the name is a DNS label (63 characters at most)."""
    name = (obj.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not is_dns_label(name):
        raise InputError(f"Namespace {name}: metadata.name: {name!r} must be a DNS label (lower-case letters, "
                         "digits and '-', at most 63 characters, starting and ending with a letter or digit)")


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


def _check_pod(obj: Mapping[str, Any]) -> None:
    """The part of a Pod that scheduling with DRA reads: spec.resourceClaims (core/v1 PodResourceClaim:
    a name and exactly one of resourceClaimName / resourceClaimTemplateName)."""
    meta = obj.get("metadata") or {}
    label = f"Pod {meta.get('namespace') or 'default'}/{meta.get('name')}"
    claims = (obj.get("spec") or {}).get("resourceClaims")
    if claims is None:
        return
    if not isinstance(claims, list):
        raise InputError(f"{label}: spec.resourceClaims: must be a list")
    seen: set[str] = set()
    for i, entry in enumerate(claims):
        where = f"{label}: spec.resourceClaims[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry.get("name"):
            raise InputError(f"{where}.name: required")
        if entry["name"] in seen:
            raise InputError(f"{where}.name: Duplicate value: {entry['name']!r}")
        seen.add(entry["name"])
        sources = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if entry.get(k)]
        if len(sources) != 1:
            raise InputError(f"{where}: must specify exactly one of resourceClaimName, resourceClaimTemplateName")


def _check_workload(kind: str, obj: Mapping[str, Any]) -> None:
    """What the workload controllers (driver.controllers) rely on, as kube-apiserver checks it
    (pkg/apis/apps/validation ValidateDeploymentSpec / ValidateReplicaSetSpec, pkg/apis/batch/validation
    validateJobSpec): a selector that selects the template's labels, a pod template with containers,
    non-negative counts, and for a Job a restartPolicy of OnFailure or Never."""
    meta = obj.get("metadata") or {}
    label = f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name')}"
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector")
    manual = kind == "Job" and spec.get("manualSelector")
    if kind != "Job" or manual:
        if not isinstance(selector, Mapping) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            raise InputError(f"{label}: spec.selector: Required value" + ("" if kind != "Job" else " (manualSelector is true)"))
        if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
            raise InputError(f"{label}: spec.template.metadata.labels: Invalid value: {dict(labels)}: "
                             "`selector` does not match template `labels`")
    elif selector is not None:
        raise InputError(f"{label}: spec.selector: the Job's selector is generated from its uid; set manualSelector "
                         "to give one (kube-apiserver: `selector` not auto-generated)")
    containers = (template.get("spec") or {}).get("containers")
    if not isinstance(containers, list) or not containers:
        raise InputError(f"{label}: spec.template.spec.containers: Required value")
    for field in ("replicas", "parallelism", "completions", "backoffLimit", "minReadySeconds", "revisionHistoryLimit"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            raise InputError(f"{label}: spec.{field}: Invalid value: {value}: must be greater than or equal to 0")
    if kind == "Job":
        policy = (template.get("spec") or {}).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            raise InputError(f'{label}: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"')
        if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
            raise InputError(f"{label}: spec.completions: Required value: when completion mode is Indexed")
    _check_pod({"metadata": {"name": f"{meta.get('name')} template", "namespace": meta.get("namespace")},
                "spec": template.get("spec") or {}})
