"""One rule for apiVersions, in every command: what a Kubernetes 1.37 kube-apiserver serves by default.

For the kinds fake-dra reads that is resource.k8s.io/v1 (DeviceClass, ResourceClaim,
ResourceClaimTemplate, ResourceSlice, DeviceTaintRule), the core group's v1 (Node, Pod, Namespace,
Event) and apps/v1 (Deployment, ReplicaSet) and batch/v1 (Job) for the workload kinds the local store
keeps. Two kinds exist only in versions off by default, and are read in those: ResourcePoolStatusRequest
(resource.k8s.io/v1alpha3, KEP-5677) and PodGroup (scheduling.k8s.io/v1beta1, the newest of its
versions; a cluster serves it with `--runtime-config`, as hack/kind-config.yaml does). Nothing else:

- resource.k8s.io/v1beta1 and v1beta2 (and the alpha versions) still exist in 1.37 but are beta,
  and beta API versions introduced after 1.24 are off by default (KEP-3136, "Beta APIs Off by
  Default"; kube-apiserver's DefaultAPIResourceConfigSource enables only the stable group versions,
  `betaAPIGroupVersionsDisabledByDefault` "is for all future beta groupVersions"): a cluster serves
  them only with `--runtime-config=resource.k8s.io/v1beta1=true`. So a stock 1.37 cluster answers
  `kubectl apply` of a v1beta1 claim with "no matches for kind ResourceClaim in version
  resource.k8s.io/v1beta1", and so do `apply`, `allocate`, `e2e` and the fleet here, with what to
  change for v1 (the shapes differ: see `_CHANGES`).
- Since nothing is converted, what a command reads is exactly what it stores and allocates.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from driver.errors import InputError
from driver.schema.compact import load_data

RESOURCE_GROUP = "resource.k8s.io"

# How an older resource.k8s.io version differs from v1 (k8s.io/api resource/v1beta1 and v1beta2
# types; the apiserver's conversions in pkg/apis/resource/v1beta1 move the same fields).
_CHANGES: dict[str, dict[str, str]] = {
    "v1beta1": {
        "ResourceClaim": "in v1 a request's deviceClassName, selectors, allocationMode, count, adminAccess, "
                         "tolerations and capacity go under `exactly:`",
        "ResourceClaimTemplate": "in v1 a request's deviceClassName, selectors, allocationMode, count, "
                                 "adminAccess, tolerations and capacity go under `exactly:`",
        "ResourceSlice": "in v1 a device's attributes, capacity, consumesCounters and the rest sit on the "
                         "device itself, without the `basic:` wrapper",
    },
}


@lru_cache(maxsize=1)
def served() -> Mapping[str, str]:
    """Kind -> the apiVersion a 1.37 kube-apiserver serves it under by default (read-only)."""
    out: dict[str, str] = {}
    for key in load_data()["kinds"]:
        api_version, _, kind = key.rpartition("/")
        out[kind] = api_version
    return MappingProxyType(out)


def check_api_version(obj: Mapping[str, Any], where: str) -> str | None:
    """The object's kind when it is one fake-dra reads and its apiVersion is served; None for a kind
    fake-dra does not read (callers ignore or refuse it). InputError naming `where` and the field
    when apiVersion or kind is missing, or the apiVersion is one a stock 1.37 cluster does not serve."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not kind:
        raise InputError(f"{where}: kind: required")
    if not isinstance(kind, str):
        raise InputError(f"{where}: kind: expected a string, got {type(kind).__name__}")
    wanted = served().get(kind)
    if wanted is None:
        return None
    if not api_version:
        raise InputError(f"{where}: apiVersion: required (a {kind} is {wanted})")
    if api_version == wanted:
        return kind
    raise InputError(f"{where}: {refusal(str(api_version), kind, wanted)}")


def refusal(api_version: str, kind: str, wanted: str) -> str:
    group, _, version = api_version.rpartition("/")
    if group == RESOURCE_GROUP and version != "v1":
        change = _CHANGES.get(version, {}).get(kind)
        how = f"; {change}" if change else ""
        return (f"apiVersion: {api_version} is not served by a Kubernetes 1.37 kube-apiserver by default (beta and "
                f"alpha API versions are off unless --runtime-config enables them): write {kind} as {wanted}{how}")
    return f"apiVersion: {api_version!r} does not serve {kind}; use {wanted}"
