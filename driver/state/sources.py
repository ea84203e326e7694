"""Claim source backed by the local object store (the embedded default, DESIGN.md §5).

The API-server source lives in driver.kube.claims (the only kubernetes importer); both satisfy
driver.state.types.ClaimSource.
"""

from __future__ import annotations

from typing import Any

from driver.store.objectstore import ObjectStore


class StoreClaimSource:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return self.store.get("resourceclaims", namespace, name)
