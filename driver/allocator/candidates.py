"""The devices of a node that may serve a request, found lazily in search order.

Upstream evaluates a request's selectors device by device as the search reaches them, after the
cheap in-use check (structured/internal/experimental allocator_experimental.go allocateOne:
"Checking for 'in use' is cheap and thus gets done first. Next check selectors."), and stops at the
first solution. A node that is asked for "any 1g.5gb" therefore evaluates a few devices, not all of
them. `Candidates` keeps that laziness and remembers what it found: the positions (in the node's
search order) of the devices whose selectors matched so far, extended only when the search walks
past the last one. Later searches with the same selectors on the same node skip the devices known
not to match, and once every device was seen they can also prune a request that needs more
devices than remain.

A device whose selectors fail to evaluate is kept as a candidate: the search evaluates it again
when (and only if) it reaches the device, and raises there, as upstream does. So is a device held
exclusively by an allocated claim, without evaluating its selectors (upstream checks "in use"
first; a new allocator per cycle would otherwise evaluate every held device it walks past): the
search skips it, or evaluates it when it reaches it after its release. Candidates are therefore
the matching devices plus some that were not evaluated; the search checks each one it takes.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from typing import Any

from driver.errors import AllocationError, InputError


class Candidates:
    """Matching devices of one node view for one set of selectors, found so far (thread-safe)."""

    __slots__ = ("positions", "entries", "scanned", "size", "_lock")

    def __init__(self, size: int):
        self.positions: list[int] = []  # positions in the view's `flat` order
        self.entries: list[tuple[int, int, Any, Any]] = []  # (pool index, device index, pool, device)
        self.scanned = 0  # devices of `flat` looked at
        self.size = size
        self._lock = threading.Lock()

    @property
    def complete(self) -> bool:
        return self.scanned >= self.size

    def _advance(self, alloc: Any, claim: Any, req: Any) -> bool:
        """Look at further devices until one more candidate is found; False at the end."""
        with self._lock:
            found = len(self.entries)
            flat, locations = alloc.flat, alloc.view.locations
            held = () if req.admin_access else alloc.state.in_use
            i = self.scanned
            while i < self.size and len(self.entries) == found:
                pool, dev = flat[i]
                if dev.key in held:
                    ok = True  # not evaluated now: the search skips it as in use, or evaluates it once released
                else:
                    try:
                        ok = alloc.selectable(claim, req, dev)
                    except (AllocationError, InputError):
                        ok = True  # evaluated again (and raised) when the search reaches it
                if ok:
                    pi, dj = locations[i]
                    self.positions.append(i)
                    self.entries.append((pi, dj, pool, dev))
                i += 1
            self.scanned = i
            return len(self.entries) > found

    def index_from(self, alloc: Any, claim: Any, req: Any, position: int) -> int:
        """Index of the first candidate at or after `position` (len(entries) when there is none)."""
        while True:
            k = bisect_left(self.positions, position)
            if k < len(self.positions) or self.complete or not self._advance(alloc, claim, req):
                return k

    def at(self, alloc: Any, claim: Any, req: Any, k: int) -> tuple[int, int, Any, Any] | None:
        """The k-th candidate, finding more as needed; None past the last one."""
        while k >= len(self.entries):
            if self.complete or not self._advance(alloc, claim, req):
                return None
        return self.entries[k]
