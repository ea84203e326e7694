"""Small API helpers for the kind e2e backend and the DaemonSet's init step (owner: e2e area).

Everything goes through driver.kube.rawapi.RawApi (raw JSON, so alpha fields survive) and stays
a thin map from "what the harness needs" to REST paths; no typed models.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from driver.errors import NotFoundError
from driver.kube.rawapi import KubeApiError, RawApi, load_api_client

# kind -> (API prefix, plural, namespaced)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Event": ("/api/v1", "events", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "PodGroup": ("/apis/scheduling.k8s.io/v1beta1", "podgroups", True),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
}


def connect(kubeconfig: str | None, timeout_s: float = 15.0) -> RawApi:
    return RawApi(load_api_client(kubeconfig), timeout_s=timeout_s)


def path(kind: str, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    prefix, plural, namespaced = RESOURCES[kind]
    out = prefix
    if namespaced and namespace:
        out += f"/namespaces/{quote(namespace)}"
    out += f"/{plural}"
    if name:
        out += f"/{quote(name)}"
    if sub:
        out += f"/{sub}"
    return out


def server_version(api: RawApi) -> str:
    data = api.request("GET", "/version")
    return str(data.get("gitVersion", "unknown"))


def node_labels(api: RawApi, node: str) -> dict[str, str]:
    return dict((api.request("GET", path("Node", name=node)).get("metadata") or {}).get("labels") or {})


def get(api: RawApi, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    return api.request("GET", path(kind, namespace, name))


def get_or_none(api: RawApi, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    try:
        return get(api, kind, name, namespace)
    except NotFoundError:
        return None


def list_items(api: RawApi, kind: str, namespace: str | None = None, field_selector: str | None = None,
               label_selector: str | None = None) -> list[dict[str, Any]]:
    query = []
    if field_selector:
        query.append(("fieldSelector", field_selector))
    if label_selector:
        query.append(("labelSelector", label_selector))
    return list(api.request("GET", path(kind, namespace), query).get("items") or [])


def create(api: RawApi, obj: Mapping[str, Any]) -> dict[str, Any]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return api.request("POST", path(str(obj["kind"]), ns), body=obj)


def update_status(api: RawApi, obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return api.request("PUT", path(str(obj["kind"]), meta.get("namespace"), meta["name"], "status"), body=obj)


def delete(api: RawApi, kind: str, name: str, namespace: str | None = None, grace_s: int | None = None) -> None:
    query = [("gracePeriodSeconds", str(grace_s))] if grace_s is not None else []
    try:
        api.request("DELETE", path(kind, namespace, name), query)
    except NotFoundError:
        pass


def wait_gone(api: RawApi, kind: str, name: str, namespace: str | None, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if get_or_none(api, kind, name, namespace) is None:
            return True
        time.sleep(0.5)
    return False


def pod_log(api: RawApi, namespace: str, name: str, container: str | None = None) -> str:
    query = [("container", container)] if container else []
    try:
        return api.request_text("GET", path("Pod", namespace, name, "log"), query, accept="text/plain")
    except KubeApiError:
        return ""  # not started yet
