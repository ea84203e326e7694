"""The prepares in flight per claim, so that an unprepare of the claim can overrule them.

Why: when a pod is deleted, or the kubelet restarts, while a prepare of its claim is in flight, the
kubelet cancels the call and then unprepares the claim (kubernetes pkg/kubelet/cm/dra/manager.go).
Once the unprepare is answered, that prepare must keep nothing, even if its cancellation never
reached the plugin or came too late: an unprepare therefore marks every prepare of its claims in
flight (`overrule`) before it waits for anything, and a marked prepare records nothing for that
claim, or rolls it back at its commit point (driver.state.prepare). A prepare that starts after the
unprepare is a new one and is not marked.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator


class Flight:
    """One prepare call in flight: the claims an unprepare has overruled since it started."""

    def __init__(self) -> None:
        self.overruled: set[str] = set()


class InFlight:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, list[Flight]] = {}  # claim UID -> its prepares in flight

    @contextlib.contextmanager
    def prepare(self, uids: Iterable[str]) -> Iterator[Flight]:
        """Around a whole prepare call of `uids`."""
        mine, uids = Flight(), list(uids)
        with self._lock:
            for uid in uids:
                self._flights.setdefault(uid, []).append(mine)
        try:
            yield mine
        finally:
            with self._lock:
                for uid in uids:
                    flights = self._flights[uid]
                    flights.remove(mine)
                    if not flights:
                        del self._flights[uid]

    def overrule(self, uids: Iterable[str]) -> None:
        """An unprepare of `uids` began: every prepare of them in flight keeps nothing of them."""
        with self._lock:
            for uid in uids:
                for flight in self._flights.get(uid, ()):
                    flight.overruled.add(uid)

    def overruled(self, flight: Flight, uid: str) -> bool:
        with self._lock:
            return uid in flight.overruled
