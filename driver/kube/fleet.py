"""The API-server fleet target: Nodes and ResourceSlices over raw JSON, rate limited, with retries.

Implements driver.fleet.targets.FleetTarget structurally (this layer cannot import driver.fleet):
the requests a kube-apiserver gets are those of `kubectl` and of a Go publisher: Nodes listed,
created (POST /api/v1/nodes), updated (PUT, which never touches status: kwok owns it) and deleted
with a UID precondition; slices listed by `spec.driver` field selector in pages (one listing per
fleet driver), written through
driver.kube.slices.KubeSliceBackend (the same requests `fake-dra run` makes); claims listed for
the allocated-device check. Every request goes through driver.kube.throttle (`--qps`, `--burst`,
retries on 429/5xx).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator
from typing import Any

from driver.errors import NotFoundError
from driver.kube.slices import CLAIMS, SLICES, KubeSliceBackend
from driver.kube.throttle import ThrottledApi
from driver.slicewrites import ForwardsSliceWrites

NODES = "/api/v1/nodes"


class _Listed:
    """A slice index over one listing per driver (the shape driver.fleet.targets.SliceIndex has)."""

    def __init__(self, slices: list[dict[str, Any]]) -> None:
        self._by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in slices:
            spec = s.get("spec") or {}
            self._by_key.setdefault((str(spec.get("driver") or ""), str(spec.get("nodeName") or "")), []).append(s)

    def unchanged(self, driver: str, node: str, names: list[str], texts_for: Any, owner_uid: str | None) -> bool:
        return False  # reconcile compares the listed objects and writes nothing when they are equal

    def take(self, driver: str, node: str, names: list[str]) -> list[dict[str, Any]]:
        return self._by_key.pop((driver, node), [])

    def for_node(self, node: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for key in [k for k in self._by_key if k[1] == node]:
            out.extend(self._by_key.pop(key))
        return out


class KubeFleetTarget(ForwardsSliceWrites):
    kind = "apiserver"

    def __init__(self, api: ThrottledApi, *, page_size: int = 500) -> None:
        self.api = api
        self.slices = KubeSliceBackend(api, page_size=page_size)  # type: ignore[arg-type]

    @property
    def requests(self) -> int:
        return self.api.requests

    def list_nodes(self) -> list[dict[str, Any]]:
        return self.slices.list_paged(NODES, [])

    def get_node(self, name: str) -> dict[str, Any] | None:
        try:
            return self.api.request("GET", f"{NODES}/{name}")
        except NotFoundError:
            return None

    def create_node(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.request("POST", NODES, [], obj)

    def update_node(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.request("PUT", f"{NODES}/{obj['metadata']['name']}", [], obj)

    def delete_node(self, name: str, uid: str | None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        self.api.request("DELETE", f"{NODES}/{name}", [], body)

    def slice_index(self, drivers: Collection[str], expected: Collection[str]) -> _Listed:
        return _Listed([s for driver in drivers
                        for s in self.slices.list_paged(SLICES, [("fieldSelector", f"spec.driver={driver}")])])

    def list_node_slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        return self.slices.list_slices(driver, node)

    def _slice_writes(self) -> Any:
        return self.slices

    def list_claims(self) -> list[dict[str, Any]]:
        return self.slices.list_paged(CLAIMS, [])

    def metrics_text(self) -> str:
        return self.api.request_text("GET", "/metrics", accept="text/plain")

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        yield  # an API server has no batches: each request stands alone


def kube_fleet_target(kubeconfig: str | None = None, *, host: str | None = None, qps: float = 50.0, burst: int = 100,
                      timeout_s: float = 30.0) -> KubeFleetTarget:
    """From a kubeconfig (None: in-cluster), or an unauthenticated `host` URL (tests, kubectl proxy)."""
    from driver.kube.rawapi import RawApi, api_client_for_host, load_api_client

    client = api_client_for_host(host) if host else load_api_client(kubeconfig)
    return KubeFleetTarget(ThrottledApi(RawApi(client, timeout_s=timeout_s), qps=qps, burst=burst))
