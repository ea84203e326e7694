"""Claim source backed by the local object store (the embedded default, DESIGN.md §5).

The API-server source lives in driver.kube.claims (the only kubernetes importer); both satisfy
driver.state.types.ClaimSource. Reads parse with libyaml plus a lean constructor
(driver.state.fastyaml): the pure-Python parser alone costs ~3 ms per claim and PyYAML's own
constructor ~0.3 ms, a large share of a prepare call.
"""

from __future__ import annotations

from typing import Any

import yaml

from driver.deadline import Deadline
from driver.errors import InputError, NotFoundError
from driver.state import fastyaml
from driver.store.objectstore import ObjectStore


class StoreClaimSource:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def get_claim(self, namespace: str, name: str, deadline: Deadline | None = None) -> dict[str, Any]:
        # A local file read does not retry; the caller checks its deadline around it.
        path = self.store.path_of("resourceclaims", namespace, name)  # validates the names
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise NotFoundError(f"resourceclaim {namespace}/{name} not found in local store {self.store.root}") from None
        try:
            obj = fastyaml.load(text)  # the same objects as yaml.load(..., CSafeLoader)
        except yaml.YAMLError as exc:
            raise InputError(f"local store: {path} is not valid YAML: {exc}") from None
        if not isinstance(obj, dict):
            raise InputError(f"local store: {path} does not hold an object")
        return obj
