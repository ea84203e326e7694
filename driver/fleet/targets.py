"""Where a fleet is published: the contract, and the local object store behind it.

`FleetTarget` is what `apply`, `delete` and `run` need: Nodes (all of them, so a name the fleet
wants that someone else's Node holds is found before anything is written), the fleet drivers'
slices indexed by driver and node (`slice_index`: listed once, not once per node), slice writes with the exact
semantics a node's own publisher has (`driver.publish.SliceBackend`), the claims (to keep the
compatibility groups of allocated devices), and `batch()` (one store lock and deferred durability
for many writes; nothing on an API server). `driver.kube.fleet.KubeFleetTarget` is the API-server
implementation; `StoreFleetTarget` here serves the local store.

A slice index answers three questions per driver and node: `unchanged` (are the node's stored slices
exactly these texts? only the local store can tell without parsing: it keeps each slice as the JSON
reconcile would write, so an unchanged slice holds byte for byte what it would write), `take` (the
node's slices, parsed, for reconcile) and `for_node` (every fleet driver's slices left on a node,
for removing a node). The local store answers each from its node index, one node at a time, so
memory holds one node's slices, never the fleet's; telling 1,000 DGX nodes unchanged by their
bytes costs a fraction of reading them as objects.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Collection, Iterator
from typing import Any, Protocol

from driver.errors import NotFoundError
from driver.publish.backend import StoreSliceBackend
from driver.slicewrites import ForwardsSliceWrites
from driver.store import ObjectStore

NODES = "nodes"
SLICES = "resourceslices"
CLAIMS = "resourceclaims"
# Nodes written per store batch: the writer lock is released between batches, so a plugin's
# claim-status write (which waits at most 2 s for the lock) is never starved by a long apply.
BATCH_NODES = 50


class SliceIndex(Protocol):
    def unchanged(self, driver: str, node: str, names: list[str], texts_for: Callable[[int], list[str]],
                  owner_uid: str | None) -> bool:
        """True only when `driver`'s slices of the node are exactly `names`, each holding
        `texts_for(its pool generation)` as spec, owned by the Node `owner_uid`; False when unsure."""
        ...

    def take(self, driver: str, node: str, names: list[str]) -> list[dict[str, Any]]:
        """`driver`'s slices of `node`, whose expected slice names are `names` (each pair once)."""
        ...

    def for_node(self, node: str) -> list[dict[str, Any]]:
        """Every indexed driver's slices of `node` never taken (a node being removed)."""
        ...


_SPEC_MARK = ',"spec":'
_GENERATION = re.compile(r'\{"driver":"[^"]*","pool":\{"name":"[^"]*","generation":(\d+),')


class StoreSliceIndex:
    """The local store's slices of `drivers`, read node by node through the store's node index."""

    def __init__(self, store: ObjectStore, drivers: Collection[str]) -> None:
        self.store = store
        self.drivers = sorted(set(drivers))
        self._taken: set[tuple[str, str]] = set()

    def unchanged(self, driver: str, node: str, names: list[str], texts_for: Callable[[int], list[str]],
                  owner_uid: str | None) -> bool:
        if not names or [n for _, n in self.store.keys(SLICES, index={"node": node, "driver": driver})] != sorted(names):
            return False
        stored = []
        for name in names:
            text = self.store.get_text(SLICES, None, name)
            head, mark, tail = (text or "").partition(_SPEC_MARK)
            if not mark:
                return False
            stored.append((head, tail))
        found = _GENERATION.match(stored[0][1])
        if found is None:
            return False
        for (head, tail), want in zip(stored, texts_for(int(found.group(1)))):
            if tail != want + "}" or (owner_uid and not _owned_by(head, owner_uid)):
                return False
        self._taken.add((driver, node))
        return True

    def take(self, driver: str, node: str, names: list[str]) -> list[dict[str, Any]]:
        if (driver, node) in self._taken:
            return []
        self._taken.add((driver, node))
        return self.store.list(SLICES, index={"node": node, "driver": driver})

    def for_node(self, node: str) -> list[dict[str, Any]]:
        """Their heads (metadata) only: removing a slice needs its name and uid, not its devices."""
        out = []
        for driver in self.drivers:
            if (driver, node) not in self._taken:
                self._taken.add((driver, node))
                out.extend(self.store.heads(SLICES, index={"node": node, "driver": driver}))
        return out


def _owned_by(head: str, uid: str) -> bool:
    try:
        meta = json.loads(head + "}").get("metadata") or {}
    except (ValueError, AttributeError):
        return False
    return any(isinstance(r, dict) and r.get("kind") == "Node" and r.get("uid") == uid
               for r in meta.get("ownerReferences") or ())


class FleetTarget(Protocol):
    kind: str  # "store" or "apiserver"

    @property
    def requests(self) -> int: ...

    def list_nodes(self) -> list[dict[str, Any]]: ...
    def get_node(self, name: str) -> dict[str, Any] | None: ...
    def create_node(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def update_node(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def delete_node(self, name: str, uid: str | None) -> None: ...
    def slice_index(self, drivers: Collection[str], expected: Collection[str]) -> SliceIndex: ...
    def list_node_slices(self, driver: str, node: str) -> list[dict[str, Any]]: ...
    def create_slice(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def update_slice(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def delete_slice(self, name: str, *, uid: str | None = None, resource_version: str | None = None) -> None: ...
    def dry_run_create_slice(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def list_claims(self) -> list[dict[str, Any]]: ...
    def batch(self) -> contextlib.AbstractContextManager[None]: ...


class StoreFleetTarget(ForwardsSliceWrites):
    """The local object store. Slice writes go through the store's SliceBackend, so the simulated
    apiserver strips fields of gates STORE/featuregates.yaml turns off, exactly as for `fake-dra run`."""

    kind = "store"

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.slices = StoreSliceBackend(store)
        self._calls = 0

    @property
    def requests(self) -> int:
        return self._calls + self.slices.requests

    def list_nodes(self) -> list[dict[str, Any]]:
        self._calls += 1
        return self.store.list(NODES)

    def get_node(self, name: str) -> dict[str, Any] | None:
        self._calls += 1
        try:
            return self.store.get(NODES, None, name)
        except NotFoundError:
            return None

    def create_node(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._calls += 1
        return self.store.create(NODES, obj)

    def update_node(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._calls += 1
        return self.store.update(NODES, obj)

    def delete_node(self, name: str, uid: str | None) -> None:
        self._calls += 1
        current = self.store.get(NODES, None, name)
        if uid and current["metadata"].get("uid") != uid:
            raise NotFoundError(f"node {name}: replaced meanwhile (uid {current['metadata'].get('uid')}, not {uid})")
        self.store.delete(NODES, None, name)

    def slice_index(self, drivers: Collection[str], expected: Collection[str]) -> StoreSliceIndex:
        """`expected` (the slice names the fleet's nodes should have) is not needed: the store's
        node index finds each node's slices."""
        self._calls += 1
        return StoreSliceIndex(self.store, drivers)

    def list_node_slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        return self.slices.list_slices(driver, node)

    def _slice_writes(self) -> Any:
        return self.slices

    def list_claims(self) -> list[dict[str, Any]]:
        self._calls += 1
        return self.store.list(CLAIMS, all_namespaces=True)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        with self.store.batch():
            yield
