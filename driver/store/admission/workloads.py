"""Deployments, ReplicaSets (apps/v1) and Jobs (batch/v1).

Sources: k8s.io/kubernetes pkg/apis/apps/validation/validation.go (ValidateDeployment(Update),
ValidateDeploymentSpec, ValidateDeploymentStrategy, ValidateRollingUpdateDeployment,
ValidatePositiveIntOrPercent, IsNotMoreThan100Percent, ValidateReplicaSet(Update),
ValidateReplicaSetSpec, ValidatePodTemplateSpecForReplicaSet) with pkg/registry/apps/{deployment,
replicaset}/strategy.go (apps/v1 selectors are immutable); pkg/apis/batch/validation/validation.go
(ValidateJob, validateGeneratedSelector, ValidateJobSpec, validateJobSpec, validatePodFailurePolicy,
validatePodReplacementPolicy, ValidateJobUpdate / ValidateJobSpecUpdate, validateCompletions,
validatePodTemplateUpdate) with pkg/registry/batch/job/strategy.go validationOptionsForJob
(RequirePrefixedLabels; scheduling directives of a suspended, never-started job may change;
ElasticIndexedJob is GA).

Not ported (docs/validation.md): successPolicy rules, the podFailurePolicy rule details beyond
action/operator/values, status validation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from driver.store.admission import meta, names, pod
from driver.store.admission.field import (FieldError, child, forbidden, invalid, not_supported, required, too_many)

JOB_NAME, CONTROLLER_UID = "batch.kubernetes.io/job-name", "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME, LEGACY_CONTROLLER_UID = "job-name", "controller-uid"
_MAX_INDEXED_PARALLELISM = 100_000
_NOT_MATCH = "`selector` does not match template `labels`"


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _template_labels(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return _m(_m(_m(spec.get("template")).get("metadata")).get("labels"))


def _selector(spec: Mapping[str, Any], kind: str) -> list[FieldError]:
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    errs = meta.label_selector(selector, "spec.selector")
    if not _m(_m(selector).get("matchLabels")) and not _l(_m(selector).get("matchExpressions")):
        errs.append(invalid("spec.selector", dict(_m(selector)), f"empty selector is invalid for {kind}"))
    return errs


def _template_for_replicas(spec: Mapping[str, Any], kind: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (and the "invalid label selector" fallback)."""
    matches, empty = meta.selector_matcher(spec.get("selector"))
    if matches is None:
        return [invalid("spec.selector", spec.get("selector"), "invalid label selector")]
    errs: list[FieldError] = []
    if not empty and not matches(_template_labels(spec)):
        errs.append(invalid("spec.template.metadata.labels", dict(_template_labels(spec)), _NOT_MATCH))
    errs += pod.validate_template(spec.get("template"), "spec.template")
    tspec = _m(_m(spec.get("template")).get("spec"))
    if tspec.get("restartPolicy") != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", tspec.get("restartPolicy") or "", ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden("spec.template.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def _percent(value: Any) -> int | None:
    if isinstance(value, str) and not names.is_valid_percent(value):
        return int(value[:-1])
    return None


def _int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str):
        return [invalid(path, value, m) for m in names.is_valid_percent(value)]
    return meta.nonnegative(value, path)


def _int_value(value: Any) -> int:
    pct = _percent(value)
    if pct is not None:
        return pct
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return 0


def _strategy(strategy: Any) -> list[FieldError]:
    strategy, path = _m(strategy), "spec.strategy"
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            return [forbidden(child(path, "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [required(child(path, "rollingUpdate"), "this should be defaulted and never be nil")]
        rolling, rpath = _m(rolling), child(path, "rollingUpdate")
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        errs = _int_or_percent(unavailable, child(rpath, "maxUnavailable")) + _int_or_percent(surge, child(rpath, "maxSurge"))
        if _int_value(unavailable) == 0 and _int_value(surge) == 0:
            errs.append(invalid(child(rpath, "maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"))
        pct = _percent(unavailable)
        if pct is not None and pct > 100:
            errs.append(invalid(child(rpath, "maxUnavailable"), unavailable, "must not be greater than 100%"))
        return errs
    return [not_supported(path, dict(strategy), ["Recreate", "RollingUpdate"])]


def _immutable_selector(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    if old is None:
        return []
    new_sel, old_sel = _m(obj.get("spec")).get("selector"), _m(old.get("spec")).get("selector")
    return [] if new_sel == old_sel else [invalid("spec.selector", new_sel, meta.IMMUTABLE)]


def validate_deployment(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    spec = _m(obj.get("spec"))
    if old is None:
        errs = meta.object_meta(obj.get("metadata"), namespaced=True, name_fn=names.name_is_dns_subdomain)
    else:
        errs = meta.object_meta_update(obj.get("metadata"), old.get("metadata"))
    errs += meta.nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _selector(spec, "deployment")
    errs += _template_for_replicas(spec, "ReplicaSet")
    errs += _strategy(spec.get("strategy"))
    errs += meta.nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += meta.nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        errs += meta.nonnegative(deadline, "spec.progressDeadlineSeconds")
        if deadline <= (spec.get("minReadySeconds") or 0):
            errs.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs + _immutable_selector(obj, old)


def validate_replicaset(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    spec = _m(obj.get("spec"))
    if old is None:
        errs = meta.object_meta(obj.get("metadata"), namespaced=True, name_fn=names.name_is_dns_subdomain)
    else:
        errs = meta.object_meta_update(obj.get("metadata"), old.get("metadata"))
    errs += meta.nonnegative(spec.get("replicas"), "spec.replicas")
    errs += meta.nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _selector(spec, "deployment")  # sic: ValidateReplicaSetSpec says "deployment" too
    return errs + _template_for_replicas(spec, "ReplicaSet") + _immutable_selector(obj, old)


def _has_label(labels: Mapping[str, Any], name: str, expected: str) -> list[FieldError]:
    """ValidateHasLabel on the job's pod template metadata."""
    path = f"spec.template.metadata.labels[{name}]"
    if name not in labels:
        return [required(path, f"must be '{expected}'")]
    if labels[name] != expected:
        return [invalid(path, dict(labels), f"must be '{expected}'")]
    return []


def _generated_selector(obj: Mapping[str, Any], prefixed: bool) -> list[FieldError]:
    spec, metadata = _m(obj.get("spec")), _m(obj.get("metadata"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    uid, name = str(metadata.get("uid") or ""), str(metadata.get("name") or "")
    errs = [required("metadata.uid")] if not uid else []
    labels = _template_labels(spec)
    errs += _has_label(labels, LEGACY_CONTROLLER_UID, uid) + _has_label(labels, LEGACY_JOB_NAME, name)
    expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
    if prefixed:
        errs += _has_label(labels, CONTROLLER_UID, uid) + _has_label(labels, JOB_NAME, name)
        expected.update({CONTROLLER_UID: uid, JOB_NAME: name})
    matches, _empty = meta.selector_matcher(spec.get("selector"))
    if matches is not None and not matches(expected):
        errs.append(invalid("spec.selector", spec.get("selector"), "`selector` not auto-generated"))
    return errs


def _job_spec(spec: Mapping[str, Any]) -> list[FieldError]:
    """validateJobSpec then ValidateJobSpec's selector checks."""
    errs: list[FieldError] = []
    for field_name in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                       "backoffLimitPerIndex", "maxFailedIndexes"):
        errs += meta.nonnegative(spec.get(field_name), f"spec.{field_name}")
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        errs.append(required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(required("spec.completions", "when completion mode is Indexed"))
            parallelism = spec.get("parallelism")
            if isinstance(parallelism, int) and parallelism > _MAX_INDEXED_PARALLELISM:
                errs.append(invalid("spec.parallelism", parallelism, f"must be less than or equal to "
                                                                    f"{_MAX_INDEXED_PARALLELISM} when completion mode is Indexed"))
    if mode in (None, "NonIndexed"):
        for field_name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(field_name) is not None:
                errs.append(invalid(f"spec.{field_name}", spec[field_name], "requires indexed completion mode"))
    failure_policy = spec.get("podFailurePolicy")
    if failure_policy is not None:
        rules = _l(_m(failure_policy).get("rules"))
        if len(rules) > 20:
            errs.append(too_many("spec.podFailurePolicy.rules", len(rules), 20))
    if spec.get("successPolicy") is not None and mode != "Indexed":
        errs.append(invalid("spec.successPolicy", spec["successPolicy"], "requires indexed completion mode"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ["Failed"] if failure_policy is not None else ["Failed", "TerminatingOrFailed"]
        if replacement not in allowed:
            errs.append(not_supported("spec.podReplacementPolicy", replacement, allowed))
    errs += pod.validate_template(spec.get("template"), "spec.template")
    restart = _m(_m(spec.get("template")).get("spec")).get("restartPolicy") or ""
    if restart in ("Always", ""):
        errs.append(required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(not_supported("spec.template.spec.restartPolicy", restart, ["OnFailure", "Never"]))
    elif failure_policy is not None and restart != "Never":
        errs.append(invalid("spec.template.spec.restartPolicy", restart,
                            'only "Never" is supported when podFailurePolicy is specified'))
    if spec.get("selector") is None:
        errs.append(required("spec.selector"))
    else:
        errs += meta.label_selector(spec["selector"], "spec.selector")
    matches, _empty = meta.selector_matcher(spec.get("selector"))
    if matches is not None and not matches(_template_labels(spec)):
        errs.append(invalid("spec.template.metadata.labels", dict(_template_labels(spec)), _NOT_MATCH))
    return errs


def validate_job(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    spec, metadata = _m(obj.get("spec")), _m(obj.get("metadata"))
    prefixed = True
    if old is not None:
        old_labels = _template_labels(_m(old.get("spec")))
        prefixed = JOB_NAME in old_labels and CONTROLLER_UID in old_labels
    errs = meta.object_meta(metadata, namespaced=True, name_fn=names.name_is_dns_subdomain)
    errs += _generated_selector(obj, prefixed) + _job_spec(spec)
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        hostname = f"{metadata.get('name')}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            errs.append(invalid("metadata.name", metadata.get("name"),
                                f"will not able to create pod with invalid DNS label: {hostname}"))
    if old is None:
        return errs
    old_spec = _m(old.get("spec"))
    errs += meta.object_meta_update(metadata, old.get("metadata"))
    errs += _job_spec(spec)
    if spec.get("completions") != old_spec.get("completions"):
        if spec.get("completionMode") != "Indexed":
            errs.append(invalid("spec.completions", spec.get("completions"), meta.IMMUTABLE))
        elif spec.get("completions") is not None and spec.get("completions") != spec.get("parallelism"):
            errs.append(invalid("spec.completions", spec.get("completions"),
                                "can only be modified in tandem with spec.parallelism"))
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(invalid("spec.selector", spec.get("selector"), meta.IMMUTABLE))
    errs += _template_update(spec, old_spec, old)
    for field_name in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        if spec.get(field_name) != old_spec.get(field_name):
            errs.append(invalid(f"spec.{field_name}", spec.get(field_name), meta.IMMUTABLE))
    return errs


def _template_update(spec: Mapping[str, Any], old_spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """validatePodTemplateUpdate: the template is immutable, but a suspended job that never started
    may change its scheduling directives (node affinity, selector, tolerations, labels, annotations,
    scheduling gates)."""
    template, old_template = copy.deepcopy(spec.get("template")), copy.deepcopy(old_spec.get("template"))
    mutable = old_spec.get("suspend") is True and not _m(old.get("status")).get("startTime")
    if mutable and isinstance(template, dict) and isinstance(old_template, dict):
        for part, field_names in (("metadata", ("labels", "annotations")),
                                  ("spec", ("nodeSelector", "tolerations", "schedulingGates"))):
            new_part, old_part = template.setdefault(part, {}), old_template.setdefault(part, {})
            for f in field_names:
                old_part.pop(f, None)
                if f in new_part:
                    old_part[f] = new_part[f]
        new_aff, old_aff = _m(template["spec"].get("affinity")), dict(_m(old_template["spec"].get("affinity")))
        old_aff.pop("nodeAffinity", None)
        if "nodeAffinity" in new_aff:
            old_aff["nodeAffinity"] = new_aff["nodeAffinity"]
        old_template["spec"].pop("affinity", None)
        if old_aff or "affinity" in template["spec"]:
            old_template["spec"]["affinity"] = old_aff
    return [] if template == old_template else [invalid("spec.template", spec.get("template"), meta.IMMUTABLE)]
