"""What a scheduler plugin may keep between scheduling cycles, for callers that hand the allocator
whole object lists each cycle.

kube-scheduler allocates each pod in a new scheduling cycle from its informers' view of the cluster:
the ResourceSlices (unchanged between cycles until a driver republishes) and the claims allocated so
far. A `ClusterView` is that view kept up to date object by object; `AllocatorCache` keeps one per
set of gates and syncs it with the lists given to `Allocator(..., cache=cache)`: only slices and
claims that changed are parsed again (a slice by uid/resourceVersion, else pool generation and
content; a claim by object and allocation), so each cycle costs what changed plus the node's own
allocator. Allocations are never cached beyond the claims given: a claim left out of `allocated`
no longer holds anything, as a new upstream Allocator per cycle sees it.

Use: `cache = AllocatorCache()` once, then `Allocator(..., cache=cache)` per cycle. A caller that
edits a slice dict in place must bump its pool generation (as any driver publishing through the
API does); claims are compared by object and allocation, so pass a new object for a new allocation.
Not thread-safe: a cycle syncs the view (a write).
"""

from __future__ import annotations

from typing import Any

from driver.features import Features


class AllocatorCache:
    """ClusterViews by gates, synced with the objects of each cycle. Not thread-safe."""

    def __init__(self, max_views: int = 4) -> None:
        self.max_views = max_views
        self._views: dict[Features, Any] = {}

    def view(self, features: Features) -> Any:
        """The ClusterView kept for these gates (the caller syncs it with the cycle's objects)."""
        from driver.allocator.cluster import ClusterView

        view = self._views.pop(features, None)
        if view is None:
            view = ClusterView(features=features)
        self._views[features] = view  # most recently used last
        while len(self._views) > self.max_views:
            del self._views[next(iter(self._views))]
        return view
