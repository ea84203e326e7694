"""One lock per claim in use: prepare and unprepare of the same claim take turns, in arrival order.

Why per claim and not striped: a call holds its claims' locks for its whole length, disk flushes
included (an unprepare must not remove a claim whose prepare has not yet answered, nor a prepare
answer for a claim whose unprepare went first). With a fixed set of striped locks two different
claims that hash alike wait for each other's flush: at 48 concurrent calls and 64 stripes, most
calls shared a stripe with another. Locks exist only while some call holds or waits for them.

A call takes its claims' locks in sorted UID order (no two calls can wait for each other in a
cycle) and before the state gate (driver.state.ownership.StateGate), never while holding a slot of
it; nothing inside the gate waits for a claim's lock. A waiter gives up when its call is cancelled
or `BUSY_MARGIN_S` before its deadline, like a gate waiter (each lock is a `StateGate(1)`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator

from driver.deadline import Deadline
from driver.state.ownership import BUSY_MARGIN_S, StateGate


class _Held:
    __slots__ = ("gate", "users")

    def __init__(self) -> None:
        self.gate = StateGate(1)
        self.users = 0  # calls holding or waiting for it


class ClaimLocks:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._locks: dict[str, _Held] = {}

    @contextlib.contextmanager
    def hold(self, uids: Iterable[str], deadline: Deadline) -> Iterator[bool]:
        """Hold the locks of `uids` (True), or False when one did not come free in time or the
        call was cancelled while waiting (then none is held)."""
        keys = sorted(set(uids))
        mine: list[_Held] = []
        with self._lock:
            for uid in keys:
                held = self._locks.get(uid)
                if held is None:
                    held = self._locks[uid] = _Held()
                held.users += 1
                mine.append(held)
        taken = 0
        try:
            until = deadline.at - BUSY_MARGIN_S
            for held in mine:
                if not held.gate.enter(until, deadline):
                    break
                taken += 1
            yield taken == len(mine)
        finally:
            for held in reversed(mine[:taken]):
                held.gate.leave()
            with self._lock:
                for uid, held in zip(keys, mine):
                    held.users -= 1
                    if not held.users:
                        del self._locks[uid]

    def __len__(self) -> int:
        """Claims locked or waited for right now (tests: nothing stays behind)."""
        with self._lock:
            return len(self._locks)
