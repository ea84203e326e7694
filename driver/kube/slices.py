"""The API-server SliceBackend: raw ResourceSlice CRUD, Node UID, allocated devices, gate probes.

Implements driver.publish.SliceBackend (structurally; this layer cannot import driver.publish) with
the REST calls the Go helper uses: list by field selector spec.driver + spec.nodeName, create,
update with resourceVersion (409 on races), delete with uid/resourceVersion preconditions, and
server-side dry-run creates (`dryRun=All`, `fieldValidation=Ignore` so an unknown field is dropped
rather than rejected: dropped means off) for feature-gate probes.
"""

from __future__ import annotations

from typing import Any

from driver.kube.allocated import allocated_from_claims
from driver.kube.rawapi import KubeApiError, KubeNotFound, RawApi

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"


class KubeSliceBackend:
    kind = "apiserver"

    def __init__(self, api: RawApi, *, page_size: int = 500) -> None:
        self.api = api
        self.page_size = page_size

    @property
    def requests(self) -> int:
        return self.api.requests

    def list_paged(self, path: str, query: list[tuple[str, str]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cont = ""
        while True:
            q = query + [("limit", str(self.page_size))] + ([("continue", cont)] if cont else [])
            page = self.api.request("GET", path, q)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items

    def list_slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        selector = f"spec.driver={driver},spec.nodeName={node}"
        return self.list_paged(SLICES, [("fieldSelector", selector)])

    def create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.request("POST", SLICES, [], obj)

    def update_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.request("PUT", f"{SLICES}/{obj['metadata']['name']}", [], obj)

    def delete_slice(self, name: str, *, uid: str | None = None, resource_version: str | None = None) -> None:
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if pre:
            body["preconditions"] = pre
        self.api.request("DELETE", f"{SLICES}/{name}", [], body)

    def dry_run_create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.request("POST", SLICES, [("dryRun", "All"), ("fieldValidation", "Ignore")], obj)

    def node_uid(self, node: str) -> str | None:
        try:
            return (self.api.request("GET", f"/api/v1/nodes/{node}").get("metadata") or {}).get("uid")
        except KubeNotFound:
            return None

    def allocated_devices(self, driver: str, pool: str) -> set[str]:
        return allocated_from_claims(self.list_paged(CLAIMS, []), driver, pool)

    def server_version(self) -> str:
        """kube-apiserver's gitVersion (GET /version), e.g. v1.38.0: which release's gate table applies."""
        return str(self.api.request("GET", "/version").get("gitVersion") or "")

    def metrics_text(self) -> str:
        """The apiserver's own /metrics (authenticated like every other request)."""
        return self.api.request_text("GET", "/metrics", accept="text/plain")


def kube_backend(kubeconfig: str | None = None, *, host: str | None = None, timeout_s: float = 30.0) -> KubeSliceBackend:
    """API-server backend from a kubeconfig (None: in-cluster), or an unauthenticated `host` URL."""
    from driver.kube.rawapi import api_client_for_host, load_api_client

    client = api_client_for_host(host) if host else load_api_client(kubeconfig)
    return KubeSliceBackend(RawApi(client, timeout_s=timeout_s))


__all__ = ["KubeApiError", "KubeSliceBackend", "api_backend", "kube_backend"]


def api_backend(args: Any) -> KubeSliceBackend:
    """Backend from parsed CLI flags: `--kubeconfig`, else the in-cluster service account."""
    return kube_backend(getattr(args, "kubeconfig", None))
