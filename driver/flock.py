"""Exclusive flock()s with a bounded wait that names who holds the lock.

Why: two files are locked for a process's lifetime or across several writes, the plugin's
`<state-dir>/lock` and the local store's `STORE/.lock`, and a wait on either used to be silent and
unbounded: a second `fake-dra run` for a node, or anyone who could open `STORE/.lock` and flock it,
made `run` hang at start and `apply`/`delete` hang for ever. Every wait here ends after a bound the
caller chooses (None only where the caller says "forever"), and the message says which process
holds the lock, from two sources:

- /proc/locks: the kernel's table of locks, matched on the file's device and inode. It sees every
  holder, also one that never wrote anything, but shows PID 0 for a holder outside our PID namespace
  (another container);
- what the holder wrote into the lock file once it had the lock (`record_holder`: its PID and host
  name, which is the pod name in Kubernetes), readable across PID namespaces as long as the file is.

Pure standard library (fcntl, /proc): a leaf module, usable by driver.state and driver.store alike.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Callable

LOCKS_TABLE = "/proc/locks"
_POLL_S = 0.05
_MAX_RECORD = 256  # bytes of the holder record read back; the rest is not ours


def try_lock(fd: int) -> bool:
    """Take the exclusive lock without waiting; False when another open file holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock(fd: int, timeout_s: float | None, on_busy: Callable[[str], None] | None = None) -> bool:
    """Take the exclusive lock, waiting at most `timeout_s` (None: without bound). True once held,
    False when the time ran out. `on_busy(holder)` is called once, when the first try finds the
    lock taken, with `describe_holder(fd)` (so the caller can say whom it waits for)."""
    if try_lock(fd):
        return True
    if on_busy is not None:
        on_busy(describe_holder(fd))
    if timeout_s is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    give_up = time.monotonic() + timeout_s
    while time.monotonic() < give_up:
        time.sleep(min(_POLL_S, max(0.0, give_up - time.monotonic())))
        if try_lock(fd):
            return True
    return False


def record_holder(fd: int) -> None:
    """Write `pid=<pid> host=<hostname>` into the held lock file, for the next waiter's message
    (best effort: a lock file that cannot be written is still a lock)."""
    record = f"pid={os.getpid()} host={socket.gethostname()}\n".encode()
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)


def holder_pids(fd: int, table: str = LOCKS_TABLE) -> list[int]:
    """PIDs holding a FLOCK on the file open at `fd`, as /proc/locks shows them in our PID
    namespace (0 for a holder we cannot see). Empty when the table cannot be read."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open(table, encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 29053 fe:00:2146321 0 EOF"; a waiter's line starts "1: -> FLOCK"
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
            with contextlib.suppress(ValueError):
                pids.append(int(fields[4]))
    return [p for p in pids if p != os.getpid()] or pids


def describe_holder(fd: int, table: str = LOCKS_TABLE) -> str:
    """`PID 4242 (fake-dra apply -f x.yaml)`, or what the holder recorded, or `an unknown process`."""
    seen = [p for p in holder_pids(fd, table) if p > 0]
    recorded = _recorded(fd)
    if seen:
        who = ", ".join(f"PID {p}{_cmdline(p)}" for p in seen[:3])
        return who if not recorded or f"pid={seen[0]} " in recorded + " " else f"{who}; the lock file says {recorded}"
    if recorded:
        return f"a process outside this PID namespace or gone (the lock file says {recorded})"
    return "an unknown process (not in /proc/locks; in another PID namespace?)"


def _recorded(fd: int) -> str:
    try:
        raw = os.pread(fd, _MAX_RECORD, 0)
    except OSError:
        return ""
    text = raw.decode("utf-8", "replace").splitlines()[0] if raw.strip() else ""
    return "".join(c for c in text if c.isprintable())[:120]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(400)
    except OSError:
        return ""
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    text = " ".join(os.path.basename(w) if i == 0 else w for i, w in enumerate(words))
    text = "".join(c for c in text if c.isprintable())
    return f" ({text[:100]}{'...' if len(text) > 100 else ''})" if text else ""
