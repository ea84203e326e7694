"""The defaults kube-apiserver sets when it decodes an object, per kind.

Sources: k8s.io/kubernetes pkg/apis/core/v1/defaults.go (pods and pod templates: podefaults.py;
SetDefaults_NodeStatus: allocatable defaults to capacity; SetDefaults_NamespaceStatus: phase
Active), pkg/apis/apps/v1/defaults.go (SetDefaults_Deployment: replicas 1, strategy RollingUpdate
with maxUnavailable and maxSurge 25%, revisionHistoryLimit 10, progressDeadlineSeconds 600;
SetDefaults_ReplicaSet: replicas 1), pkg/apis/batch/v1/defaults.go (SetDefaults_Job: completions
and parallelism 1 when both are unset, parallelism 1, backoffLimit 6 (MaxInt32 with
backoffLimitPerIndex), the job's labels from its template's when it has none, completionMode
NonIndexed, suspend false, podReplacementPolicy TerminatingOrFailed (Failed with a
podFailurePolicy), manualSelector false; SetDefaults_PodFailurePolicyOnPodConditionsPattern: status
True) and pkg/apis/resource/v1/defaults.go (SetDefaults_ExactDeviceRequest and
SetDefaults_DeviceSubRequest: allocationMode ExactCount with count 1; SetDefaults_DeviceTaint:
timeAdded now). A ResourceSlice's `pool.generation` is a plain int64 in v1, so a slice that omits
it decodes as generation 0.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from datetime import datetime, timezone
from typing import Any

from driver.store.admission import podefaults

MAX_INT32 = 2**31 - 1


def _d(value: Any) -> MutableMapping[str, Any] | None:
    return value if isinstance(value, MutableMapping) else None


def _items(value: Any) -> list[MutableMapping[str, Any]]:
    return [v for v in value if isinstance(v, MutableMapping)] if isinstance(value, list) else []


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _spec(obj: MutableMapping[str, Any]) -> MutableMapping[str, Any] | None:
    if obj.get("spec") is None:
        obj["spec"] = {}
    return _d(obj["spec"])


def _deployment(obj: MutableMapping[str, Any]) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("strategy") is None:
        spec["strategy"] = {}
    strategy = _d(spec["strategy"])
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            if strategy.get("rollingUpdate") is None:
                strategy["rollingUpdate"] = {}
            rolling = _d(strategy["rollingUpdate"])
            if rolling is not None:
                for name in ("maxUnavailable", "maxSurge"):
                    if rolling.get(name) is None:
                        rolling[name] = "25%"
    for name, value in (("revisionHistoryLimit", 10), ("progressDeadlineSeconds", 600)):
        if spec.get(name) is None:
            spec[name] = value
    podefaults.template(obj)


def _replicaset(obj: MutableMapping[str, Any]) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    podefaults.template(obj)


def _job(obj: MutableMapping[str, Any]) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template_meta = _d((_d(spec.get("template")) or {}).get("metadata"))
    labels = template_meta.get("labels") if template_meta is not None else None
    metadata = _d(obj.get("metadata"))
    if isinstance(labels, MutableMapping) and labels and metadata is not None and not metadata.get("labels"):
        metadata["labels"] = dict(labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    failure = _d(spec.get("podFailurePolicy"))
    for rule in _items(failure.get("rules")) if failure is not None else []:
        for pattern in _items(rule.get("onPodConditions")):
            if not pattern.get("status"):
                pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if failure is not None else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    podefaults.template(obj)


def _request(request: MutableMapping[str, Any]) -> None:
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1


def _device_claim(spec: Any) -> None:
    devices = _d(_d(spec).get("devices")) if _d(spec) is not None else None
    for request in _items(devices.get("requests")) if devices is not None else []:
        exact = _d(request.get("exactly"))
        if exact is not None:
            _request(exact)
        for sub in _items(request.get("firstAvailable")):
            _request(sub)


def _claim(obj: MutableMapping[str, Any]) -> None:
    _device_claim(obj.get("spec"))


def _claim_template(obj: MutableMapping[str, Any]) -> None:
    spec = _d(obj.get("spec"))
    if spec is not None:
        _device_claim(spec.get("spec"))


def _slice(obj: MutableMapping[str, Any]) -> None:
    spec = _d(obj.get("spec"))
    if spec is None:
        return
    pool = _d(spec.get("pool"))
    if pool is not None and pool.get("generation") is None:
        pool["generation"] = 0
    stamp = None
    for device in _items(spec.get("devices")):
        for taint in _items(device.get("taints")):
            if taint.get("timeAdded") is None:
                stamp = stamp or now()
                taint["timeAdded"] = stamp


def _node(obj: MutableMapping[str, Any]) -> None:
    status = _d(obj.get("status"))
    if status is not None and status.get("allocatable") is None and _d(status.get("capacity")) is not None:
        status["allocatable"] = dict(status["capacity"])


def _namespace(obj: MutableMapping[str, Any]) -> None:
    if obj.get("status") is None:
        obj["status"] = {}
    status = _d(obj["status"])
    if status is not None and not status.get("phase"):
        status["phase"] = "Active"


_BY_KIND: dict[str, Callable[[MutableMapping[str, Any]], None]] = {
    "Pod": podefaults.pod, "Deployment": _deployment, "ReplicaSet": _replicaset, "Job": _job,
    "ResourceClaim": _claim, "ResourceClaimTemplate": _claim_template, "ResourceSlice": _slice,
    "Node": _node, "Namespace": _namespace,
}


def apply(kind: str, obj: MutableMapping[str, Any]) -> None:
    """Set the defaults of `kind` on `obj` in place."""
    setter = _BY_KIND.get(kind)
    if setter is not None:
        setter(obj)
