"""What a scheduler plugin may keep between scheduling cycles: parsed slices and the pools built from them.

kube-scheduler allocates each pod in a new scheduling cycle from its informers' view of the cluster:
the ResourceSlices (unchanged between cycles until a driver republishes) and the claims allocated so
far. Parsing slices (quantities, counters, devices) dominates a cycle, yet it depends only on the
slices, so a plugin may cache it — keyed by the slice object and its pool generation, which the
API bumps whenever a pool's content changes. Allocations are never cached here: every Allocator
still starts from the claims it is given, as a new upstream Allocator per cycle does.

Use: `cache = AllocatorCache()` once, then `Allocator(..., cache=cache)` per cycle. The cache holds
the slice objects it parsed (so their identity stays meaningful) and forgets the least recently
used ones beyond `max_slices`. A caller that edits a slice dict in place must bump its pool
generation, as any driver publishing through the API does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from driver.allocator.pools import Node, NodeView, ParsedSlice
from driver.features import Features


class AllocatorCache:
    """Parsed slices and per-node views, reused across Allocator instances. Not thread-safe."""

    def __init__(self, max_slices: int = 20_000, max_views: int = 2_000):
        self.max_slices = max_slices
        self.max_views = max_views
        self._slices: OrderedDict[int, tuple[Mapping[str, Any], str, Any, ParsedSlice]] = OrderedDict()
        self._views: OrderedDict[tuple, tuple[tuple[ParsedSlice, ...], NodeView]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def parsed(self, name: str, spec: Mapping[str, Any]) -> ParsedSlice:
        """The ParsedSlice of `spec`: cached while it is the same object with the same generation."""
        key = id(spec)
        generation = (spec.get("pool") or {}).get("generation")
        entry = self._slices.get(key)
        if entry is not None and entry[0] is spec and entry[1] == name and entry[2] == generation:
            self._slices.move_to_end(key)
            self.hits += 1
            return entry[3]
        self.misses += 1
        parsed = ParsedSlice(name, spec)
        self._slices[key] = (spec, name, generation, parsed)
        while len(self._slices) > self.max_slices:
            self._slices.popitem(last=False)
        return parsed

    def node_view(self, slices: Sequence[ParsedSlice], node: Node, features: Features) -> NodeView:
        """Pools of `node` built from exactly these parsed slices (same objects) under these gates."""
        key = (node.name, tuple(sorted(node.labels.items())), features, tuple(id(ps) for ps in slices))
        entry = self._views.get(key)
        if entry is not None and len(entry[0]) == len(slices) and all(a is b for a, b in zip(entry[0], slices)):
            self._views.move_to_end(key)
            return entry[1]
        view = NodeView.build(slices, node, features)
        self._views[key] = (tuple(slices), view)
        while len(self._views) > self.max_views:
            self._views.popitem(last=False)
        return view
