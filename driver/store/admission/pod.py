"""Pods and pod templates: ValidatePodCreate, ValidatePodUpdate, ValidatePodTemplateSpec.

Sources (k8s.io/kubernetes pkg/apis/core/validation/validation.go): validatePodMetadataAndSpec,
ValidatePodSpecificAnnotations (mirror pods need a node, the pod-deletion-cost annotation is a 32-bit
integer, seccomp and AppArmor annotations), ValidatePodCreate (no ephemeral containers, no node
while scheduling gates remain), ValidatePodUpdate (what a pod update may change: images,
activeDeadlineSeconds, added tolerations, removed scheduling gates, node selector additions while
gated), ValidatePodTemplateSpec. ValidatePodUpdate ends its "pod updates may not change fields"
message with a cmp.Diff of the specs over several lines; here the message ends with the changed
fields instead, on one line.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from driver.store.admission import containers, meta, names, podspec, scheduling
from driver.store.admission.field import FieldError, child, forbidden, index, invalid, key, required

MIRROR = "kubernetes.io/config.mirror"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_CONTAINER = "container.apparmor.security.beta.kubernetes.io/"
_UPDATABLE = ("`spec.containers[*].image`", "`spec.initContainers[*].image`", "`spec.activeDeadlineSeconds`",
              "`spec.tolerations` (only additions to existing tolerations)",
              "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _seccomp_profile(value: str, path: str) -> list[FieldError]:
    if value in ("runtime/default", "docker/default", "unconfined"):
        return []
    if value.startswith("localhost/"):
        rest = value.removeprefix("localhost/")
        errs = [invalid(path, rest, "must be a relative path")] if rest.startswith("/") else []
        return errs + ([invalid(path, rest, "must not contain '..'")] if ".." in rest.split("/") else [])
    return [invalid(path, value, "must be a valid seccomp profile")]


def _container_names(spec: Mapping[str, Any]) -> set[str]:
    return {str(_m(c).get("name")) for f in ("containers", "initContainers", "ephemeralContainers")
            for c in _l(spec.get(f))}


def specific_annotations(annotations: Any, spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """ValidatePodSpecificAnnotations."""
    annotations = _m(annotations)
    errs: list[FieldError] = []
    if MIRROR in annotations and not spec.get("nodeName"):
        errs.append(invalid(key(path, MIRROR), annotations[MIRROR], "must set spec.nodeName if mirror pod annotation is set"))
    if DELETION_COST in annotations:
        cost = str(annotations[DELETION_COST])
        try:
            ok = -(2**31) <= int(cost) < 2**31 and cost.strip() == cost
        except ValueError:
            ok = False
        if not ok:
            errs.append(invalid(key(path, DELETION_COST), cost, "must be a 32bit integer"))
    if SECCOMP_POD in annotations:
        errs += _seccomp_profile(str(annotations[SECCOMP_POD]), child(path, SECCOMP_POD))
    for k, v in sorted(annotations.items()):
        if str(k).startswith(SECCOMP_CONTAINER):
            errs += _seccomp_profile(str(v), child(path, str(k)))
    for k, v in sorted(annotations.items()):
        if not str(k).startswith(APPARMOR_CONTAINER):
            continue
        container = str(k).removeprefix(APPARMOR_CONTAINER)
        if container not in _container_names(spec):
            errs.append(invalid(key(path, str(k)), container, "container not found"))
        profile = str(v)
        if profile not in ("", "runtime/default", "unconfined") and not profile.startswith("localhost/"):
            errs.append(invalid(key(path, str(k)), profile, f"invalid AppArmor profile name: \"{profile}\""))
    return errs


def _metadata_and_spec(pod: Mapping[str, Any]) -> list[FieldError]:
    metadata, spec = _m(pod.get("metadata")), _m(pod.get("spec"))
    errs = meta.object_meta(metadata, namespaced=True, name_fn=names.name_is_dns_subdomain)
    errs += specific_annotations(metadata.get("annotations"), spec, "metadata.annotations")
    errs += podspec.pod_spec(spec, "spec", resource_is_pod=True)
    if not spec.get("serviceAccountName"):
        for vi, vol in enumerate(_l(spec.get("volumes"))):
            for si, source in enumerate(_l(_m(_m(vol).get("projected")).get("sources"))):
                if _m(source).get("serviceAccountToken") is not None:
                    errs.append(forbidden(f"spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken",
                                          "must not be specified when serviceAccountName is not set"))
    errs += containers.only_for_pod(spec.get("containers"), "spec.containers")
    errs += containers.only_for_pod(spec.get("initContainers"), "spec.initContainers")
    return errs


def validate_create(pod: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePodCreate."""
    spec = _m(pod.get("spec"))
    errs = _metadata_and_spec(pod)
    if _l(spec.get("ephemeralContainers")):
        errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and _l(spec.get("schedulingGates")):
        errs.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs


def _container_updates(new: list[Any], old: list[Any], path: str) -> tuple[list[FieldError], bool]:
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, ctr in enumerate(new):
        image = _m(ctr).get("image")
        if not image:
            errs.append(required(child(index(path, i), "image")))
        elif isinstance(image, str) and image.strip() != image:
            errs.append(invalid(child(index(path, i), "image"), image, "must not have leading or trailing whitespace"))
    return errs, False


def _only_added_tolerations(new: list[Any], old: list[Any]) -> list[FieldError]:
    for toleration in old:
        wanted = {k: v for k, v in _m(toleration).items() if k != "tolerationSeconds"}
        if not any({k: v for k, v in _m(t).items() if k != "tolerationSeconds"} == wanted for t in new):
            return [forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")]
    return scheduling.tolerations(new, "spec.tolerations")


def _changed(new: Any, old: Any, path: str = "spec") -> list[str]:
    """The paths where two specs differ, as deep as both sides have the same shape."""
    if isinstance(new, Mapping) and isinstance(old, Mapping):
        out: list[str] = []
        for k in sorted(set(new) | set(old), key=str):
            if new.get(k) != old.get(k):
                out += _changed(new.get(k), old.get(k), f"{path}.{k}")
        return out
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [p for i, (a, b) in enumerate(zip(new, old)) if a != b for p in _changed(a, b, f"{path}[{i}]")]
    return [path]


def validate_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePodUpdate."""
    new_spec, old_spec = _m(new.get("spec")), _m(old.get("spec"))
    errs = meta.object_meta_update(new.get("metadata"), old.get("metadata"))
    errs += _metadata_and_spec(new)
    for k in (MIRROR, ):
        old_ann, new_ann = _m(_m(old.get("metadata")).get("annotations")), _m(_m(new.get("metadata")).get("annotations"))
        if k in old_ann and new_ann.get(k) != old_ann[k]:
            errs.append(forbidden(key("metadata.annotations", k), "may not remove or update mirror pod annotation"))
        elif k in new_ann and k not in old_ann:
            errs.append(forbidden(key("metadata.annotations", k), "may not add mirror pod annotation"))
    for field_name in ("containers", "initContainers"):
        more, stop = _container_updates(_l(new_spec.get(field_name)), _l(old_spec.get(field_name)), f"spec.{field_name}")
        errs += more
        if stop:
            return errs
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if isinstance(new_deadline, int) and not 0 <= new_deadline <= podspec.MAX_INT32:
            return errs + [invalid("spec.activeDeadlineSeconds", new_deadline, names.inclusive_range(0, podspec.MAX_INT32))]
        if isinstance(old_deadline, int) and isinstance(new_deadline, int) and old_deadline < new_deadline:
            return errs + [invalid("spec.activeDeadlineSeconds", new_deadline, "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errs.append(invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"))
    errs += _only_added_tolerations(_l(new_spec.get("tolerations")), _l(old_spec.get("tolerations")))
    old_gates = {_m(g).get("name") for g in _l(old_spec.get("schedulingGates"))}
    for i, gate in enumerate(_l(new_spec.get("schedulingGates"))):
        if _m(gate).get("name") not in old_gates:
            errs.append(forbidden(f"spec.schedulingGates[{i}].name",
                                  f"only deletion is allowed, but found new scheduling gate '{_m(gate).get('name')}'"))
    if new_spec == old_spec:
        return errs
    munged = copy.deepcopy(dict(new_spec))
    for field_name in ("containers", "initContainers"):
        for ctr, old_ctr in zip(_l(munged.get(field_name)), _l(old_spec.get(field_name))):
            if isinstance(ctr, dict):
                ctr["image"] = _m(old_ctr).get("image")
    for field_name in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(field_name, None)
        if field_name in old_spec:
            munged[field_name] = old_spec[field_name]
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old_gates - {None} and munged.get("nodeSelector") != old_spec.get("nodeSelector"):
        old_sel, new_sel = _m(old_spec.get("nodeSelector")), _m(munged.get("nodeSelector"))
        if any(new_sel.get(k) != v for k, v in old_sel.items()):
            errs.append(invalid("spec.nodeSelector", dict(new_sel),
                                "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        munged.pop("nodeSelector", None)
        if "nodeSelector" in old_spec:
            munged["nodeSelector"] = old_spec["nodeSelector"]
    if munged != dict(old_spec):
        errs.append(forbidden("spec", f"pod updates may not change fields other than {','.join(_UPDATABLE)} "
                                      f"(changed: {', '.join(_changed(munged, old_spec)[:5])})"))
    return errs


def validate_template(template: Any, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpec (a workload's pod template)."""
    template = _m(template)
    tmeta, spec = _m(template.get("metadata")), _m(template.get("spec"))
    errs = meta.labels(tmeta.get("labels"), child(path, "labels"))
    errs += meta.annotations(tmeta.get("annotations"), child(path, "annotations"))
    errs += specific_annotations(tmeta.get("annotations"), spec, child(path, "annotations"))
    errs += podspec.pod_spec(spec, child(path, "spec"), resource_is_pod=False)
    if _l(spec.get("ephemeralContainers")):
        errs.append(forbidden(child(path, "spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
    return errs
