"""The SQLite file under the local object store: connections, schema, and what its errors mean.

Why SQLite (docs/store.md): the directory store re-read a kind's whole directory for one object
and held a fleet's slices parsed at once to delete them. Here one object is one row found by its
key, secondary indexes answer "the slices of node X" or "the dependents of UID U" without reading
anything else, a multi-object write is one transaction (all or nothing, one fsync at commit), and
readers run beside the one writer (WAL journal). The layout follows k3s' kine, which runs
kube-apiserver on SQL: a global revision that is every object's resourceVersion, and a log of
changes by revision that watches read and compaction trims.

Tables (`SCHEMA`): `objects` (one row per object: resource, namespace ('' for cluster scope),
name, revision of its last change, uid, a CRC of its JSON, the JSON), `refs` (secondary index
entries of an object: key, value), `changes` (the watch log: revision, type, key, and for a
deletion the deleted object's metadata), `allocations` (the devices allocated claims hold, for the
store-side double-booking check), `pools` (the revision of the last allocation into each pool),
`meta` (schema version, current and compacted revision).

Connections are per thread (sqlite3's rule) and per process (a forked child opens its own).
Nothing in the store directory is followed through a symbolic link: the database, its WAL and
shared-memory files and the lock file are refused when one is a link.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from driver.errors import InputError
from driver.fsutil import make_dirs

log = logging.getLogger("fake-dra.store")

DB_FILE = "store.db"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000  # a backstop only: writers serialise on the store's lock before SQLite's
FILE_MODE = 0o644  # readable by every local user of the store, writable by its owner
DIR_MODE = 0o755

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS objects(
    id INTEGER PRIMARY KEY,
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, uid TEXT, crc INTEGER, value TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS objects_key ON objects(resource, namespace, name);
CREATE TABLE IF NOT EXISTS refs(object INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS refs_lookup ON refs(key, value);
CREATE INDEX IF NOT EXISTS refs_object ON refs(object);
CREATE TABLE IF NOT EXISTS changes(
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL,
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, meta TEXT);
CREATE TABLE IF NOT EXISTS allocations(device TEXT NOT NULL, object INTEGER NOT NULL, shared INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS allocations_device ON allocations(device);
CREATE INDEX IF NOT EXISTS allocations_object ON allocations(object);
CREATE TABLE IF NOT EXISTS pools(pool TEXT PRIMARY KEY, rv INTEGER NOT NULL);
"""


def refuse_link(path: Path, what: str) -> None:
    """InputError when `path` is a symbolic link: the store never reads or writes through one (a
    link planted at store.db would have `apply` write wherever it points)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"local store: cannot inspect {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"local store {path.parent}: its {what} {path} is a symbolic link; the store never "
                         "follows links inside it (remove the link)")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"local store {path.parent}: its {what} {path} is not a regular file; remove it")


def check_files(root: Path) -> None:
    """Every file SQLite opens in the store, checked before it opens them (refuse_link)."""
    db = root / DB_FILE
    refuse_link(db, "database")
    refuse_link(db.with_name(DB_FILE + "-wal"), "write-ahead log")
    refuse_link(db.with_name(DB_FILE + "-shm"), "shared-memory file")
    refuse_link(db.with_name(DB_FILE + "-journal"), "rollback journal")


def explain(exc: BaseException, db: Path, doing: str) -> InputError:
    """A sqlite3 or OS error as the InputError a user reads: the path, what happened, and what was
    kept (a failed transaction is rolled back whole)."""
    text = str(exc)
    low = text.lower()
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "disk is full" in low or "database or disk is full" in low:
        return InputError(f"local store {db}: no space left on the device while {doing}; the transaction was "
                          "rolled back, so the store holds what it held before (free space and run it again)")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return InputError(f"local store {db}: the database is damaged or not a fake-dra store ({text}) while "
                          f"{doing}; move it aside (or `fake-dra store export` what still reads) and start afresh")
    if "readonly" in low or "read-only" in low or "permission" in low or "unable to open" in low:
        return InputError(f"local store {db}: cannot write there while {doing} ({text})")
    if "locked" in low or "busy" in low:
        return InputError(f"local store {db}: still locked by another process after {BUSY_TIMEOUT_MS // 1000} s "
                          f"while {doing} ({text})")
    return InputError(f"local store {db}: {text} while {doing}")


class Database:
    """One store's SQLite file: a connection per thread, created with the schema on first write."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / DB_FILE
        self._local = threading.local()

    def exists(self) -> bool:
        return os.path.lexists(self.path)

    def connection(self, *, create: bool) -> sqlite3.Connection | None:
        """This thread's connection; None when the database does not exist and `create` is False
        (a read of a store nobody wrote yet: empty, and nothing is created for it)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        if not create and not self.exists():
            return None
        conn = self._open()
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local.conn = None

    def _open(self) -> sqlite3.Connection:
        check_files(self.root)
        created = not self.exists()
        if created:
            try:
                make_dirs(self.root, DIR_MODE, DIR_MODE)
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
                os.fchmod(fd, FILE_MODE)
                os.close(fd)
            except OSError as exc:
                raise InputError(f"local store {self.root}: cannot create {self.path}: {exc.strerror or exc}") from None
        try:
            # isolation_level=None: transactions are the store's own BEGIN/COMMIT, never implicit.
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=True)
        except sqlite3.Error as exc:
            raise explain(exc, self.path, "opening it") from None
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log.warning("local store: SQLite kept journal mode %s (no WAL on this filesystem?)", mode)
            # FULL: a commit is durable when it returns (the WAL is fsynced at each commit).
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute("PRAGMA journal_size_limit=67108864")
            conn.execute("PRAGMA cache_size=-16384")  # 16 MiB of page cache per connection
            self._ensure_schema(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise explain(exc, self.path, "opening it") from None
        return conn

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        row = None
        with contextlib.suppress(sqlite3.OperationalError):
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None:
            try:
                version = int(row[0])
            except (TypeError, ValueError):
                raise InputError(f"local store {self.path}: its schema version {row[0]!r} is not a number; "
                                 "this is not a fake-dra store database") from None
            if version > SCHEMA_VERSION:
                raise InputError(f"local store {self.path}: written by a newer fake-dra (store schema {version}, "
                                 f"this one reads {SCHEMA_VERSION}); upgrade fake-dra or use another --store")
            return
        conn.execute("BEGIN IMMEDIATE")  # two processes creating one store: the second waits, then finds it
        try:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('revision', '0')")
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('compacted', '0')")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise


def rows(conn: sqlite3.Connection | None, sql: str, params: tuple = ()) -> Iterator[tuple]:
    """The rows of a query, or none when there is no database yet."""
    if conn is None:
        return iter(())
    return conn.execute(sql, params)
