"""Claim source backed by the local object store (the embedded default, docs/architecture.md §4).

The API-server source lives in driver.kube.claims (the only kubernetes importer); both satisfy
driver.state.types.ClaimSource. Reads parse with libyaml plus a lean constructor
(driver.yamlio): the pure-Python parser alone costs ~3 ms per claim and PyYAML's own
constructor ~0.3 ms, a large share of a prepare call.

Every way a store file can be broken or hostile (not UTF-8, a directory, a path component that is a
file, too large, nested 5,000 deep, an alias bomb, a 253-character name whose file name does not fit,
another kind of object, a malformed shape) is an InputError naming the claim, so it fails that
claim only and never the kubelet's whole call.
"""

from __future__ import annotations

from typing import Any

from driver.deadline import Deadline
from driver.errors import InputError, NotFoundError
from driver.model.claimshape import check_claim_shape
from driver.store.objectstore import ObjectStore, read_object_text
from driver.yamlio import load_one


class StoreClaimSource:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def get_claim(self, namespace: str, name: str, deadline: Deadline | None = None) -> dict[str, Any]:
        # A local file read does not retry; the caller checks its deadline around it.
        try:
            obj = self._read(namespace, name)
        except InputError as exc:
            raise InputError(f"resourceclaim {namespace}/{name}: {exc}") from None
        return check_claim_shape(obj, namespace, name)

    def _read(self, namespace: str, name: str) -> dict[str, Any]:
        path = self.store.path_of("resourceclaims", namespace, name)  # validates the names
        try:
            text = read_object_text(path)
        except FileNotFoundError:
            raise NotFoundError(f"resourceclaim {namespace}/{name} not found in local store {self.store.root}") from None
        obj = load_one(text, f"local store: {path}")  # the same objects as yaml.load(..., CSafeLoader)
        if not isinstance(obj, dict):
            raise InputError(f"local store: {path} does not hold an object")
        return obj
