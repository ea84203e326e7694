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

import json
import logging
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from driver.errors import ConflictError, InputError
from driver.store import shape
from driver.store.base import StoreBase

log = logging.getLogger("fake-dra.store")

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


class Watching(StoreBase):
    """The change log of a store, read by revision."""

    def compacted_revision(self) -> int:
        conn = self._conn(write=False)
        if conn is None:
            return 0
        row = conn.execute("SELECT value FROM meta WHERE key='compacted'").fetchone()
        return int(row[0]) if row else 0

    def changes(self, since: int, resources: Collection[str] | None = None,
                limit: int = 1000) -> tuple[list[Change], int]:
        """The changes after revision `since` (at most `limit` log rows) and the revision read up
        to. Expired when the log no longer reaches back to `since` (driver.store.watch)."""
        conn = self._conn(write=False)
        if conn is None:
            return [], since
        compacted = self.compacted_revision()
        if since < compacted:
            raise Expired(f"too old resource version: {since} ({compacted})")
        top = self._revision(conn)  # read first: a change committed during the query waits for the next call
        where, params = "c.rv > ? AND c.rv <= ?", [since, top]
        if resources is not None:
            wanted = sorted(set(resources))
            where += f" AND c.resource IN ({','.join('?' * len(wanted))})"
            params += wanted
        out: list[Change] = []
        rows = conn.execute(
            "SELECT c.rv, c.type, c.resource, c.namespace, c.name, c.meta, o.rv, o.crc, o.value FROM changes c "
            "LEFT JOIN objects o ON o.resource = c.resource AND o.namespace = c.namespace AND o.name = c.name "
            f"WHERE {where} ORDER BY c.rv LIMIT ?", (*params, limit)).fetchall()
        # Fewer rows than asked: every change up to `top` has been seen (those of other resources too).
        last = top if len(rows) < limit else rows[-1][0]
        for rv, kind, resource, ns, name, meta, obj_rv, crc, value in rows:
            namespace = ns or None
            if kind == DELETED:
                try:
                    tomb = json.loads(meta) if meta else {}
                except ValueError:
                    tomb = {}
                out.append(Change(DELETED, rv, resource, namespace, name, tomb if isinstance(tomb, dict) else {}))
                continue
            if obj_rv != rv:  # changed again (or deleted) later: that later change carries it
                continue
            try:
                obj = shape.decode(resource, namespace, name, crc, value, self.db_path)
            except InputError as exc:
                log.warning("leaving out an unreadable object: %s", exc)
                continue
            out.append(Change(kind, rv, resource, namespace, name, obj))
        return out, last

    def watch(self, since: int, resources: Collection[str] | None = None, *, timeout_s: float | None = None,
              stop: threading.Event | None = None, bookmark_s: float = BOOKMARK_S,
              poll_s: float = POLL_S) -> Iterator[Change]:
        """Changes after `since` as they happen (see driver.store.watch), until `timeout_s` passes
        with nothing new or `stop` is set; a BOOKMARK when quiet for `bookmark_s`."""
        notifier = Notifier.for_path(str(self.db_path))
        seen = notifier.commits
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        quiet_since = time.monotonic()
        version = None
        while True:
            batch, since = self.changes(since, resources)
            if batch:
                yield from batch
                quiet_since = time.monotonic()
                if deadline is not None:
                    deadline = time.monotonic() + timeout_s  # type: ignore[operator]
                continue
            now = time.monotonic()
            if (stop is not None and stop.is_set()) or (deadline is not None and now >= deadline):
                return
            if now - quiet_since >= bookmark_s:
                quiet_since = now
                yield Change(BOOKMARK, since)
            conn = self._conn(write=False)
            if conn is not None:
                current = conn.execute("PRAGMA data_version").fetchone()[0]
                if version is not None and current != version:
                    version = current
                    continue
                version = current
            wait = poll_s if deadline is None else max(0.0, min(poll_s, deadline - now))
            seen = notifier.wait(seen, wait)
