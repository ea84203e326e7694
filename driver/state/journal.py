"""The checkpoint file following the records in memory, with group commit.

Why a class of its own: driver.state.prepare decides *what* is recorded and in which order; this
module only makes the file catch up, as cheaply as concurrency allows. Each change to the records
bumps a version counter (`bump`, under the state's lock); a writer takes the I/O lock *before* it
snapshots, so a caller that waited while another one wrote snapshots everything recorded meanwhile
(its own change and those of every other waiter) and the callers behind it find their versions
already covered: C concurrent prepares cost ~1 write per wave instead of one per call. The state's
lock is held only while encoding (from per-claim fragments, O(changed claims)), never across disk
I/O. Once `close`d (the state directory released), nothing is written any more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from driver.errors import CallAborted
from driver.state.checkpoint import Checkpoint, CheckpointStore


class Journal:
    def __init__(self, store: CheckpointStore, cp: Checkpoint, lock: threading.Lock) -> None:
        """`lock` is the state's lock, which guards `cp`, `bump` and `changed`."""
        self._store = store
        self._cp = cp
        self._lock = lock
        self._io_lock = threading.Lock()  # serialises checkpoint writes and fsyncs
        self.version = self._written = self._synced = 0
        self._dirty: set[str] = set()  # claim UIDs changed since the last encode
        self._closed = False

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
        """Outside the state's lock: write (and optionally fsync) the checkpoint as of now, unless
        the file already holds version `need` (default: everything recorded so far). Raises
        OSError, or CallAborted once closed."""
        with self._io_lock:
            if self._closed:
                raise CallAborted("the state directory was released; not writing the checkpoint")
            with self._lock:
                target = self.version if need is None else need
                if (self._synced if durable else self._written) >= target:
                    return
                data, version = self._store.encode(self._cp, self._dirty), self.version
                self._dirty = set()
            if version > self._written:
                self._store.write(data, durable=durable)
                self._written = version
                if durable:
                    self._synced = version
            elif durable:  # the file on disk already holds this version: only flush it
                self._store.sync()
                self._synced = self._written

    def flush(self, need: int | None = None) -> None:
        self.write(durable=True, need=need)

    def close(self, then: Callable[[], None]) -> None:
        """Stop writing, waiting for a write in progress, then run `then` (release the directory)."""
        with self._io_lock:
            self._closed = True
            then()
