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

Reads cost what they return: `get` is one row, `find` uses the secondary indexes
(driver.store.indexes: labels, owners, node, phase, reservedFor, events' involved object),
`iter` streams (keys first, then objects in chunks), `names`/`keys` read no object at all.
A watch (`changes`, `watch`; driver.store.watch) follows the change log by revision.

Writes copy the object's top level and metadata (the only part the store changes); nested values
are shared with the caller's object, which must not change them afterwards.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import re
import secrets
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from driver.errors import ConflictError, InputError, NotFoundError
from driver.store import database, indexes, shape
from driver.store.codec import json_text
from driver.store.watch import (BOOKMARK, BOOKMARK_S, COMPACT_EVERY, DELETED, KEEP_CHANGES, MODIFIED, POLL_S, ADDED,
                                Change, Expired, Notifier)
from driver.store.writelock import WriterLock

log = logging.getLogger("fake-dra.store")

CLUSTER_SCOPE = "_cluster"  # the namespace directory of cluster-scoped objects in exports and old stores
LOCK_WAIT_S = 10.0  # how long a writer waits for another writer by default
MAX_OBJECT_BYTES = shape.MAX_OBJECT_BYTES
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_RESOURCE_RE = re.compile(r"^[a-z0-9]+$")
# kube-apiserver's generateName suffix: 5 characters of k8s.io/apimachinery/pkg/util/rand's alphabet
# (no vowels, no 0/1/3, so that no word or look-alike is ever spelled).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_CHUNK = 200  # objects fetched per query when streaming


def _check_segment(value: Any, what: str, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value) or value in (".", ".."):
        raise InputError(f"local store: invalid {what} {value!r}")
    return value


def generated_name(prefix: str) -> str:
    """`prefix` + 5 random characters, as kube-apiserver names an object from its generateName."""
    return prefix + "".join(secrets.choice(NAME_ALPHABET) for _ in range(5))


def now_timestamp() -> str:
    """Now as the API server writes timestamps (RFC 3339, UTC, whole seconds)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Tx:
    """This thread's open transaction: nesting depth, the revision counter, what it touched."""

    def __init__(self) -> None:
        self.depth = 0
        self.revision = 0
        self.start = 0
        self.reading = False  # inside snapshot()


class ObjectStore:
    """CRUD, indexes and watch over one store directory. `namespace=None` means cluster-scoped."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._db = database.Database(self.root)
        self._state = threading.local()
        self._legacy_checked = False
        self._legacy_lock = threading.Lock()

    # -- plumbing --------------------------------------------------------------------------

    @property
    def db_path(self) -> Path:
        return self._db.path

    def _tx(self) -> _Tx:
        tx = getattr(self._state, "tx", None)
        if tx is None or getattr(self._state, "pid", None) != os.getpid():
            tx = self._state.tx = _Tx()
            self._state.pid = os.getpid()
        return tx

    def _conn(self, *, write: bool) -> sqlite3.Connection | None:
        if not self._legacy_checked:
            self._import_legacy()
        return self._db.connection(create=write)

    def _import_legacy(self) -> None:
        with self._legacy_lock:
            if self._legacy_checked:
                return
            self._legacy_checked = True
            from driver.store import legacy  # import here: legacy uses this module's writer

            if legacy.has_layout(self.root):
                legacy.import_layout(self)

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        self._db.close()

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

    def _revision(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM meta WHERE key='revision'").fetchone()
        return int(row[0]) if row else 0

    def _finish(self, conn: sqlite3.Connection, tx: _Tx) -> None:
        conn.execute("UPDATE meta SET value=? WHERE key='revision'", (str(tx.revision),))
        if tx.revision // COMPACT_EVERY != tx.start // COMPACT_EVERY and tx.revision > KEEP_CHANGES:
            floor = tx.revision - KEEP_CHANGES
            conn.execute("DELETE FROM changes WHERE rv <= ?", (floor,))
            conn.execute("UPDATE meta SET value=? WHERE key='compacted'", (str(floor),))

    def _next_revision(self) -> int:
        tx = self._tx()
        tx.revision += 1
        return tx.revision

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[int]:
        """A consistent view for many reads (a list and the revision to watch from): yields the
        store's revision; every read inside sees the store as of that revision."""
        tx = self._tx()
        conn = self._conn(write=False)
        if conn is None or tx.depth or tx.reading:
            yield self._revision(conn) if conn is not None else 0
            return
        conn.execute("BEGIN")
        tx.reading = True
        try:
            yield self._revision(conn)
        finally:
            tx.reading = False
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")

    def current_resource_version(self) -> str:
        conn = self._conn(write=False)
        return str(self._revision(conn)) if conn is not None else "0"

    # -- reads -----------------------------------------------------------------------------

    def _key(self, resource: str, namespace: str | None, name: str) -> tuple[str, str, str]:
        _check_segment(resource, "resource", _RESOURCE_RE)
        ns = "" if namespace is None else _check_segment(namespace, "namespace", _NAME_RE)
        return resource, ns, _check_segment(name, "name", _NAME_RE)

    def _row(self, resource: str, namespace: str | None, name: str) -> tuple | None:
        key = self._key(resource, namespace, name)
        conn = self._conn(write=False)
        if conn is None:
            return None
        try:
            return conn.execute("SELECT id, rv, crc, value FROM objects WHERE resource=? AND namespace=? AND name=?",
                                key).fetchone()
        except sqlite3.Error as exc:
            raise database.explain(exc, self.db_path, f"reading {resource} {name}") from None

    def _missing(self, resource: str, namespace: str | None, name: str) -> NotFoundError:
        where = f"{namespace}/{name}" if namespace else name
        return NotFoundError(f"{resource} {where} not found in local store {self.root}")

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        row = self._row(resource, namespace, name)
        if row is None:
            raise self._missing(resource, namespace, name)
        return shape.decode(resource, namespace, name, row[2], row[3], self.db_path)

    def exists(self, resource: str, namespace: str | None, name: str) -> bool:
        """Whether a row is stored under that key, readable or not."""
        return self._row(resource, namespace, name) is not None

    def get_text(self, resource: str, namespace: str | None, name: str) -> str | None:
        """The stored JSON of one object, unparsed (None when absent): for callers that can tell an
        unchanged object by its bytes (driver.fleet) before paying for a parse."""
        row = self._row(resource, namespace, name)
        return row[3] if row is not None and isinstance(row[3], str) else None

    def _scope(self, resource: str, namespace: str | None, all_namespaces: bool) -> tuple[str, list[Any]]:
        _check_segment(resource, "resource", _RESOURCE_RE)
        if all_namespaces:
            return "resource=?", [resource]
        ns = "" if namespace is None else _check_segment(namespace, "namespace", _NAME_RE)
        return "resource=? AND namespace=?", [resource, ns]

    def _ids(self, resource: str, namespace: str | None, all_namespaces: bool,
             index: Mapping[str, str | Collection[str] | None] | None) -> list[int]:
        where, params = self._scope(resource, namespace, all_namespaces)
        for key, value in (index or {}).items():
            if value is None:
                where += " AND id IN (SELECT object FROM refs WHERE key=?)"
                params.append(key)
            elif isinstance(value, str):
                where += " AND id IN (SELECT object FROM refs WHERE key=? AND value=?)"
                params += [key, value]
            else:
                values = list(value)
                where += f" AND id IN (SELECT object FROM refs WHERE key=? AND value IN ({','.join('?' * len(values))}))"
                params += [key, *values]
        conn = self._conn(write=False)
        if conn is None:
            return []
        try:
            return [r[0] for r in conn.execute(f"SELECT id FROM objects WHERE {where} ORDER BY namespace, name", params)]
        except sqlite3.Error as exc:
            raise database.explain(exc, self.db_path, f"listing {resource}") from None

    def iter(self, resource: str, namespace: str | None = None, all_namespaces: bool = False, *,
             index: Mapping[str, str | Collection[str] | None] | None = None) -> Iterator[dict[str, Any]]:
        """The objects of one namespace (or cluster scope, or every namespace), in namespace and
        name order, read in chunks: memory holds one chunk, not the kind. `index` narrows them by
        index entries (`{"node": "n1"}`, `{"label/app": "x"}`; a collection: any of its values;
        None: the entry exists). An unreadable object is left out with a warning naming it."""
        ids = self._ids(resource, namespace, all_namespaces, index)
        conn = self._conn(write=False)
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            assert conn is not None
            try:
                found = {r[0]: r for r in conn.execute(
                    f"SELECT id, namespace, name, crc, value FROM objects WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk)}
            except sqlite3.Error as exc:
                raise database.explain(exc, self.db_path, f"listing {resource}") from None
            for i in chunk:
                row = found.get(i)
                if row is None:  # deleted since the keys were read
                    continue
                try:
                    yield shape.decode(resource, row[1] or None, row[2], row[3], row[4], self.db_path)
                except InputError as exc:
                    log.warning("leaving out an unreadable object: %s", exc)

    def list(self, resource: str, namespace: str | None = None, all_namespaces: bool = False, *,
             index: Mapping[str, str | Collection[str] | None] | None = None) -> list[dict[str, Any]]:
        """`iter` as a list (for callers that need every object at once)."""
        with _collector_paused():
            return list(self.iter(resource, namespace, all_namespaces, index=index))

    def find(self, resource: str, key: str, value: str | Collection[str] | None, *,
             namespace: str | None = None) -> list[dict[str, Any]]:
        """Objects of `resource` (every namespace, or `namespace`) whose index entry `key` has
        `value` (driver.store.indexes)."""
        return self.list(resource, namespace, all_namespaces=namespace is None, index={key: value})

    def keys(self, resource: str, namespace: str | None = None, all_namespaces: bool = False, *,
             index: Mapping[str, str | Collection[str] | None] | None = None) -> list[tuple[str | None, str]]:
        """(namespace or None, name) of the objects `iter` would give, reading no object."""
        ids = self._ids(resource, namespace, all_namespaces, index)
        conn = self._conn(write=False)
        out: list[tuple[str | None, str]] = []
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            assert conn is not None
            found = {r[0]: (r[1] or None, r[2]) for r in conn.execute(
                f"SELECT id, namespace, name FROM objects WHERE id IN ({','.join('?' * len(chunk))})", chunk)}
            out.extend(found[i] for i in chunk if i in found)
        return out

    def versions(self, resource: str, namespace: str | None = None, all_namespaces: bool = False, *,
                 index: Mapping[str, str | Collection[str] | None] | None = None) -> list[tuple[str | None, str, int]]:
        """(namespace or None, name, revision) of the objects `iter` would give, reading no object:
        what a cache compares to tell whether anything changed."""
        ids = self._ids(resource, namespace, all_namespaces, index)
        conn = self._conn(write=False)
        out: list[tuple[str | None, str, int]] = []
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            assert conn is not None
            found = {r[0]: (r[1] or None, r[2], r[3]) for r in conn.execute(
                f"SELECT id, namespace, name, rv FROM objects WHERE id IN ({','.join('?' * len(chunk))})", chunk)}
            out.extend(found[i] for i in chunk if i in found)
        return out

    def heads(self, resource: str, namespace: str | None = None, all_namespaces: bool = False, *,
              index: Mapping[str, str | Collection[str] | None] | None = None) -> list[dict[str, Any]]:
        """apiVersion, kind and metadata of the objects `iter` would give, the rest left unparsed
        (`get -o name`, owner references, deletions of a node's slices)."""
        ids = self._ids(resource, namespace, all_namespaces, index)
        conn = self._conn(write=False)
        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            assert conn is not None
            found = {r[0]: r for r in conn.execute(
                f"SELECT id, namespace, name, crc, value FROM objects WHERE id IN ({','.join('?' * len(chunk))})", chunk)}
            for i in chunk:
                if i in found:
                    row = found[i]
                    try:
                        out.append(shape.head(resource, row[1] or None, row[2], row[3], row[4], self.db_path))
                    except InputError as exc:
                        log.warning("leaving out an unreadable object: %s", exc)
        return out

    def names(self, resource: str, namespace: str | None = None) -> list[str]:
        """Names of the objects of one namespace (or cluster scope), reading no object."""
        where, params = self._scope(resource, namespace, False)
        conn = self._conn(write=False)
        if conn is None:
            return []
        return [r[0] for r in conn.execute(f"SELECT name FROM objects WHERE {where} ORDER BY name", params)]

    def count(self, resource: str, namespace: str | None = None, all_namespaces: bool = True) -> int:
        where, params = self._scope(resource, namespace, all_namespaces)
        conn = self._conn(write=False)
        return conn.execute(f"SELECT count(*) FROM objects WHERE {where}", params).fetchone()[0] if conn else 0

    def dependents(self, owner_uid: str) -> list[tuple[str, str | None, str]]:
        """(resource, namespace or None, name) of every object with an ownerReference to `owner_uid`."""
        conn = self._conn(write=False)
        if conn is None:
            return []
        return [(r[0], r[1] or None, r[2]) for r in conn.execute(
            "SELECT o.resource, o.namespace, o.name FROM refs r JOIN objects o ON o.id = r.object "
            "WHERE r.key='owner' AND r.value=? ORDER BY o.resource, o.namespace, o.name", (owner_uid,))]

    def index_values(self, resource: str, key: str) -> list[str]:
        """The distinct values of one index entry over a resource (`("resourceslices", "node")`:
        every node some slice names), reading no object."""
        conn = self._conn(write=False)
        return [r[0] for r in conn.execute(
            "SELECT DISTINCT r.value FROM refs r JOIN objects o ON o.id = r.object WHERE o.resource=? AND r.key=? "
            "ORDER BY r.value", (resource, key))] if conn else []

    def resources(self) -> list[str]:
        """The resources that have at least one object."""
        conn = self._conn(write=False)
        return [r[0] for r in conn.execute("SELECT DISTINCT resource FROM objects ORDER BY resource")] if conn else []

    # -- writes ----------------------------------------------------------------------------

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

    def _index_allocation(self, conn: sqlite3.Connection, row_id: int, key: tuple[str, str, str],
                          obj: Mapping[str, Any], revision: int, exclusive: bool) -> None:
        new = indexes.allocation_entries(obj)
        old = [(d, int(h)) for d, h in conn.execute("SELECT device, shared FROM allocations WHERE object=?", (row_id,))]
        if sorted(new) == sorted(old):
            return
        if exclusive and new:
            mine = dict(new)
            for device, theirs, ns, name in conn.execute(
                    "SELECT a.device, a.shared, o.namespace, o.name FROM allocations a JOIN objects o ON o.id = a.object "
                    f"WHERE a.object != ? AND a.device IN ({','.join('?' * len(mine))})", (row_id, *mine)):
                if indexes.conflicts(mine[device], int(theirs)):
                    raise ConflictError(
                        f"resourceclaim {key[1]}/{key[2]}: device {device} is already allocated to resourceclaim "
                        f"{ns}/{name} (allocated meanwhile by another writer); nothing was written")
        conn.execute("DELETE FROM allocations WHERE object=?", (row_id,))
        conn.executemany("INSERT INTO allocations(device, object, shared) VALUES (?,?,?)",
                         [(d, row_id, h) for d, h in new])
        held_before = {d for d, _ in old}
        added = {indexes.pool_of(d) for d, _ in new if d not in held_before}
        conn.executemany("INSERT INTO pools(pool, rv) VALUES (?, ?) ON CONFLICT(pool) DO UPDATE SET rv=excluded.rv",
                         [(p, revision) for p in sorted(added)])

    def allocated_devices(self, driver: str, pool: str) -> set[str]:
        """Names of the devices of (driver, pool) that allocated claims hold (adminAccess included),
        from the allocation index: no claim is read."""
        conn = self._conn(write=False)
        if conn is None:
            return set()
        prefix = f"{driver}/{pool}/"
        return {d[len(prefix):] for (d,) in conn.execute(
            "SELECT DISTINCT device FROM allocations WHERE device >= ? AND device < ?", (prefix, prefix[:-1] + "0"))
            if "/" not in d[len(prefix):]}

    def claims_in_pools(self, pools: Collection[str]) -> list[dict[str, Any]]:
        """The claims whose allocation holds a device of one of `pools` (`driver/pool`), from the
        allocation index: what `describe node` needs, without reading every claim."""
        conn = self._conn(write=False)
        wanted = sorted(set(pools))
        if conn is None or not wanted:
            return []
        ids: set[int] = set()
        for pool in wanted:
            prefix = f"{pool}/"
            ids.update(r[0] for r in conn.execute(
                "SELECT object FROM allocations WHERE device >= ? AND device < ?", (prefix, prefix[:-1] + "0")))
        out = []
        for row in conn.execute(f"SELECT namespace, name, crc, value FROM objects WHERE id IN "
                                f"({','.join('?' * len(ids))}) ORDER BY namespace, name", sorted(ids)):
            try:
                out.append(shape.decode("resourceclaims", row[0] or None, row[1], row[2], row[3], self.db_path))
            except InputError as exc:
                log.warning("leaving out an unreadable object: %s", exc)
        return out

    # -- allocation guard ------------------------------------------------------------------

    def pool_revisions(self) -> dict[str, int]:
        """The revision of the last allocation into each pool (`driver/pool`): what a scheduler
        read its claims at, to check with `check_pools` before it writes."""
        conn = self._conn(write=False)
        return {r[0]: int(r[1]) for r in conn.execute("SELECT pool, rv FROM pools")} if conn else {}

    def check_pools(self, known: Mapping[str, int], pools: Collection[str]) -> None:
        """ConflictError when a claim was allocated from one of `pools` after the revision `known`
        says (0 when absent): another writer allocated there since this one read its claims, so
        an allocation computed from that read may over-commit the pool's counters. Call inside
        `locked()`, before the write it guards."""
        if not pools:
            return
        conn = self._db.connection(create=True)
        assert conn is not None
        wanted = sorted(set(pools))
        for pool, rv in conn.execute(f"SELECT pool, rv FROM pools WHERE pool IN ({','.join('?' * len(wanted))})", wanted):
            if int(rv) > known.get(pool, 0):
                raise ConflictError(f"pool {pool}: allocated from at revision {rv} by another writer since this one read "
                                    f"it (at {known.get(pool, 0)}); read the claims again")

    # -- watch -----------------------------------------------------------------------------

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


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a list builds objects: parsed objects hold no cycles, yet
    every few thousand new containers the collector walks all the young ones, which makes reading a
    fleet's slices (~1,000 containers per slice) three times slower."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _own_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj` whose top level and metadata the store may change (nested values shared)."""
    meta = obj.get("metadata")
    return {**obj, "metadata": dict(meta) if isinstance(meta, Mapping) else {}}


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "generation", "managedFields")}
    return {"body": body, "meta": meta}
