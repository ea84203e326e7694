"""Claim source backed by the local object store (the embedded default, docs/architecture.md §4).

The API-server source lives in driver.kube.claims (the only kubernetes importer); both satisfy
driver.state.types.ClaimSource. A read is one row of the store's database (a JSON parse).

Every way a stored claim can be broken or hostile (not JSON, the wrong shape, changed outside the
store and no longer valid, an invalid name) is an InputError naming the claim, so it fails that
claim only and never the kubelet's whole call.
"""

from __future__ import annotations

from typing import Any

from driver.deadline import Deadline
from driver.errors import InputError
from driver.model.claimshape import check_claim_shape
from driver.store.objectstore import ObjectStore


class StoreClaimSource:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def get_claim(self, namespace: str, name: str, deadline: Deadline | None = None) -> dict[str, Any]:
        # A local read does not retry; the caller checks its deadline around it.
        try:
            obj = self.store.get("resourceclaims", namespace, name)
        except InputError as exc:
            raise InputError(f"resourceclaim {namespace}/{name}: {exc}") from None
        return check_claim_shape(obj, namespace, name)
