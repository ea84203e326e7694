"""Who may write the local store now: one thread of one process at a time, and waits that end.

Two levels, because they wait differently:
- threads of one process queue on an in-process lock (a `threading.Lock`: a waiter sleeps until
  the holder releases it, never polls; the node agent's prepares write claim statuses from many
  threads at once);
- processes take an flock of `STORE/.lock` (0600, never a link), whose holder writes its PID and
  host into it, so a waiter that gives up names who held it (driver.flock). A process waits for
  another process's lock with short, growing sleeps (1 ms up to 50 ms).
SQLite's own write lock is taken after both, so it never waits (its busy timeout is a backstop).

Every wait is bounded by the caller (None only where the caller says "forever") and ends in an
InputError naming the holder: a stuck or hostile process must never hang `run`, `apply` or a
kubelet call.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import stat
import threading
import time
from pathlib import Path

from driver import flock
from driver.errors import InputError
from driver.fsutil import make_dirs

log = logging.getLogger("fake-dra.store")

LOCK_FILE = ".lock"
LOCK_MODE = 0o600
_FIRST_POLL_S = 0.001
_MAX_POLL_S = 0.05


class WriterLock:
    """The writer lock of one store directory, shared by every ObjectStore of this process that
    opens it (`for_root`)."""

    _registry: dict[tuple[str, int], WriterLock] = {}
    _registry_lock = threading.Lock()

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / LOCK_FILE
        self._threads = threading.Lock()
        self._holder: str | None = None  # name of the thread holding it, for messages
        self._fd: int | None = None

    @classmethod
    def for_root(cls, root: Path) -> WriterLock:
        key = (os.path.realpath(root), os.getpid())  # a forked child has its own lock and file
        with cls._registry_lock:
            found = cls._registry.get(key)
            if found is None:
                found = cls._registry[key] = cls(root)
            return found

    def acquire(self, timeout_s: float | None) -> None:
        started = time.monotonic()
        if not self._threads.acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0.0)):
            raise InputError(f"local store {self.root}: its writer lock has been held by thread {self._holder!r} of "
                             f"this process for more than {timeout_s:g} s")
        try:
            left = None if timeout_s is None else max(0.0, timeout_s - (time.monotonic() - started))
            self._acquire_file(left, timeout_s)
        except BaseException:
            self._threads.release()
            raise
        self._holder = threading.current_thread().name

    def release(self) -> None:
        self._holder = None
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def _acquire_file(self, timeout_s: float | None, bound_s: float | None) -> None:
        fd = self._open()
        if flock.try_lock(fd):
            flock.record_holder(fd)
            return
        holder = flock.describe_holder(fd)
        log.info("waiting for the local store's writer lock", extra={"lock": str(self.path), "holder": holder,
                                                                      "timeout_s": timeout_s})
        give_up = None if timeout_s is None else time.monotonic() + timeout_s
        pause = _FIRST_POLL_S
        while True:
            if give_up is not None and time.monotonic() >= give_up:
                raise InputError(f"local store {self.root}: its writer lock {self.path} has been held by "
                                 f"{flock.describe_holder(fd)} for more than {bound_s:g} s; stop that process "
                                 "(or remove the lock file: its holder then keeps a lock nobody waits for)")
            time.sleep(pause if give_up is None else max(0.0, min(pause, give_up - time.monotonic())))
            pause = min(pause * 2, _MAX_POLL_S)
            if flock.try_lock(fd):
                flock.record_holder(fd)
                return

    def _open(self) -> int:
        """STORE/.lock, 0600 whatever the umask: whoever can open it can flock it and stall every
        writer of the store, so only its owner may. Never through a symlink, nor a FIFO or device
        in its place. Opened once per process and kept."""
        if self._fd is not None:
            try:
                st = os.fstat(self._fd)
                same = os.path.samestat(st, os.lstat(self.path))
            except OSError:
                same = False
            if same:
                if st.st_uid == os.geteuid() and st.st_mode & 0o777 != LOCK_MODE:
                    os.fchmod(self._fd, LOCK_MODE)  # loosened since: tightened again
                return self._fd
            # Removed (as the busy message suggests) or replaced: take the file that is there now.
            os.close(self._fd)
            self._fd = None
        try:
            make_dirs(self.root, 0o755, 0o755)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, LOCK_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(f"local store {self.root}: its lock file {self.path} is a symbolic link; remove it") from None
            raise InputError(f"local store {self.root}: cannot write there ({exc.strerror or exc})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise InputError(f"local store {self.root}: its lock file {self.path} is not a regular file; remove it")
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 != LOCK_MODE:
            os.fchmod(fd, LOCK_MODE)  # a lock file from before, or made under another umask
        self._fd = fd
        return fd
