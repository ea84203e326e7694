"""Watching the local store by revision, as a client watches kube-apiserver.

Every write is a revision (the object's new resourceVersion) and a row of the store's change log.
A watcher lists at revision R (`ObjectStore.snapshot`), then asks for the changes after R: each is
ADDED, MODIFIED or DELETED with the object as it is now (a MODIFIED whose object changed again
later is skipped: the later change carries it, so a watcher sees every object's latest state in
revision order, as an informer's level-triggered handlers want), and a DELETED carries the
deleted object's metadata. While nothing happens a watch yields a BOOKMARK with the current
revision (kube-apiserver's allowWatchBookmarks), so a watcher can resume from there.

The log is compacted: it keeps the last `KEEP_CHANGES` revisions. Watching from an older revision
raises `Expired` ("too old resource version", kube-apiserver's 410 Gone): list again and watch
from the list's revision, as client-go's reflector does.

Waiting: a writer of this process wakes its watchers at once (a Condition per store); writes of
other processes are noticed by polling SQLite's `PRAGMA data_version` (a counter that moves when
another connection commits; no I/O beyond the shared-memory file) every `POLL_S`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from driver.errors import ConflictError

ADDED, MODIFIED, DELETED, BOOKMARK = "ADDED", "MODIFIED", "DELETED", "BOOKMARK"
KEEP_CHANGES = 50_000  # revisions of change log kept after a compaction
COMPACT_EVERY = 10_000  # a compaction runs each time the revision crosses a multiple of this
POLL_S = 0.05  # how often a watch looks for other processes' writes
BOOKMARK_S = 10.0  # a quiet watch yields a bookmark this often (kube-apiserver: about a minute)


class Expired(ConflictError):
    """A watch (or a list of changes) from a revision the log no longer holds (410 Gone)."""


@dataclass(frozen=True)
class Change:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    revision: int
    resource: str = ""
    namespace: str | None = None
    name: str = ""
    object: dict[str, Any] | None = None  # None for a BOOKMARK

    @property
    def key(self) -> tuple[str, str | None, str]:
        return self.resource, self.namespace, self.name


class Notifier:
    """Wakes the watchers of one store in this process when a writer commits."""

    _registry: dict[str, Notifier] = {}
    _registry_lock = threading.Lock()

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.commits = 0

    @classmethod
    def for_path(cls, path: str) -> Notifier:
        with cls._registry_lock:
            found = cls._registry.get(path)
            if found is None:
                found = cls._registry[path] = cls()
            return found

    def committed(self) -> None:
        with self.cond:
            self.commits += 1
            self.cond.notify_all()

    def wait(self, seen: int, timeout_s: float) -> int:
        """Wait until a commit after `seen` (or the timeout); the commit count now."""
        with self.cond:
            if self.commits == seen:
                self.cond.wait(timeout_s)
            return self.commits
