"""Test helpers that reach under the local store's API: plant rows and files as a hostile or careless
hand would (docs/store.md documents the table these write), and read raw rows back."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

DB = "store.db"


def connect(root: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(Path(root) / DB), isolation_level=None, timeout=30)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def plant_row(root: Path, resource: str, namespace: str | None, name: str, value: Any) -> None:
    """Store `value` (text, bytes, a number, None) as the row of that key, as an edit with the sqlite3
    shell would: no CRC, no index entries, no change-log entry."""
    conn = connect(root)
    try:
        ns = namespace or ""
        cur = conn.execute("UPDATE objects SET value=?, crc=NULL WHERE resource=? AND namespace=? AND name=?",
                           (value, resource, ns, name))
        if cur.rowcount == 0:
            conn.execute("INSERT INTO objects(resource, namespace, name, rv, uid, crc, value) VALUES (?,?,?,?,?,NULL,?)",
                         (resource, ns, name, 0, None, value))
    finally:
        conn.close()


def raw_row(root: Path, resource: str, namespace: str | None, name: str) -> tuple | None:
    conn = connect(root)
    try:
        return conn.execute("SELECT rv, uid, crc, value FROM objects WHERE resource=? AND namespace=? AND name=?",
                            (resource, namespace or "", name)).fetchone()
    finally:
        conn.close()


def legacy_path(root: Path, resource: str, namespace: str | None, name: str) -> Path:
    """Where the directory layout (imported when a store is opened) keeps an object."""
    return Path(root) / resource / (namespace or "_cluster") / f"{name}.yaml"


def plant_file(root: Path, resource: str, namespace: str | None, name: str, data: bytes | str) -> Path:
    path = legacy_path(root, resource, namespace, name)
    os.makedirs(path.parent, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path
