"""Objects and a runner shared by the admission tests (tests/core/test_admission_*.py)."""

from __future__ import annotations

import copy
from typing import Any

from driver.errors import InputError
from driver.store import admission


def admit(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the store would keep: decoded (defaults), then admitted."""
    return admission.admit(kind, admission.decode(kind, obj, old), old)


def refusal(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> str:
    """The message kube-apiserver's admission would answer with ("" when the object is admitted)."""
    try:
        admit(kind, obj, old)
    except InputError as exc:
        return str(exc)
    return ""


def stored(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """An admitted object as the store keeps it (with a uid, as a created object has)."""
    out = admit(kind, obj)
    out["metadata"].setdefault("uid", "9d8e5f0a-1b2c-4d3e-8f9a-0b1c2d3e4f5a")
    return out


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": body}


def with_meta(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].update(meta)
    return out


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox:1.36", **fields}


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    reqs = list(requests) or [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": reqs, **devices}}}


def device_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
            "spec": spec}


def resource_slice(*devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"driver": "gpu.example.com", "pool": {"name": "node-1", "generation": 1,
                                                                   "resourceSliceCount": 1},
                            "nodeName": "node-1", "devices": list(devices) or [{"name": "gpu-0"}]}
    body.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-1-gpu"},
            "spec": body}


def deployment(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [container()]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": body}


def job(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"spec": {"containers": [container()], "restartPolicy": "Never"}}}
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "default"}, "spec": body}
