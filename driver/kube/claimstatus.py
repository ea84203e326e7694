"""ResourceClaim status.devices through the API server (the DeviceStatusSink of driver.state.claimstatus).

One server-side apply of the `status` subresource per claim:
`PATCH /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>/status?fieldManager=<driver>
&force=true` with `Content-Type: application/apply-patch+yaml`. Why apply: `status.devices` is a
list keyed by (driver, pool, device, shareID) and apply merges it by key, so this driver's entries
change and other drivers' entries are left as they are, in one request without read-modify-write
races. The field manager is the driver name; entries left out of an apply (all of them: `status: {}`)
are removed. `metadata.uid` makes the apply fail with 409 instead of writing to a new claim that
reused the name.

Permissions (Kubernetes 1.36+, DRAResourceClaimGranularStatusAuthorization): `patch` on
`resourceclaims/status` plus `associated-node:patch` on the synthetic subresource
`resourceclaims/driver` with resourceNames [<driver>] — the API server checks the verb of the
request prefixed with the node association of the service account's bound token (kubernetes
pkg/registry/resource/utils_test.go, TestAuthorizedForDeviceStatus: "patch verb propagated to
authz check"; kubernetes.io "Hardening Guide - Dynamic Resource Allocation"). A refusal is
ForbiddenError; the caller decides what that means.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from driver.errors import ForbiddenError
from driver.kube.rawapi import KubeApiError, RawApi

APPLY = "application/apply-patch+yaml"


class KubeClaimStatus:
    def __init__(self, api: RawApi, *, api_version: str = "v1") -> None:
        self.api = api
        self.api_version = api_version

    def apply_device_status(self, ref: Any, driver: str, entries: list[dict[str, Any]]) -> None:
        path = (f"/apis/resource.k8s.io/{self.api_version}/namespaces/{quote(ref.namespace, safe='')}"
                f"/resourceclaims/{quote(ref.name, safe='')}/status")
        body = {
            "apiVersion": f"resource.k8s.io/{self.api_version}",
            "kind": "ResourceClaim",
            "metadata": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid},
            "status": {"devices": entries} if entries else {},
        }
        try:
            self.api.request("PATCH", path, [("fieldManager", driver), ("force", "true")], body, content_type=APPLY)
        except KubeApiError as exc:
            if exc.status == 403:
                raise ForbiddenError(f"resourceclaim {ref.namespace}/{ref.name} status: {exc}") from None
            raise


def kube_status_sink(kubeconfig: str | None = None, *, timeout_s: float = 5.0) -> KubeClaimStatus:
    """Sink from a kubeconfig (None: in-cluster). A short timeout: status writes share one budget
    per kubelet call and must not eat into its deadline."""
    from driver.kube.rawapi import load_api_client

    return KubeClaimStatus(RawApi(load_api_client(kubeconfig), timeout_s=timeout_s))
