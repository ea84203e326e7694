"""What kube-apiserver changes on a write besides decoding defaults: admission plugins and strategies.

Sources:
- plugin/pkg/admission/defaulttolerationseconds (DefaultTolerationSeconds, enabled by default): a
  pod that tolerates neither taint gets `node.kubernetes.io/not-ready` and
  `node.kubernetes.io/unreachable` NoExecute tolerations for 300 s, on create and update.
- plugin/pkg/admission/priority (Priority): on create a pod without priorityClassName gets priority
  0 and preemptionPolicy PreemptLowerPriority (no default PriorityClass exists), the two built-in
  classes their values; a priority that disagrees is Forbidden; on update both keep their stored
  values.
- pkg/registry/core/pod/strategy.go PrepareForCreate: status is phase Pending with the QoS class
  (pkg/apis/core/helper/qos ComputePodQOS), plus the PodScheduled=False SchedulingGated condition
  for a gated pod; PrepareForUpdate keeps the stored status.
- pkg/registry/batch/job/strategy.go PrepareForCreate: unless manualSelector, the job's selector is
  `batch.kubernetes.io/controller-uid=<uid>` and its template gets the controller-uid and job-name
  labels (both the batch.kubernetes.io/ and the legacy unprefixed ones); status is reset.
- pkg/registry/apps/{deployment,replicaset}/strategy.go: status reset on create, kept on update.
- pkg/registry/core/namespace/strategy.go: the kubernetes.io/metadata.name label and the
  `kubernetes` finalizer.

`carry_over` is what `kubectl apply`'s merge patch keeps on an update although the document does not
say it: fields a controller or the apiserver set (a pod's spec.nodeName from its binding, a job's
generated selector and labels, a workload's defaulted or scaled counts, a container's defaulted
imagePullPolicy, a device taint's timeAdded).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, MutableMapping
from fractions import Fraction
from typing import Any

from driver.store.admission.resources import quantity
from driver.store.admission.workloads import CONTROLLER_UID, JOB_NAME, LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME

NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
SYSTEM_PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
_WORKLOADS = ("Deployment", "ReplicaSet", "Job")
# Spec fields a document may omit while the stored object has them (defaulted, or set by `kubectl
# scale`): apply's merge patch leaves them as stored, so defaulting never sees them missing.
_KEPT_WHEN_OMITTED = {
    "Deployment": ("replicas", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds"),
    "ReplicaSet": ("replicas",),
    "Job": ("completions", "parallelism", "backoffLimit", "completionMode", "suspend", "podReplacementPolicy",
            "manualSelector"),
}


class AdmissionForbidden(Exception):
    """An admission plugin refused the write (HTTP 403): `pods "x" is forbidden: <reason>`."""


def _d(value: Any) -> MutableMapping[str, Any]:
    return value if isinstance(value, MutableMapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def default_toleration_seconds(pod: MutableMapping[str, Any]) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, MutableMapping) or (spec.get("tolerations") is not None
                                                 and not isinstance(spec["tolerations"], list)):
        return
    tolerations = spec.get("tolerations") or []
    not_ready = unreachable = False
    for t in tolerations:
        t = _d(t)
        any_effect = t.get("effect") in ("NoExecute", "", None)
        key = t.get("key") or ""
        not_ready = not_ready or (key in (NOT_READY, "") and any_effect)
        unreachable = unreachable or (key in (UNREACHABLE, "") and any_effect)
    for missing, key in ((not not_ready, NOT_READY), (not unreachable, UNREACHABLE)):
        if missing:
            tolerations = [*tolerations, {"key": key, "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}]
    spec["tolerations"] = tolerations


def priority(pod: MutableMapping[str, Any], old: Mapping[str, Any] | None) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, MutableMapping):
        return
    if old is not None:
        old_spec = _d(old.get("spec"))
        for field_name in ("priority", "preemptionPolicy"):
            spec.pop(field_name, None)
            if field_name in old_spec:
                spec[field_name] = old_spec[field_name]
        return
    class_name = spec.get("priorityClassName") or ""
    if class_name and class_name not in SYSTEM_PRIORITIES:
        return  # the local store keeps no PriorityClasses (docs/validation.md)
    value = SYSTEM_PRIORITIES.get(class_name, 0)
    given = spec.get("priority")
    if given is not None and given != value:
        raise AdmissionForbidden(f"the integer value of priority ({given}) must not be provided in pod spec; priority "
                                 f"admission controller computed {value} from the given PriorityClass name")
    spec["priority"] = value
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy != "PreemptLowerPriority":
        raise AdmissionForbidden(f"the string value of PreemptionPolicy ({policy}) must not be provided in pod spec; "
                                 "priority admission controller computed PreemptLowerPriority from the given "
                                 "PriorityClass name")
    spec["preemptionPolicy"] = "PreemptLowerPriority"


def _add(total: dict[str, Fraction], resources: Mapping[str, Any]) -> set[str]:
    found = set()
    for name, value in resources.items():
        q = quantity(value)
        if name in ("cpu", "memory") and q is not None and q > 0:
            found.add(str(name))
            total[str(name)] = total.get(str(name), Fraction(0)) + q
    return found


def qos_class(spec: Mapping[str, Any]) -> str:
    """ComputePodQOS (PodLevelResources on: pod-level resources decide when set)."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        _add(requests, _d(pod_level.get("requests")))
        if _d(pod_level.get("limits")):
            _add(limits, _d(pod_level.get("limits")))
            if not {"cpu", "memory"} <= {str(k) for k in _d(pod_level.get("limits"))}:
                guaranteed = False
    else:
        for field_name in ("containers", "initContainers"):
            for ctr in _l(spec.get(field_name)):
                res = _d(_d(ctr).get("resources"))
                _add(requests, _d(res.get("requests")))
                if not {"cpu", "memory"} <= _add(limits, _d(res.get("limits"))):
                    guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) \
            and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def prepare_create(kind: str, obj: MutableMapping[str, Any]) -> None:
    """The strategy's PrepareForCreate (the store assigns the uid a job's selector needs here)."""
    meta = obj.setdefault("metadata", {})
    if kind == "Pod":
        spec = _d(obj.get("spec"))
        status: dict[str, Any] = {"phase": "Pending", "qosClass": qos_class(spec)}
        if _l(spec.get("schedulingGates")):
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                     "message": "Scheduling is blocked due to non-empty scheduling gates"}]
        obj["status"] = status
    elif kind in _WORKLOADS:
        obj.pop("status", None)
        if kind == "Job":
            meta["uid"] = meta.get("uid") or str(uuid.uuid4())
            if _d(obj.get("spec")).get("manualSelector") is not True:
                _generate_selector(obj)
    elif kind == "Namespace":
        _namespace(obj)


def _generate_selector(job: MutableMapping[str, Any]) -> None:
    spec = job.get("spec")
    template = _d(spec).get("template") if isinstance(spec, MutableMapping) else None
    if not isinstance(template, MutableMapping):
        return
    tmeta = template.setdefault("metadata", {})
    if not isinstance(tmeta, MutableMapping):
        return
    labels = tmeta.setdefault("labels", {}) if tmeta.get("labels") is None else tmeta["labels"]
    if not isinstance(labels, MutableMapping):
        return
    name, uid = str(job["metadata"].get("name") or ""), str(job["metadata"]["uid"])
    for label in (LEGACY_JOB_NAME, JOB_NAME):
        labels.setdefault(label, name)
    for label in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        labels.setdefault(label, uid)
    if spec.get("selector") is None:
        spec["selector"] = {}
    selector = spec["selector"]
    if isinstance(selector, MutableMapping):
        if selector.get("matchLabels") is None:
            selector["matchLabels"] = {}
        if isinstance(selector["matchLabels"], MutableMapping):
            selector["matchLabels"].setdefault(CONTROLLER_UID, uid)


def _namespace(obj: MutableMapping[str, Any]) -> None:
    meta = obj["metadata"]
    meta["labels"] = {**_d(meta.get("labels")), NAMESPACE_LABEL: meta.get("name")}
    spec = obj.setdefault("spec", {}) if obj.get("spec") is None else obj["spec"]
    if isinstance(spec, MutableMapping) and not spec.get("finalizers"):
        spec["finalizers"] = ["kubernetes"]


def prepare_update(kind: str, obj: MutableMapping[str, Any], old: Mapping[str, Any]) -> None:
    """PrepareForUpdate: pods and workloads keep their stored status; namespaces keep their
    finalizers and status. The server-owned uid is the stored object's (a job's generated selector
    is checked against it)."""
    meta, old_meta = obj.setdefault("metadata", {}), _d(old.get("metadata"))
    if isinstance(meta, MutableMapping) and old_meta.get("uid"):
        meta["uid"] = old_meta["uid"]
    if kind in ("Pod", *_WORKLOADS):
        obj.pop("status", None)
        if old.get("status") is not None:
            obj["status"] = copy.deepcopy(old["status"])
    elif kind == "Namespace":
        _namespace(obj)
        spec = obj.get("spec")
        if isinstance(spec, MutableMapping) and _d(old.get("spec")).get("finalizers") is not None:
            spec["finalizers"] = copy.deepcopy(old["spec"]["finalizers"])
        if old.get("status") is not None:
            obj["status"] = copy.deepcopy(old["status"])


def carry_over(kind: str, obj: MutableMapping[str, Any], old: Mapping[str, Any]) -> None:
    spec, old_spec = obj.get("spec"), _d(old.get("spec"))
    if not isinstance(spec, MutableMapping):
        return
    if kind == "Pod":
        if not spec.get("nodeName") and old_spec.get("nodeName"):
            spec["nodeName"] = old_spec["nodeName"]
        _pull_policies(spec, old_spec)
    elif kind in _WORKLOADS:
        _pull_policies(_d(_d(spec.get("template")).get("spec")), _d(_d(old_spec.get("template")).get("spec")))
        for field_name in _KEPT_WHEN_OMITTED[kind]:
            if spec.get(field_name) is None and old_spec.get(field_name) is not None:
                spec[field_name] = copy.deepcopy(old_spec[field_name])
    if kind == "Job" and spec.get("manualSelector") is not True:
        if spec.get("selector") is None and old_spec.get("selector") is not None:
            spec["selector"] = copy.deepcopy(old_spec["selector"])
        labels = _d(_d(_d(spec.get("template")).get("metadata")).get("labels"))
        old_labels = _d(_d(_d(old_spec.get("template")).get("metadata")).get("labels"))
        template = spec.get("template")
        if isinstance(template, MutableMapping) and old_labels:
            generated = {k: v for k, v in old_labels.items()
                         if k in (JOB_NAME, CONTROLLER_UID, LEGACY_JOB_NAME, LEGACY_CONTROLLER_UID) and k not in labels}
            if generated:
                tmeta = template.setdefault("metadata", {})
                if isinstance(tmeta, MutableMapping):
                    tmeta["labels"] = {**labels, **generated}
    elif kind == "ResourceSlice":
        stamps = {(str(_d(d).get("name")), _d(t).get("key"), _d(t).get("value"), _d(t).get("effect")): _d(t).get("timeAdded")
                  for d in _l(old_spec.get("devices")) for t in _l(_d(d).get("taints"))}
        for device in _l(spec.get("devices")):
            for taint in _l(_d(device).get("taints")):
                if isinstance(taint, MutableMapping) and taint.get("timeAdded") is None:
                    stamp = stamps.get((str(_d(device).get("name")), taint.get("key"), taint.get("value"),
                                        taint.get("effect")))
                    if stamp is not None:
                        taint["timeAdded"] = stamp


def _pull_policies(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> None:
    """A container's defaulted imagePullPolicy stays what it was when the document does not set it
    (it was defaulted from the image tag at create; a merge patch of a new image keeps it)."""
    for field_name in ("containers", "initContainers"):
        old_policies = {_d(c).get("name"): _d(c).get("imagePullPolicy") for c in _l(old_spec.get(field_name))}
        for ctr in _l(spec.get(field_name)):
            if isinstance(ctr, MutableMapping) and not ctr.get("imagePullPolicy") and old_policies.get(ctr.get("name")):
                ctr["imagePullPolicy"] = old_policies[ctr.get("name")]
