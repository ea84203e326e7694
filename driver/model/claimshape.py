"""The shape a ResourceClaim read from outside must have before anything walks it.

Why: the kubelet plugin reads claims from the API server or the local object store, and either may
hand back something that is not a ResourceClaim at all (`kind: Pod`, `metadata: [1]`, `status: [1]`,
a claim of another namespace). Checked here once, the failure is that claim's InputError naming the
field, instead of an AttributeError deep in the prepare path that fails every claim of the call.
Both claim sources (driver.kube.claims, driver.state.sources) call it; only the structure the
prepare path relies on is checked, the contents are validated where they are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.errors import InputError

KIND = "ResourceClaim"
GROUP = "resource.k8s.io"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _mapping(obj: Mapping[str, Any], key: str, where: str, path: str = "", required: bool = False) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: {path}{key}: expected an object, got {_shown(value)}")
    return value


def _list(obj: Mapping[str, Any], key: str, where: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: {path}{key}: expected a list, got {_shown(value)}")
    return value


def check_claim_shape(obj: Any, namespace: str, name: str) -> dict[str, Any]:
    """Return `obj` if it is shaped like the ResourceClaim `namespace/name`, else raise InputError
    naming the claim and the field (kind, apiVersion, metadata, spec, status.allocation.devices...)."""
    where = f"claim {namespace}/{name}"
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object, got {type(obj).__name__}")
    kind = obj.get("kind")
    if kind is not None and kind != KIND:
        raise InputError(f"{where}: kind is {_shown(kind)}, not {KIND}")
    api_version = obj.get("apiVersion")
    if api_version is not None and (not isinstance(api_version, str) or not api_version.startswith(GROUP + "/")):
        raise InputError(f"{where}: apiVersion is {_shown(api_version)}, not {GROUP}/...")
    meta = _mapping(obj, "metadata", where, required=True)
    for key, wanted in (("namespace", namespace), ("name", name)):
        if meta.get(key) is not None and meta.get(key) != wanted:
            raise InputError(f"{where}: metadata.{key} is {_shown(meta.get(key))}, not {wanted!r}")
    _mapping(obj, "spec", where)
    status = _mapping(obj, "status", where)
    allocation = _mapping(status, "allocation", where, "status.")
    devices = _mapping(allocation, "devices", where, "status.allocation.")
    path = "status.allocation.devices."
    for key in ("results", "config"):
        for i, item in enumerate(_list(devices, key, where, path)):
            if not isinstance(item, Mapping):
                raise InputError(f"{where}: {path}{key}[{i}]: expected an object, got {_shown(item)}")
    return obj
