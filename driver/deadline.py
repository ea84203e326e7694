"""Deadlines and cancellation for kubelet calls, shared by the gRPC edge, prepare and the claim readers.

Why: the kubelet gives every NodePrepareResources/NodeUnprepareResources call 45 s (its default
gRPC timeout). Work that goes on after the caller gave up is work nobody waits for, and during a
shutdown hand-over it would be work done while a successor process owns the state directory. So
each call carries one Deadline: the earliest of its gRPC deadline and 45 s (less a small margin so
the answer still arrives), which expires early when the plugin cancels the calls still running at
the end of its grace period, or when the caller cancels the call (its gRPC context ends). Blocking
waits (claim-read retries) wait on it instead of sleeping, so a cancellation ends them at once,
and a call checks it again right before it commits (driver.state.prepare). Pure (no I/O): used by
driver.plugin, driver.state and driver.kube alike.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from driver.errors import CallAborted

KUBELET_CALL_TIMEOUT_S = 45.0  # the kubelet's default per-call timeout (docs/architecture.md §3, kubelet contract)
ANSWER_MARGIN_S = 0.5  # stop working this long before the caller's deadline so the answer reaches it
POLL_S = 0.05  # how soon a blocking wait notices that its caller went away


class Alarm(threading.Event):
    """A threading.Event that also sets the events watching it (`watch`) when it is set.

    Why: a call queued for a gate slot or a claim's lock must stop waiting the moment it is
    cancelled (an unprepare of its claim may be waiting behind it), and polling for that wakes
    every queued thread twenty times a second: with dozens queued, those wake-ups compete with the
    working threads for the GIL and, on a busy machine, for the cores. Watching costs nothing
    until the alarm goes off."""

    def __init__(self) -> None:
        super().__init__()
        self._watchers: set[threading.Event] = set()
        self._watch_lock = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._watch_lock:
            watchers = list(self._watchers)
        for event in watchers:
            event.set()

    def watch(self, event: threading.Event) -> None:
        """Set `event` when this alarm goes off (at once if it already has)."""
        with self._watch_lock:
            self._watchers.add(event)
        if self.is_set():
            event.set()

    def unwatch(self, event: threading.Event) -> None:
        with self._watch_lock:
            self._watchers.discard(event)


@dataclass(frozen=True)
class Deadline:
    """A point in time.monotonic(), the cancellation event of the process's calls (a shutdown), and
    this call's own `abandoned` event (its caller cancelled it or went away: the kubelet cancels a
    prepare when the pod is deleted or the kubelet restarts, and then unprepares the claim)."""

    at: float
    cancel: threading.Event = field(default_factory=Alarm)
    abandoned: threading.Event = field(default_factory=Alarm)

    @classmethod
    def within(cls, timeout_s: float | None, cancel: threading.Event | None = None,
               cap_s: float = KUBELET_CALL_TIMEOUT_S, abandoned: threading.Event | None = None) -> Deadline:
        """The deadline of a call that has `timeout_s` left (None: no gRPC deadline), never more
        than `cap_s` from now."""
        budget = cap_s if timeout_s is None else min(timeout_s, cap_s)
        return cls(time.monotonic() + max(0.0, budget - ANSWER_MARGIN_S), cancel or Alarm(), abandoned or Alarm())

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set() or self.abandoned.is_set()

    def remaining(self) -> float:
        return 0.0 if self.cancelled else max(0.0, self.at - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early on cancellation; True while the deadline holds. A
        shutdown wakes it at once, the caller going away within POLL_S."""
        end = min(time.monotonic() + seconds, self.at)
        while not self.cancelled:
            left = end - time.monotonic()
            if left <= 0:
                break
            self.cancel.wait(min(left, POLL_S))
        return not self.expired

    @contextlib.contextmanager
    def watching(self, event: threading.Event) -> Iterator[bool]:
        """While the block runs, `event` is set as soon as the call is cancelled. Yields False when
        this deadline's events are plain threading.Events that cannot do that: the waiter then
        has to look at `cancelled` every POLL_S itself."""
        alarms = [e for e in (self.cancel, self.abandoned) if isinstance(e, Alarm)]
        for alarm in alarms:
            alarm.watch(event)
        try:
            yield len(alarms) == 2
        finally:
            for alarm in alarms:
                alarm.unwatch(event)

    def check(self, what: str) -> None:
        """Raise CallAborted naming `what` when the call was cancelled or its time is up."""
        if self.cancel.is_set():
            raise CallAborted(f"{what}: cancelled, the plugin is shutting down; retry")
        if self.abandoned.is_set():
            raise CallAborted(f"{what}: cancelled by the caller (the kubelet gave up on the call or went away); "
                              "nothing was kept")
        if time.monotonic() >= self.at:
            raise CallAborted(f"{what}: the call's deadline passed before it could finish; retry")
