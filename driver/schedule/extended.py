"""Extended resources backed by DRA (KEP-5004, `DRAExtendedResource`, GA and locked in 1.37).

A container asking `nvidia.com/gpu: 1` (requests, or limits alone: the API server copies limits into
unset requests) is served by a device plugin on a node whose `status.allocatable` lists the resource;
on a node that does not, kube-scheduler's DRA plugin serves it from the DeviceClass whose
`spec.extendedResourceName` names it (every class also answers to
`deviceclass.resource.kubernetes.io/<class name>`). It allocates a claim of its own for the pod:
one request per (container, resource), named `container-<i>-request-<j>` (i: the container's index
in initContainers + containers, j: the resource's index among the container's sorted request
names), `exactly: {deviceClassName, allocationMode: ExactCount, count}`; written at binding with
`generateName: <pod>-extended-resources-`, annotation `resource.kubernetes.io/extended-resource-claim:
"true"`, owned by the pod, and recorded in `pod.status.extendedResourceClaimStatus` (the claim's name
and each request's container and resource). Sources: kubernetes/kubernetes
pkg/scheduler/framework/plugins/dynamicresources (createDeviceRequests), staging api resource/v1
(ExtendedResourceClaimAnnotation, ResourceDeviceClassPrefix), KEP-5004.

When several classes name one resource, kube-scheduler's extended-resource cache prefers the newest
(creationTimestamp) and, at equal times, the lower name (k8s.io/dynamic-resource-allocation
deviceclass/extendedresourcecache); so does this.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.errors import InputError
from driver.model.quantity import parse_quantity
from driver.store.objectstore import generated_name

EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"


def class_for_resource(classes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name (explicit names, then the implicit ones)."""
    out: dict[str, str] = {}
    by_name = sorted(classes, key=lambda c: str((c.get("metadata") or {}).get("name")))
    newest_first = sorted(by_name, key=lambda c: str((c.get("metadata") or {}).get("creationTimestamp") or ""),
                          reverse=True)  # stable: equal times keep the lower name first
    for c in newest_first:
        name = str((c.get("metadata") or {}).get("name"))
        out.setdefault(IMPLICIT_PREFIX + name, name)
        explicit = (c.get("spec") or {}).get("extendedResourceName")
        if explicit:
            out.setdefault(str(explicit), name)
    return out


def container_requests(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container's requests after the API server's defaulting: limits fill unset requests."""
    resources = container.get("resources") or {}
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


@dataclass(frozen=True)
class ExtendedRequest:
    """One (container, extended resource) a DeviceClass can serve."""

    request: str  # container-<i>-request-<j>
    container: str
    resource: str
    device_class: str
    count: int


def extended_requests(pod: Mapping[str, Any], classes: Mapping[str, str]) -> tuple[ExtendedRequest, ...]:
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    label = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    out = []
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    for i, container in enumerate(containers):
        requests = container_requests(container or {})
        for j, resource in enumerate(sorted(requests)):
            if resource not in classes:
                continue
            try:
                amount = parse_quantity(requests[resource])
            except InputError as exc:
                raise InputError(f"Pod {label}: container {container.get('name')}: resources {resource}: {exc}") from None
            if amount.denominator != 1:
                raise InputError(f"Pod {label}: container {container.get('name')}: resources {resource}: "
                                 f"must be a whole number, got {requests[resource]}")
            if amount > 0:
                out.append(ExtendedRequest(f"container-{i}-request-{j}", str(container.get("name")), resource,
                                           classes[resource], int(amount)))
    return tuple(out)


def served_by_dra(requests: Sequence[ExtendedRequest], allocatable: Mapping[str, Fraction]) -> tuple[ExtendedRequest, ...]:
    """The requests a node leaves to DRA: those whose resource its allocatable does not list."""
    return tuple(r for r in requests if r.resource not in allocatable)


def special_claim(pod: Mapping[str, Any], requests: Sequence[ExtendedRequest], taken: Container[tuple[str, str]]
                  ) -> dict[str, Any]:
    """The claim kube-scheduler allocates for these requests (named now: this scheduler writes it once)."""
    meta = pod.get("metadata") or {}
    ns, pod_name = str(meta.get("namespace") or "default"), str(meta.get("name"))
    while True:
        name = generated_name(f"{pod_name}-extended-resources-")
        if (ns, name) not in taken:
            break
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns, "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                                              "uid": meta.get("uid"), "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"devices": {"requests": [
                {"name": r.request, "exactly": {"deviceClassName": r.device_class, "allocationMode": "ExactCount",
                                                "count": r.count}} for r in requests]}}}


def claim_status(claim: Mapping[str, Any], requests: Sequence[ExtendedRequest]) -> dict[str, Any]:
    """pod.status.extendedResourceClaimStatus for the special claim."""
    return {"resourceClaimName": claim["metadata"]["name"],
            "requestMappings": [{"containerName": r.container, "resourceName": r.resource, "requestName": r.request}
                                for r in requests]}
