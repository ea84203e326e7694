"""Reading the local store: one object by its key, or many, streamed or through the indexes.

Reads cost what they return: `get` is one row, `find` uses the secondary indexes
(driver.store.indexes), `iter` streams (keys first, then objects in chunks), `names`/`keys`/
`versions` read no object, `heads` parses only apiVersion, kind and metadata. An object that
cannot be read is an error for that object (`get`) or left out with a warning (every list).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sqlite3
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from driver.errors import InputError
from driver.store import database, shape
from driver.store.base import CHUNK, StoreBase

log = logging.getLogger("fake-dra.store")


class Reads(StoreBase):
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

    def iter(self, resource: str, namespace: str | None = None, all_namespaces: bool = False, *,
             index: Mapping[str, str | Collection[str] | None] | None = None) -> Iterator[dict[str, Any]]:
        """The objects of one namespace (or cluster scope, or every namespace), in namespace and
        name order, read in chunks: memory holds one chunk, not the kind. `index` narrows them by
        index entries (`{"node": "n1"}`, `{"label/app": "x"}`; a collection: any of its values;
        None: the entry exists). An unreadable object is left out with a warning naming it."""
        ids = self._ids(resource, namespace, all_namespaces, index)
        conn = self._conn(write=False)
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
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
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
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
