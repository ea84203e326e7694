"""Where the scheduler's DRA filter gets its ResourceSlices: all at once, or node by node from the store.

A 5,000-node DGX-A100 fleet publishes 1.1 GB of slice JSON, about 10 GB once parsed: more than a
scheduler may hold. kube-scheduler keeps every slice in its informer cache; here the filter reads a
node's slices when the node is first tried, through the store's node index (`spec.nodeName`,
driver.store.indexes), and keeps the parsed slices of at most `max_nodes` nodes, forgetting the
least recently tried one first. Slices without a nodeName (allNodes, nodeSelector, per-device
node selection, counter slices shared by such pools) may target any node: they are read once and
kept. A pool whose slices name several nodes (upstream completes a short pool from every slice of
its generation, structured allocator GatherPools) is completed from the driver's slices and kept.

`AllSlices` is the eager source for callers that hold their slices anyway (the e2e backends).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from driver.errors import InputError, NotFoundError
from driver.store import ObjectStore

log = logging.getLogger("fake-dra.schedule")

MAX_NODES = 256  # parsed nodes kept (a DGX-A100 node is ~2 MB parsed): ~0.5 GB


def slice_node(obj: Mapping[str, Any]) -> str | None:
    spec = obj.get("spec")
    node = spec.get("nodeName") if isinstance(spec, Mapping) else None
    return str(node) if node else None


def slice_pool(obj: Mapping[str, Any]) -> tuple[str, str, int, int] | None:
    """(driver, pool, generation, resourceSliceCount) of a slice, None when it has none readable
    (the view's checks name the problem when it is parsed)."""
    spec = obj.get("spec")
    pool = spec.get("pool") if isinstance(spec, Mapping) else None
    if not isinstance(pool, Mapping):
        return None
    generation, count = pool.get("generation", 0), pool.get("resourceSliceCount", 0)
    if not isinstance(generation, int) or not isinstance(count, int):
        return None
    return str(spec.get("driver")), str(pool.get("name")), generation, count


class SliceSource(Protocol):
    lazy: bool

    def shared(self) -> list[Mapping[str, Any]]: ...

    def of_node(self, node: str) -> list[Mapping[str, Any]]: ...

    def of_pool(self, driver: str, pool: str) -> list[Mapping[str, Any]]: ...


class AllSlices:
    """Every slice given up front (nothing is ever forgotten)."""

    lazy = False

    def __init__(self, slices: Sequence[Mapping[str, Any]]) -> None:
        self.slices = list(slices)

    def shared(self) -> list[Mapping[str, Any]]:
        return self.slices

    def of_node(self, node: str) -> list[Mapping[str, Any]]:
        return []

    def of_pool(self, driver: str, pool: str) -> list[Mapping[str, Any]]:
        return []


class StoreSlices:
    """Slices read from the local store: the node-less ones once, a node's own when asked."""

    lazy = True

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.reads = 0  # nodes read (what the cache saves shows in benchmarks)

    def shared(self) -> list[Mapping[str, Any]]:
        """The slices without a nodeName (the node index lists them under "")."""
        return self.store.list("resourceslices", index={"node": ""})

    def of_node(self, node: str) -> list[Mapping[str, Any]]:
        self.reads += 1
        return self.store.list("resourceslices", index={"node": node})

    def of_pool(self, driver: str, pool: str) -> list[Mapping[str, Any]]:
        """Every slice of one pool, through the store's pool index."""
        return self.store.list("resourceslices", index={"pool": f"{driver}/{pool}"})


def _get(store: ObjectStore, name: str) -> dict[str, Any] | None:
    try:
        return store.get("resourceslices", None, name)
    except NotFoundError:
        return None  # deleted since its name was listed
    except InputError as exc:  # unreadable: left out with a warning, as a list would
        log.warning("leaving out an unreadable object: %s", exc)
        return None


class LoadedNodes:
    """Which nodes' slices the view holds, least recently used first, and the slice keys of each."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max(1, max_nodes)
        self._order: OrderedDict[str, list[str]] = OrderedDict()

    def __contains__(self, node: str) -> bool:
        return node in self._order

    def touch(self, node: str) -> bool:
        """Mark the node used now; False when it is not loaded."""
        if node not in self._order:
            return False
        self._order.move_to_end(node)
        return True

    def add(self, node: str, keys: Iterable[str]) -> list[tuple[str, list[str]]]:
        """Record a loaded node; returns the nodes to forget (and their slice keys) to stay bounded."""
        self._order[node] = list(keys)
        self._order.move_to_end(node)
        out = []
        while len(self._order) > self.max_nodes:
            out.append(self._order.popitem(last=False))
        return out

    def drop(self, node: str) -> list[str]:
        return self._order.pop(node, [])

    def keys_of(self, node: str) -> list[str]:
        return self._order.get(node, [])

    def __len__(self) -> int:
        return len(self._order)
