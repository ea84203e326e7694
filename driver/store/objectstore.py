"""The local object store: kube-apiserver's storage semantics over one SQLite file, the embedded default.

What it promises (docs/store.md), as the directory store before it did:
- one object per key (resource, namespace, name); `metadata.resourceVersion` is the store's global
  revision at the object's last change, which increases on every write, deletes included;
- writes that carry a resourceVersion are optimistic-concurrency checked (ConflictError when
  stale), so the publisher, the plugin and the controllers behave here as against kube-apiserver;
- `locked()` / `batch()` make many writes one transaction: all or nothing, durable when it ends
  (one fsync), with a process killed inside it leaving the store as it was; nested blocks are
  savepoints, so an inner failure undoes only its own writes;
- several processes share one store: readers never wait (WAL), writers queue on the writer lock
  (driver.store.writelock), and every wait is bounded and names the holder;
- a stored object that cannot be read (not JSON, the wrong shape, a row someone edited by hand) is
  an error for that object, never for the command: `get` of it fails naming it, lists leave it out
  with a warning; an object larger than kube-apiserver would store is refused at write.

The store is assembled from parts: the base (driver.store.base: directory, database, this
thread's transaction), reads (driver.store.reads: `get`, streaming lists, the secondary indexes of
driver.store.indexes), the allocation index (driver.store.allocations), the watch
(driver.store.watch: `changes`, `watch` by revision) and, here, transactions and writes.

Writes copy the object's top level and metadata (the only part the store changes); nested values
are shared with the caller's object, which must not change them afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import sqlite3
import uuid
import zlib
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from driver.errors import ConflictError, InputError
from driver.store import database, indexes, shape
from driver.store.allocations import Allocations
from driver.store.base import _Tx
from driver.store.codec import json_text
from driver.store.reads import Reads
from driver.store.watch import ADDED, COMPACT_EVERY, DELETED, KEEP_CHANGES, MODIFIED, Notifier, Watching
from driver.store.writelock import WriterLock

log = logging.getLogger("fake-dra.store")

CLUSTER_SCOPE = "_cluster"  # the namespace directory of cluster-scoped objects in exports and old stores
LOCK_WAIT_S = 10.0  # how long a writer waits for another writer by default
MAX_OBJECT_BYTES = shape.MAX_OBJECT_BYTES
# kube-apiserver's generateName suffix: 5 characters of k8s.io/apimachinery/pkg/util/rand's alphabet
# (no vowels, no 0/1/3, so that no word or look-alike is ever spelled).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def generated_name(prefix: str) -> str:
    """`prefix` (cut to 58 characters) + 5 random characters, as kube-apiserver names an object
    from its generateName (k8s.io/apiserver pkg/storage/names SimpleNameGenerator)."""
    return prefix[:58] + "".join(secrets.choice(NAME_ALPHABET) for _ in range(5))


def now_timestamp() -> str:
    """Now as the API server writes timestamps (RFC 3339, UTC, whole seconds)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ObjectStore(Reads, Allocations, Watching):
    """CRUD, indexes and watch over one store directory. `namespace=None` means cluster-scoped."""

    # -- transactions ----------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, timeout_s: float | None = LOCK_WAIT_S) -> Iterator[None]:
        """One transaction: every read and write inside sees and changes the store as one step, and
        is undone whole if the block raises. Nested blocks are savepoints. InputError naming the
        holder when another writer holds the store for more than `timeout_s` (None: forever)."""
        tx = self._tx()
        if tx.reading:
            raise RuntimeError("local store: a write inside snapshot() (end the snapshot first)")
        if tx.depth:
            conn = self._db.connection(create=True)
            assert conn is not None
            point = f"sp{tx.depth}"
            conn.execute(f"SAVEPOINT {point}")
            tx.depth += 1
            try:
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute(f"ROLLBACK TO {point}")
                    conn.execute(f"RELEASE {point}")
                raise
            else:
                conn.execute(f"RELEASE {point}")
            finally:
                tx.depth -= 1
            return
        conn = self._conn(write=True)
        assert conn is not None
        lock = WriterLock.for_root(self.root)
        lock.acquire(timeout_s)
        changed = False
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
                tx.revision = tx.start = self._revision(conn)
            except sqlite3.Error as exc:
                raise database.explain(exc, self.db_path, "starting a write") from None
            tx.depth = 1
            try:
                yield
                if tx.revision != tx.start:
                    changed = True
                    self._finish(conn, tx)
                conn.execute("COMMIT")
            except BaseException as exc:
                changed = False
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(exc, (sqlite3.Error, OSError)) and not isinstance(exc, FileNotFoundError):
                    raise database.explain(exc, self.db_path, "writing") from None
                raise
            finally:
                tx.depth = 0
        finally:
            lock.release()
        if changed:
            Notifier.for_path(str(self.db_path)).committed()

    batch = locked  # the directory store's name for a long run of writes; now the same transaction

    def _finish(self, conn: sqlite3.Connection, tx: _Tx) -> None:
        conn.execute("UPDATE meta SET value=? WHERE key='revision'", (str(tx.revision),))
        if tx.revision // COMPACT_EVERY != tx.start // COMPACT_EVERY and tx.revision > KEEP_CHANGES:
            floor = tx.revision - KEEP_CHANGES
            conn.execute("DELETE FROM changes WHERE rv <= ?", (floor,))
            conn.execute("UPDATE meta SET value=? WHERE key='compacted'", (str(floor),))

    def create(self, resource: str, obj: dict[str, Any], *, exclusive: bool = False) -> dict[str, Any]:
        """Store a new object (ConflictError when its name is taken). A name from
        metadata.generateName gets kube-apiserver's five random characters. `exclusive`: refuse
        (ConflictError) a claim whose allocation holds a device another claim holds
        (`indexes.allocation_entries`), as the schedulers write."""
        obj = _own_metadata(obj)
        meta = obj["metadata"]
        generated = not meta.get("name")
        if generated:
            prefix = meta.get("generateName")
            if not prefix:
                raise InputError(f"local store: {resource} object has neither metadata.name nor generateName")
            meta["name"] = generated_name(str(prefix))
        with self.locked():
            conn = self._db.connection(create=True)
            assert conn is not None
            for _ in range(10 if generated else 1):
                key = self._key(resource, meta.get("namespace"), meta["name"])
                if conn.execute("SELECT 1 FROM objects WHERE resource=? AND namespace=? AND name=?", key).fetchone() is None:
                    break
                if not generated:
                    raise ConflictError(f"{resource} {meta['name']} already exists in local store")
                meta["name"] = generated_name(str(meta["generateName"]))
            else:
                raise ConflictError(f"{resource}: no free name for generateName {meta['generateName']!r} after 10 tries")
            meta["uid"] = meta.get("uid") or str(uuid.uuid4())
            meta["creationTimestamp"] = now_timestamp()
            meta.setdefault("generation", 1)
            meta["resourceVersion"] = str(self._next_revision())
            self._put(conn, resource, key, None, obj, ADDED, exclusive)
        return obj

    def update(self, resource: str, obj: dict[str, Any], lock_timeout_s: float | None = LOCK_WAIT_S, *,
               exclusive: bool = False) -> dict[str, Any]:
        """Replace an object. A set metadata.resourceVersion must match the stored one.
        `lock_timeout_s`: see `locked`; `exclusive`: see `create`."""
        obj = _own_metadata(obj)
        meta = obj["metadata"]
        with self.locked(lock_timeout_s):
            key = self._key(resource, meta.get("namespace"), meta.get("name", ""))
            conn = self._db.connection(create=True)
            assert conn is not None
            row = conn.execute("SELECT id, rv, crc, value FROM objects WHERE resource=? AND namespace=? AND name=?",
                               key).fetchone()
            if row is None:
                raise self._missing(resource, meta.get("namespace"), meta.get("name", ""))
            current = shape.decode(resource, meta.get("namespace"), key[2], row[2], row[3], self.db_path)
            cur_meta = current["metadata"]
            wanted = meta.get("resourceVersion")
            if wanted and str(wanted) != str(cur_meta.get("resourceVersion")):
                raise ConflictError(
                    f"{resource} {meta['name']}: resourceVersion {wanted} is stale "
                    f"(stored {cur_meta.get('resourceVersion')})"
                )
            meta["uid"] = cur_meta.get("uid")
            meta["creationTimestamp"] = cur_meta.get("creationTimestamp")
            if _without_status(obj) != _without_status(current):
                meta["generation"] = int(cur_meta.get("generation", 1)) + 1
            else:
                meta["generation"] = cur_meta.get("generation", 1)
            meta["resourceVersion"] = str(self._next_revision())
            self._put(conn, resource, key, row[0], obj, MODIFIED, exclusive)
        return obj

    def delete(self, resource: str, namespace: str | None, name: str, resource_version: str | None = None,
               *, uid: str | None = None) -> dict[str, Any]:
        """Remove an object (preconditions: its resourceVersion and uid when given); returns its
        apiVersion, kind and metadata. An object that cannot be read can still be deleted (without
        preconditions)."""
        with self.locked():
            key = self._key(resource, namespace, name)
            conn = self._db.connection(create=True)
            assert conn is not None
            row = conn.execute("SELECT id, rv, crc, value FROM objects WHERE resource=? AND namespace=? AND name=?",
                               key).fetchone()
            if row is None:
                raise self._missing(resource, namespace, name)
            try:  # apiVersion, kind and metadata are all a deletion needs: the rest is not parsed
                current = shape.head(resource, namespace, name, row[2], row[3], self.db_path)
            except InputError:
                if resource_version or uid:
                    raise
                current = {"metadata": {"name": name, **({"namespace": namespace} if namespace else {})}}
            cur_meta = current.get("metadata") or {}
            if resource_version and str(resource_version) != str(cur_meta.get("resourceVersion")):
                raise ConflictError(f"{resource} {name}: resourceVersion {resource_version} is stale")
            if uid and uid != cur_meta.get("uid"):
                raise ConflictError(f"{resource} {name}: uid precondition failed (stored {cur_meta.get('uid')})")
            revision = self._next_revision()
            conn.execute("DELETE FROM objects WHERE id=?", (row[0],))
            conn.execute("DELETE FROM refs WHERE object=?", (row[0],))
            conn.execute("DELETE FROM allocations WHERE object=?", (row[0],))
            tomb = {k: current[k] for k in ("apiVersion", "kind") if k in current}
            tomb["metadata"] = {k: v for k, v in cur_meta.items() if k != "managedFields"}
            conn.execute("INSERT INTO changes(rv, type, resource, namespace, name, meta) VALUES (?,?,?,?,?,?)",
                         (revision, DELETED, *key, json_text(tomb)))
        return current

    def restore(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store `obj` as it is (its uid, creationTimestamp and generation kept; a new
        resourceVersion), replacing whatever is stored under its key: for imports and for undoing
        a write, never for user input."""
        obj = _own_metadata(obj)
        meta = obj["metadata"]
        with self.locked():
            key = self._key(resource, meta.get("namespace"), meta.get("name", ""))
            conn = self._db.connection(create=True)
            assert conn is not None
            row = conn.execute("SELECT id FROM objects WHERE resource=? AND namespace=? AND name=?", key).fetchone()
            meta["uid"] = meta.get("uid") or str(uuid.uuid4())
            meta.setdefault("creationTimestamp", now_timestamp())
            meta.setdefault("generation", 1)
            meta["resourceVersion"] = str(self._next_revision())
            self._put(conn, resource, key, row[0] if row else None, obj, MODIFIED if row else ADDED, False)
        return obj

    def raise_revision(self, floor: int) -> None:
        """Make the next revision larger than `floor` (an imported store's old counter: a client
        holding one of its resourceVersions must never see it reused)."""
        with self.locked():
            tx = self._tx()
            tx.revision = max(tx.revision, int(floor))

    def _put(self, conn: sqlite3.Connection, resource: str, key: tuple[str, str, str], row_id: int | None,
             obj: dict[str, Any], change: str, exclusive: bool) -> None:
        text = json_text(obj)
        if len(text) > MAX_OBJECT_BYTES // 4 and len(text.encode()) > MAX_OBJECT_BYTES:
            where = f"{key[1]}/{key[2]}" if key[1] else key[2]
            raise InputError(f"{resource} {where}: the object is {len(text.encode()):,} bytes of JSON, more than the "
                             f"{MAX_OBJECT_BYTES:,} bytes (1.5 MiB) kube-apiserver stores per object (etcd's "
                             "--max-request-bytes); nothing was written")
        revision = int(obj["metadata"]["resourceVersion"])
        crc = zlib.crc32(text.encode())
        uid = obj["metadata"].get("uid")
        if row_id is None:
            row_id = conn.execute("INSERT INTO objects(resource, namespace, name, rv, uid, crc, value) "
                                  "VALUES (?,?,?,?,?,?,?)", (*key, revision, uid, crc, text)).lastrowid
        else:
            conn.execute("UPDATE objects SET rv=?, uid=?, crc=?, value=? WHERE id=?", (revision, uid, crc, text, row_id))
            conn.execute("DELETE FROM refs WHERE object=?", (row_id,))
        conn.executemany("INSERT INTO refs(object, key, value) VALUES (?,?,?)",
                         [(row_id, k, v) for k, v in indexes.entries(resource, obj)])
        if resource == "resourceclaims":
            self._index_allocation(conn, row_id, key, obj, revision, exclusive)
        conn.execute("INSERT INTO changes(rv, type, resource, namespace, name, meta) VALUES (?,?,?,?,?,NULL)",
                     (revision, change, *key))


def _own_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj` whose top level and metadata the store may change (nested values shared)."""
    meta = obj.get("metadata")
    return {**obj, "metadata": dict(meta) if isinstance(meta, Mapping) else {}}


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "generation", "managedFields")}
    return {"body": body, "meta": meta}
