"""What every part of the local object store stands on: its directory, its database, this thread's
transaction, and how a key is checked and a set of objects is selected.

driver.store.objectstore assembles the store from parts that each fit in one reading: this base,
the reads (driver.store.reads), the allocation index (driver.store.allocations), the watch
(driver.store.watch) and the writes (driver.store.objectstore itself).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from driver.errors import InputError, NotFoundError
from driver.store import database

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_RESOURCE_RE = re.compile(r"^[a-z0-9]+$")
CHUNK = 200  # objects fetched per query when streaming

Index = Mapping[str, "str | Collection[str] | None"]


# Index entries counted per condition to tell which drives a lookup: enough to tell a node's few
# slices from a driver's thousands, cheap enough to count on every lookup.
_PROBE = 256


def _check_segment(value: Any, what: str, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value) or value in (".", ".."):
        raise InputError(f"local store: invalid {what} {value!r}")
    return value


class _Tx:
    """This thread's open transaction: nesting depth, the revision counter, what it touched."""

    def __init__(self) -> None:
        self.depth = 0
        self.revision = 0
        self.start = 0
        self.reading = False  # inside snapshot()


class StoreBase:
    """The store's directory and database, and this thread's transaction."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._db = database.Database(self.root)
        self._state = threading.local()
        self._legacy_checked = False
        self._legacy_lock = threading.Lock()

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

    def _revision(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM meta WHERE key='revision'").fetchone()
        return int(row[0]) if row else 0

    def _next_revision(self) -> int:
        tx = self._tx()
        tx.revision += 1
        return tx.revision

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

    def _scope(self, resource: str, namespace: str | None, all_namespaces: bool) -> tuple[str, list[Any]]:
        _check_segment(resource, "resource", _RESOURCE_RE)
        if all_namespaces:
            return "resource=?", [resource]
        ns = "" if namespace is None else _check_segment(namespace, "namespace", _NAME_RE)
        return "resource=? AND namespace=?", [resource, ns]

    def _ids(self, resource: str, namespace: str | None, all_namespaces: bool,
             index: Mapping[str, str | Collection[str] | None] | None) -> list[int]:
        """Ids of the objects of `resource` (in `namespace`, or every one) whose index entries match
        `index`, in (namespace, name) order.

        With index conditions the lookup starts from the index, not from the kind: the condition
        with the fewest entries (counted up to _PROBE each) drives the query through `refs_lookup`,
        and every other is checked per object through `refs_object`. Left to plan it alone (it has
        no statistics), SQLite walked every object of the kind and built each condition's whole list
        (a driver's every slice) on every call: a node's slices in a 5,000-node store cost 25 ms
        instead of 0.03 ms, and a fleet pass paid that once per node."""
        where, params = self._scope(resource, namespace, all_namespaces)
        conds: list[tuple[str, list[Any]]] = []  # (condition on refs alias "r", its arguments)
        for key, value in (index or {}).items():
            if value is None:
                conds.append(("r.key=?", [key]))
            elif isinstance(value, str):
                conds.append(("r.key=? AND r.value=?", [key, value]))
            else:
                values = list(value)
                if not values:
                    return []
                conds.append((f"r.key=? AND r.value IN ({','.join('?' * len(values))})", [key, *values]))
        conn = self._conn(write=False)
        if conn is None:
            return []
        try:
            if len(conds) > 1:
                conds.sort(key=lambda c: conn.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM refs r WHERE {c[0]} LIMIT {_PROBE})", c[1]).fetchone()[0])
            source = "objects"
            if conds:
                # CROSS JOIN keeps SQLite's table order: the index entries first, then their objects.
                first, first_args = conds[0]
                source = f"refs r CROSS JOIN objects ON objects.id=r.object AND {first}"
                params = first_args + params
                for i, (cond, args) in enumerate(conds[1:], 1):
                    where += f" AND EXISTS (SELECT 1 FROM refs r{i} WHERE r{i}.object=objects.id AND " \
                             f"{cond.replace('r.', f'r{i}.')})"
                    params += args
            # DISTINCT: an object may have two entries of one key (two owners). refs has no
            # resource, namespace or name column, so the scope's conditions need no table name.
            sql = f"SELECT {'DISTINCT ' if conds else ''}objects.id FROM {source} WHERE {where} ORDER BY namespace, name"
            return [r[0] for r in conn.execute(sql, params)]
        except sqlite3.Error as exc:
            raise database.explain(exc, self.db_path, f"listing {resource}") from None
