"""The checkpoint file following the records in memory, with group commit of writes and fsyncs.

Why a class of its own: driver.state.prepare decides *what* is recorded and in which order; this
module only makes the file catch up, as cheaply as concurrency allows. Each change to the records
bumps a version counter (`bump`, under the state's lock). A caller then asks for "version v
written" (renamed into place: survives a process crash) or "version v durable" (also fsynced).

Group commit, as a database's log writer does it: callers queue on one condition; whoever finds no
write running becomes the writer, snapshots *everything* recorded so far and renames it into place;
whoever finds the file written but not flushed, and no fsync running, becomes the syncer and
fsyncs the file. Every caller whose version the snapshot or the fsync covered returns at once, so C
concurrent prepares cost about one write and one fsync per wave, whatever C is. The two steps are
separate roles on purpose: an fsync (milliseconds on a busy disk) never holds up the next
snapshot's rename, and that rename (a new inode) never changes what the running fsync covers.
Renames happen in version order (one writer at a time), so the file at the path always holds the
newest version written, and an fsync of it covers at least the version written when it began.

A write is an atomic replace without fsync (driver.fsutil.atomic_write), then an fsync of the
renamed file: the same file contents as tmp + fsync + rename, but the rename is no longer inside
the slow part. A crash between the two leaves the renamed file, exactly as the PrepareStarted write
always has (a power loss also changes the boot ID: every claim is prepared again). After a failed
fsync the file is rewritten before the next fsync is trusted (Linux may drop the pages a failed
fsync could not write and report success the second time). The state's lock is held only while
encoding (from per-claim fragments, O(changed claims)), never across disk I/O. Once `close`d (the
state directory released), nothing is written any more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from driver.errors import CallAborted
from driver.state.checkpoint import Checkpoint, CheckpointStore

_WRITE, _SYNC, _WAIT = "write", "sync", "wait"


class _Waiter:
    """A caller waiting for `target` (fsynced when `durable`). Woken only when it is covered, when
    it is handed a role (`role`: write or fsync, for itself and every other waiter), or on close:
    never merely because something happened, so a wave of 40 waiters costs 40 wake-ups, not 40
    per write."""

    __slots__ = ("target", "durable", "event", "role", "covers")

    def __init__(self, target: int, durable: bool) -> None:
        self.target = target
        self.durable = durable
        self.event = threading.Event()
        self.role: str | None = None
        self.covers = 0  # for the fsync role: the version the file holds when it starts


class Journal:
    def __init__(self, store: CheckpointStore, cp: Checkpoint, lock: threading.Lock) -> None:
        """`lock` is the state's lock, which guards `cp`, `bump` and `changed`."""
        self._store = store
        self._cp = cp
        self._lock = lock
        self._mutex = threading.Lock()  # guards everything below but `version` and `_dirty`
        self._idle = threading.Condition(self._mutex)  # `close` waits on it for the running I/O
        self.version = self._written = self._synced = 0
        self._writing = False  # a writer is snapshotting and renaming
        self._syncing = False  # an fsync is running
        self._waiters: list[_Waiter] = []  # in arrival order
        self._dirty: set[str] = set()  # claim UIDs changed since the last encode (state's lock)
        self._closed = False
        self.writes = self.syncs = 0  # how many of each this process did (tests, the benchmark)

    def changed(self, uid: str) -> None:
        """Under the state's lock: the record of `uid` was set or removed."""
        self._dirty.add(uid)

    def bump(self) -> int:
        """Under the state's lock: a change is complete; returns the version that holds it."""
        self.version += 1
        return self.version

    @property
    def lagging(self) -> bool:
        """Under the state's lock: something recorded is not durable yet (a flush failed)."""
        return self._synced < self.version

    def write(self, durable: bool, need: int | None = None) -> None:
        """Outside the state's lock: make the file hold version `need` (default: everything
        recorded so far), fsynced when `durable`. Returns as soon as another caller's write or
        fsync covered it. Raises OSError (this caller's own attempt failed: the next caller tries
        again), or CallAborted once closed."""
        me = _Waiter(self.version if need is None else need, durable)
        while True:
            with self._mutex:
                role = self._role_for(me)
                if role == _WAIT:
                    me.event.clear()
                    self._waiters.append(me)
            if role is None:
                return
            if role == _WAIT:
                me.event.wait()
                role, me.role = me.role, None
            if role == _WRITE:
                self._write_snapshot()
            elif role == _SYNC:
                self._sync(me.covers)
            # else: covered, or closed: the next pass returns or raises

    def flush(self, need: int | None = None) -> None:
        self.write(durable=True, need=need)

    def _covered(self, w: _Waiter) -> bool:
        return (self._synced if w.durable else self._written) >= w.target

    def _role_for(self, me: _Waiter) -> str | None:
        """Under the mutex: None when `me` is covered, else the role it takes now, or _WAIT."""
        if self._closed:
            raise CallAborted("the state directory was released; not writing the checkpoint")
        if self._covered(me):
            return None
        if self._written < me.target:
            if not self._writing:
                self._writing = True
                return _WRITE
        elif not self._syncing:  # written, not durable, and no fsync running: ours to do
            self._syncing, me.covers = True, self._written
            return _SYNC
        return _WAIT

    def _dispatch(self) -> None:
        """Under the mutex, after a write or fsync ended: wake the waiters it covered, and hand
        the next write and the next fsync to the first waiter that needs each."""
        waiting = []
        for w in self._waiters:
            if self._closed or self._covered(w):
                w.event.set()
            else:
                waiting.append(w)
        self._waiters = waiting
        if not self._writing:
            self._hand(next((w for w in waiting if self._written < w.target), None), _WRITE)
        if not self._syncing:
            self._hand(next((w for w in self._waiters if w.durable and self._written >= w.target), None), _SYNC)
        self._idle.notify_all()

    def _hand(self, w: _Waiter | None, role: str) -> None:
        if w is None:
            return
        self._waiters.remove(w)
        w.role = role
        if role == _WRITE:
            self._writing = True
        else:
            self._syncing, w.covers = True, self._written
        w.event.set()

    def _write_snapshot(self) -> None:
        version = 0
        try:
            with self._lock:
                data, version = self._store.encode(self._cp, self._dirty), self.version
                self._dirty = set()
            self._store.write(data, durable=False)
        except BaseException:
            version = 0  # not written: the next caller snapshots again
            raise
        finally:
            with self._mutex:
                self._writing = False
                if version:
                    self._written = max(self._written, version)
                    self.writes += 1
                self._dispatch()

    def _sync(self, covers: int) -> None:
        ok = False
        try:
            self._store.sync()
            ok = True
        finally:
            with self._mutex:
                self._syncing = False
                if ok:
                    self._synced = max(self._synced, covers)
                    self.syncs += 1
                else:  # rewrite before trusting another fsync of this file
                    self._written = min(self._written, self._synced)
                self._dispatch()

    def close(self, then: Callable[[], None]) -> None:
        """Stop writing: no caller starts a write or an fsync any more (waiters get CallAborted);
        wait for the one in progress, then run `then` (release the directory)."""
        with self._mutex:
            self._closed = True
            self._dispatch()
            self._idle.wait_for(lambda: not self._writing and not self._syncing)
            then()
