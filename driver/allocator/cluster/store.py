"""The ResourceSlices of a cluster, each checked and parsed once, indexed by node and by pool.

Upstream's allocator splits the slices it is given into those with a nodeName (per node) and the
rest (every node has to look at them: allNodes, nodeSelector, per-device node selection, counter
slices), and completes a short pool from all slices (structured/internal/experimental
allocator_experimental.go NewAllocator: slicesOnNode / slicesShared / allSlices). This store keeps
the same three views, updated slice by slice, so a node's pools are gathered from the node's own
slices, the shared ones and the pools they name, never from the whole cluster.

A slice is parsed again only when it changed: a different uid or resourceVersion when it has one,
otherwise a different pool generation or different content (a caller that edits a slice dict in
place must bump its pool generation, as any driver publishing through the API does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from driver.allocator.devices import is_mapping
from driver.allocator.parsed import ParsedSlice, check_slice, fill_bare, slice_name, slice_spec
from driver.allocator.cluster.accounts import PoolId


def _identity(obj: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple:
    meta = obj.get("metadata") or {}
    return (meta.get("uid"), meta.get("resourceVersion"), (spec.get("pool") or {}).get("generation"))


class SliceStore:
    """Parsed slices by key (name), by node (nodeName), the node-less ones, and by pool."""

    def __init__(self) -> None:
        self.by_key: dict[str, ParsedSlice] = {}  # the name, made unique within a batch
        self.on_node: dict[str, dict[str, ParsedSlice]] = {}
        self.shared: dict[str, ParsedSlice] = {}  # no nodeName: may target any node
        self.by_pool: dict[PoolId, dict[str, ParsedSlice]] = {}
        self._source: dict[str, tuple[Mapping[str, Any], tuple]] = {}  # key -> (object, identity)
        self.parsed = 0  # slices parsed so far (each new object or generation once)

    def __len__(self) -> int:
        return len(self.by_key)

    def __iter__(self) -> Iterator[ParsedSlice]:
        return iter(self.by_key.values())

    def for_node(self, node: str) -> Iterable[ParsedSlice]:
        """The slices that may target `node`: its own and the node-less ones."""
        own = self.on_node.get(node)
        if not own:
            return self.shared.values()
        if not self.shared:
            return own.values()
        return [*own.values(), *self.shared.values()]

    def of_pool(self, driver: str, pool: str) -> Sequence[ParsedSlice]:
        return list(self.by_pool.get((driver, pool), {}).values())

    def unchanged(self, key: str, obj: Mapping[str, Any]) -> bool:
        """Whether `obj` is what is stored under `key` already (no parse needed)."""
        known = self._source.get(key)
        if known is None:
            return False
        old, ident = known
        spec = slice_spec(obj)
        if not is_mapping(spec):
            return False
        new = _identity(obj, spec)
        if old is obj:
            return ident == new
        if new[1] is not None:
            return ident == new
        return ident == new and slice_spec(old) == spec

    def prepare(self, objs: Sequence[Mapping[str, Any]], first_index: int = 0) -> list[tuple[str, str, Mapping, Mapping]]:
        """(key, name, object, spec) of each slice, checked; bare specs completed as one batch.

        The key is the name, made unique within the batch (`name#2`, ...): lists that are not an
        API server's (test tables, hand-written files) may repeat a name, and each slice counts."""
        named = []
        keys: list[str] = []
        seen: set[str] = set()
        for i, obj in enumerate(objs):
            name, spec = slice_name(obj, first_index + i), slice_spec(obj)
            check_slice(name, spec)
            named.append((name, spec))
            key, n = name, 1
            while key in seen:
                n += 1
                key = f"{name}#{n}"
            seen.add(key)
            keys.append(key)
        return [(key, name, obj, spec) for key, (name, spec), obj in zip(keys, fill_bare(named), objs)]

    def put(self, key: str, name: str, obj: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[ParsedSlice | None, ParsedSlice]:
        """Store a checked slice under `key`; returns (the slice it replaced, the new one)."""
        old = self.remove(key)
        ps = ParsedSlice(name, spec, key)
        self.parsed += 1
        if ps.has_counters:
            _ = ps.counter_sets  # parsed (and so checked) once, also for slices no node uses
        self.by_key[key] = ps
        self._source[key] = (obj, _identity(obj, spec))
        if ps.node_name is None:
            self.shared[key] = ps
        else:
            self.on_node.setdefault(ps.node_name, {})[key] = ps
        self.by_pool.setdefault(ps.pool_id, {})[key] = ps
        return old, ps

    def remove(self, key: str) -> ParsedSlice | None:
        ps = self.by_key.pop(key, None)
        if ps is None:
            return None
        del self._source[key]
        if ps.node_name is None:
            del self.shared[key]
        else:
            own = self.on_node[ps.node_name]
            del own[key]
            if not own:
                del self.on_node[ps.node_name]
        members = self.by_pool[ps.pool_id]
        del members[key]
        if not members:
            del self.by_pool[ps.pool_id]
        return ps
