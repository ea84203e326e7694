"""Who may write the state directory, and until when: the directory lock and the calls in flight.

Why: during a rolling update the successor plugin process takes the state over as soon as the
old one releases its lock. If the old process still wrote afterwards (a call whose claim read was
retrying, a prepare half done at the end of the grace period), it would overwrite the successor's
checkpoint: an acknowledged prepare lost, a device held by two claims. So the lock is released
only once no call of this process can write any more:

1. SIGTERM: the gRPC edge stops accepting calls; `CallGate.drain` waits up to the grace period
   for the calls already running;
2. calls still running then are cancelled (their Deadline expires at once): a call that has not
   committed rolls back what it recorded (driver.state.prepare), and no call may start a
   mutating section any more;
3. once no mutating section is left (bounded: a rollback is local file I/O), the caller flushes
   the checkpoint and only then releases `StateDirLock`. If a section is still running after the
   cancel window (a hung disk), the caller must exit the process without releasing the lock
   first: the kernel drops the lock and the writer thread together, like after a SIGKILL, which
   the crash-safe write order already handles.

Every call is bounded besides: by its gRPC deadline and by the kubelet's 45 s (driver.deadline).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from driver import flock
from driver.deadline import KUBELET_CALL_TIMEOUT_S, POLL_S, Alarm, Deadline
from driver.errors import CallAborted, InputError

log = logging.getLogger("fake-dra.state")
LOCK_FILE = "lock"
BUSY = "timed out waiting for other calls to finish; retry"
BUSY_MARGIN_S = 1.0  # a call refused as busy answers this long before its Deadline (itself 0.5 s early)


class CallGate:
    """Counts the calls inside the state and the mutating sections among them."""

    def __init__(self, max_call_s: float = KUBELET_CALL_TIMEOUT_S) -> None:
        self.max_call_s = max_call_s
        self.cancel = Alarm()  # a shutdown's cancellation also wakes the calls queued for a slot or a claim
        self._cond = threading.Condition()
        self._calls = 0
        self._mutating = 0
        self._closing = False

    def deadline(self, timeout_s: float | None, abandoned: threading.Event | None = None) -> Deadline:
        return Deadline.within(timeout_s, self.cancel, cap_s=self.max_call_s, abandoned=abandoned)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Around a whole kubelet call, so `drain` can wait for it."""
        with self._cond:
            self._calls += 1
        try:
            yield
        finally:
            with self._cond:
                self._calls -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def mutating(self, deadline: Deadline, what: str) -> Iterator[None]:
        """Around everything a call records or writes. Refused (CallAborted, nothing done yet)
        once the plugin is closing or the call's deadline has passed."""
        with self._cond:
            if self._closing:
                raise CallAborted(f"{what}: cancelled, the plugin is shutting down; retry")
            deadline.check(what)
            self._mutating += 1
        try:
            yield
        finally:
            with self._cond:
                self._mutating -= 1
                self._cond.notify_all()

    def drain(self, grace_s: float, cancel_s: float) -> bool:
        """Wait up to grace_s for the running calls, cancel the rest, then wait up to cancel_s
        for their mutating sections to end (roll back). True when nothing can write any more."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._calls == 0, timeout=grace_s):
                log.warning("cancelling calls still running at the end of the grace period",
                            extra={"calls": self._calls, "grace_s": grace_s})
            self._closing = True
            self.cancel.set()
            if self._cond.wait_for(lambda: self._mutating == 0, timeout=cancel_s):
                return True
            log.error("calls still writing after cancellation", extra={"calls": self._mutating, "cancel_s": cancel_s})
            return False


class _Waiter:
    """One call queued at a StateGate: `event` is set when the slot is handed to it (`granted`)
    or when its call is cancelled."""

    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.granted = False


class StateGate:
    """At most `slots` calls at once; the others wait in arrival order.

    Why: the work it admits is CPU under the GIL (validation and the in-memory records, which the
    state's lock serialises anyway), so more threads inside only add GIL hand-offs, each of which
    costs a scheduler wake-up on a busy machine, and make service order random, which doubles the
    tail: with 16 callers p99 was ~2x p50 with 32 runnable threads and ~1.3x with 4. Nothing that
    waits is done inside it: neither a claim's API read (as the upstream kubeletplugin helper reads
    claims before it serialises: API latency must not stall the node's other calls, an unprepare
    needs no API at all) nor a disk flush (driver.state.journal; a call leaves the gate before it
    waits for the checkpoint, so the flush of one wave covers every call recorded meanwhile). A
    leaving call hands its slot to the first waiter directly (one wake-up, no thundering herd).
    A waiter sleeps until it is handed a slot, its call is cancelled (driver.deadline.Alarm wakes
    it: no polling) or `until` comes, leaving the caller time to answer "busy" before the
    kubelet's deadline.
    `StateGate(1)` is a FIFO mutex with those properties (driver.state.claimlocks)."""

    def __init__(self, slots: int) -> None:
        self._lock = threading.Lock()
        self._free = slots
        self._waiting: collections.deque[_Waiter] = collections.deque()

    def enter(self, until: float, deadline: Deadline) -> bool:
        """True once a slot is ours (then call `leave`), False at `until` or on cancellation."""
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return True
            mine = _Waiter()
            self._waiting.append(mine)
        with deadline.watching(mine.event) as woken:
            while True:
                left = until - time.monotonic()
                mine.event.wait(max(0.0, left if woken else min(left, POLL_S)))
                with self._lock:
                    if mine.granted:  # handed to us, perhaps as we gave up: keep it
                        return True
                    if time.monotonic() >= until or deadline.cancelled:
                        self._waiting.remove(mine)
                        return False
                    mine.event.clear()  # a poll's timeout, or an alarm that was not ours

    def leave(self) -> None:
        with self._lock:
            if self._waiting:
                nxt = self._waiting.popleft()  # the slot passes to the first waiter
                nxt.granted = True
                nxt.event.set()
            else:
                self._free += 1

    @contextlib.contextmanager
    def slot(self, deadline: Deadline) -> Iterator[bool]:
        """Hold a slot (True), or False when none came free in time: the caller answers BUSY then,
        early enough (BUSY_MARGIN_S before its deadline) for the kubelet to get it."""
        if not self.enter(deadline.at - BUSY_MARGIN_S, deadline):
            yield False
            return
        try:
            yield True
        finally:
            self.leave()


class StateDirLock:
    """flock on `<state-dir>/lock`: one plugin process owns the state directory at a time.

    The newcomer of a surging rolling update waits until the old process releases it (explicitly
    after its last write, or by exiting: the kernel drops the lock even on SIGKILL), for at most
    `wait_s` seconds (None: for ever, as a DaemonSet's successor should); then an InputError naming
    the holder. The owner writes its PID and host name into the file for the next waiter's message
    (driver.flock)."""

    def __init__(self, state_dir: Path, wait_s: float | None = None) -> None:
        self.path = state_dir / LOCK_FILE
        self.wait_s = wait_s
        self._fd = -1

    def acquire(self) -> None:
        with startup_io("state directory lock", self.path):
            # Never through a symlink (fchmod would change its target's mode) nor a FIFO or device.
            if self.path.is_symlink():
                raise InputError(f"state directory lock {self.path} is a symbolic link (to {os.readlink(self.path)}); "
                                 "refusing to follow it: remove the link")
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):
                self.release()
                raise InputError(f"state directory lock {self.path} is not a regular file; remove it")
            os.fchmod(self._fd, 0o600)

        def busy(holder: str) -> None:
            bound = "without a bound" if self.wait_s is None else f"up to {self.wait_s:g} s (--wait-for-lock)"
            log.warning(f"another plugin process owns the state directory: {holder}; waiting {bound} for it to exit",
                        extra={"state_dir": str(self.path.parent), "holder": holder})
        if not flock.lock(self._fd, self.wait_s, on_busy=busy):
            holder = flock.describe_holder(self._fd)
            self.release()
            raise InputError(f"state directory {self.path.parent} is owned by another plugin process ({holder}); "
                             f"gave up after {self.wait_s:g} s (--wait-for-lock; 'forever' waits as a rolling "
                             "update's successor does). Is a second `fake-dra run` serving this node?")
        flock.record_holder(self._fd)

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0


@contextlib.contextmanager
def startup_io(what: str, path: Path | str) -> Iterator[None]:
    """A start-up step on `path`: an OSError becomes an InputError naming what and where (exit 2),
    never a traceback: a read-only state directory, a file where a directory should be, ..."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise InputError(f"{what} {path}: {exc.strerror or exc}{where}") from None


def fix_mode(path: Path, what: str, strip: int = 0o022, warn: Callable[..., None] = log.warning) -> None:
    """Remove group/world write access from an existing directory we own (never from a
    directory that is sticky or belongs to someone else: that is an error to fix by hand)."""
    st = path.stat()
    if not st.st_mode & strip:
        return
    mode = st.st_mode & 0o7777
    if st.st_uid != os.geteuid() or mode & 0o1000:
        raise InputError(f"{what} {path} is group/world-writable (mode {mode:04o}) and not ours to fix: "
                         "anyone could write into it; run chmod go-w on it or choose another directory")
    os.chmod(path, mode & ~strip)
    warn(f"{what} was group/world-writable; removed that write access",
         extra={"path": str(path), "mode_was": f"{mode:04o}", "mode": f"{mode & ~strip:04o}"})
