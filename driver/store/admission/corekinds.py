"""Nodes, Namespaces and Events.

Sources (k8s.io/kubernetes pkg/apis/core/validation): validation.go ValidateNode (metadata, taints,
capacity/allocatable, podCIDRs), ValidateNodeUpdate (podCIDRs and providerID set once, unique
addresses), ValidateNamespace / ValidateNamespaceUpdate (a DNS label, finalizer names), and
events.go ValidateEventCreate's legacyValidateEvent (the event's namespace matches its
involvedObject's; with eventTime set, reportingController, reportingInstance, action and reason are
required and bounded).

Node taints are reported under `metadata.taints[i]`, as kube-apiserver reports them (ValidateNode
passes the metadata path to validateNodeTaints).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.store.admission import meta, names, resources, scheduling
from driver.store.admission.field import FieldError, duplicate, forbidden, index, invalid, invalid_each, required


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def validate_node(node: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    metadata, spec = _m(node.get("metadata")), _m(node.get("spec"))
    if old is None:
        errs = meta.object_meta(metadata, namespaced=False, name_fn=names.name_is_dns_subdomain)
    else:
        errs = meta.object_meta_update(metadata, old.get("metadata"))
    if old is None and spec.get("taints"):
        errs += scheduling.node_taints(spec["taints"], "metadata.taints")
    errs += resources.node_resources(node.get("status"))
    cidrs = [str(c) for c in _l(spec.get("podCIDRs"))]
    if old is None and cidrs:
        for i, cidr in enumerate(cidrs):
            errs += invalid_each(index("spec.podCIDRs", i), cidr, names.is_valid_cidr(cidr))
        if len(cidrs) > 1:
            families = {":" in c for c in cidrs}
            if len(families) != 2 or len(cidrs) > 2:
                errs.append(invalid("spec.podCIDRs", cidrs, "may specify no more than one CIDR for each IP family"))
            for i, cidr in enumerate(cidrs):
                if cidr in cidrs[:i]:
                    errs.append(duplicate(index("spec.podCIDRs", i), cidr))
    if old is None:
        return errs
    seen: list[Any] = []
    for i, address in enumerate(_l(_m(node.get("status")).get("addresses"))):
        if address in seen:
            errs.append(duplicate(index("status.addresses", i), address))
        seen.append(address)
    old_spec = _m(old.get("spec"))
    old_cidrs = [str(c) for c in _l(old_spec.get("podCIDRs"))]
    if old_cidrs and old_cidrs != cidrs:
        errs.append(forbidden("spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"))
    if old_spec.get("providerID") and old_spec.get("providerID") != spec.get("providerID"):
        errs.append(forbidden("spec.providerID", "node updates may not change providerID except from \"\" to valid"))
    if spec.get("taints"):
        errs += scheduling.node_taints(spec["taints"], "metadata.taints")
    if spec.get("externalID") != old_spec.get("externalID"):
        errs.append(forbidden("spec.externalID", "may not be updated"))
    return errs


def validate_namespace(ns: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    metadata = _m(ns.get("metadata"))
    if old is not None:
        return meta.object_meta_update(metadata, old.get("metadata"))
    errs = meta.object_meta(metadata, namespaced=False, name_fn=names.name_is_dns_label)
    for f in _l(_m(ns.get("spec")).get("finalizers")):
        errs += invalid_each("spec.finalizers", str(f), names.is_qualified_name(str(f)))
        errs += meta.kube_finalizer_name(str(f), "spec.finalizers")
    return errs


_REPORTING_INSTANCE_MAX, _ACTION_MAX, _REASON_MAX, _NOTE_MAX = 128, 128, 128, 1024


def validate_event(event: Mapping[str, Any]) -> list[FieldError]:
    metadata = _m(event.get("metadata"))
    errs = meta.object_meta(metadata, namespaced=True, name_fn=names.name_is_dns_subdomain)
    namespace = str(metadata.get("namespace") or "")
    involved_ns = str(_m(event.get("involvedObject")).get("namespace") or "")
    if not event.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (involved_ns and involved_ns != namespace):
            errs.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        controller = str(event.get("reportingComponent") or "")
        if not controller:
            errs.append(required("reportingComponent"))
        errs += invalid_each("reportingComponent", controller, names.is_qualified_name(controller))
        for field_name, limit in (("reportingInstance", _REPORTING_INSTANCE_MAX), ("action", _ACTION_MAX),
                                  ("reason", _REASON_MAX)):
            value = str(event.get(field_name) or "")
            if not value:
                errs.append(required(field_name))
            if len(value) > limit:
                errs.append(invalid(field_name, "", f"can have at most {limit} characters"))
        if len(str(event.get("message") or "")) > _NOTE_MAX:
            errs.append(invalid("message", "", f"can have at most {_NOTE_MAX} characters"))
    errs += invalid_each("namespace", namespace, names.is_dns1123_subdomain(namespace))
    return errs
