"""Forwarding of ResourceSlice writes to another object that makes them.

The fleet's targets (local store, API server) and the per-node view the fleet's reconcile is given
all write slices exactly as the backend they wrap does: the same five calls, unchanged. One mixin
says so once; a class names where its writes go with `_slice_writes()`. A leaf module: the kube
layer (below the fleet) and the fleet both use it.
"""

from __future__ import annotations

from typing import Any


class ForwardsSliceWrites:
    """list/create/update/delete/dry-run of slices, forwarded to `self._slice_writes()`."""

    def _slice_writes(self) -> Any:
        raise NotImplementedError

    def create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._slice_writes().create_slice(obj)

    def update_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._slice_writes().update_slice(obj)

    def delete_slice(self, name: str, *, uid: str | None = None, resource_version: str | None = None) -> None:
        self._slice_writes().delete_slice(name, uid=uid, resource_version=resource_version)

    def dry_run_create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._slice_writes().dry_run_create_slice(obj)
