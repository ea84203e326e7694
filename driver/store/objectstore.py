"""A directory of YAML objects with API-server-like semantics, the embedded default backend.

Layout: STORE/<resource>/<namespace>/<name>.yaml, `_cluster` for cluster-scoped objects. One object
per file, written atomically (tmp + fsync + rename); ResourceSlices are one line of JSON (a YAML
subset), everything else block YAML (driver.store.codec says why). `metadata.resourceVersion` comes
from a store-wide counter that increases on every change, and writes that carry a resourceVersion
are optimistic-concurrency checked, so the publisher and the plugin behave here as they do against
kube-apiserver. Several processes may share one store: writers serialise on an flock of
`STORE/.lock` (0600; every wait for it is bounded and names the holder, driver.flock).

Bulk writers (a fleet of 1,000 nodes is ~7,000 objects; scheduling 10,000 pods is 20,000 writes)
wrap their writes in `batch()`: one lock, the resourceVersion counter persisted once per 1,024
versions instead of per write, and durability once at the end (one syncfs(2) of the store's
filesystem, where Linux has it, instead of an fsync per file and directory: under a busy disk an
fsync costs milliseconds). Each object is still written atomically (temp file + rename), so a
process killed inside a batch leaves every object old or new, never torn, and the resourceVersion
sequence with gaps, never a reused version; only a power loss before the batch ends may leave that
batch's new objects empty, which readers report as unreadable objects.

Writes copy the object's top level and metadata (the only part the store changes); nested values
are shared with the caller's object, which must not change them afterwards.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import logging
import os
import re
import secrets
import stat
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from driver import flock
from driver.errors import ConflictError, InputError, NotFoundError
from driver.fsutil import (
    NotRegularFile, atomic_write, can_sync_filesystem, fsync_dir, make_dirs, read_regular, sync_filesystem,
)
from driver.store.codec import decode, encode

log = logging.getLogger("fake-dra.store")

CLUSTER_SCOPE = "_cluster"
RESOURCE_VERSION_BLOCK = 1024  # versions a batch reserves per write of the counter file
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_RESOURCE_RE = re.compile(r"^[a-z0-9]+$")
_SUFFIX = ".yaml"
# Hostile or broken store files must be an error for that object, never a crash or a stall:
MAX_FILE_NAME = 255  # bytes (NAME_MAX): a valid 253-character object name does not fit with ".yaml"
MAX_OBJECT_BYTES = 3 * 1024 * 1024  # twice etcd's default request limit (1.5 MiB): no real object is larger
DIR_MODE = 0o755  # whatever the umask: readable by every local user of the store, writable by its owner
FILE_MODE = 0o644
LOCK_FILE = ".lock"
LOCK_MODE = 0o600
LOCK_WAIT_S = 10.0  # how long a writer waits for another process's writer lock by default


def _check_segment(value: str, what: str, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value) or value in (".", ".."):
        raise InputError(f"local store: invalid {what} {value!r}")
    return value


class ObjectStore:
    """CRUD over a store directory. `namespace=None` means cluster-scoped."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        # Lock depth of this thread: `locked()` lets a caller (driver.store.apply) hold the store
        # across several writes; the writes it makes then must not flock the file a second time.
        self._depth = threading.local()
        # The open batch of this thread, if any (see `batch`).
        self._batch = threading.local()

    # -- paths -----------------------------------------------------------------------------

    def _dir(self, resource: str, namespace: str | None) -> Path:
        _check_segment(resource, "resource", _RESOURCE_RE)
        ns = CLUSTER_SCOPE if namespace is None else _check_segment(namespace, "namespace", _NAME_RE)
        return self.root / resource / ns

    def path_of(self, resource: str, namespace: str | None, name: str) -> Path:
        file_name = f"{_check_segment(name, 'name', _NAME_RE)}{_SUFFIX}"
        if len(file_name.encode()) > MAX_FILE_NAME:
            raise InputError(f"local store: name {name[:40]!r}... is {len(name)} characters; the store keeps "
                             f"objects in files named <name>{_SUFFIX}, so at most {MAX_FILE_NAME - len(_SUFFIX)} fit")
        return self._dir(resource, namespace) / file_name

    @contextlib.contextmanager
    def locked(self, timeout_s: float | None = LOCK_WAIT_S) -> Iterator[None]:
        """Hold the store's writer lock (re-entrant within a thread): reads and writes made inside
        see and change the store as one step, as a multi-object apply needs. InputError naming the
        holder when another process holds it for more than `timeout_s` (None: wait for ever):
        a stuck or hostile process must never hang `run`, `apply` or a kubelet call."""
        depth = getattr(self._depth, "n", 0)
        if depth:
            self._depth.n = depth + 1
            try:
                yield
            finally:
                self._depth.n = depth
            return
        fd = self._open_lock()
        try:
            self._acquire(fd, timeout_s)
            self._depth.n = 1
            try:
                yield
            finally:
                self._depth.n = 0
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _open_lock(self) -> int:
        """STORE/.lock, 0600 whatever the umask: whoever can open it can flock it and stall every
        writer of the store, so only its owner may (writing the store needs that user anyway).
        Never through a symlink, nor a FIFO or device in its place."""
        path = self.root / LOCK_FILE
        try:
            make_dirs(self.root, DIR_MODE)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, LOCK_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(f"local store {self.root}: its lock file {path} is a symbolic link; remove it") from None
            raise InputError(f"local store {self.root}: cannot write there ({exc.strerror or exc})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise InputError(f"local store {self.root}: its lock file {path} is not a regular file; remove it")
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 != LOCK_MODE:
            os.fchmod(fd, LOCK_MODE)  # a lock file from before, or made under another umask
        return fd

    def _acquire(self, fd: int, timeout_s: float | None) -> None:
        path = self.root / LOCK_FILE

        def busy(holder: str) -> None:
            log.info("waiting for the local store's writer lock", extra={"lock": str(path), "holder": holder,
                                                                          "timeout_s": timeout_s})
        if not flock.lock(fd, timeout_s, on_busy=busy):
            raise InputError(f"local store {self.root}: its writer lock {path} has been held by "
                             f"{flock.describe_holder(fd)} for more than {timeout_s:g} s; stop that process "
                             "(or remove the lock file: its holder then keeps a lock nobody waits for)")
        flock.record_holder(fd)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes as one locked step with deferred durability (module docstring). Nested
        batches join the outer one; a batch also holds the writer lock (`locked`)."""
        if getattr(self._batch, "open", None) is not None:
            yield
            return
        with self.locked():
            state = self._batch.open = _Batch(self._read_counter())
            try:
                yield
            finally:
                self._batch.open = None
                if state.files_synced_later:
                    if not sync_filesystem(self.root):
                        os.sync()  # syncfs refused (an odd filesystem): everything, then
                else:
                    for directory in sorted(state.dirs):
                        fsync_dir(directory)
                if state.last > state.first:
                    self._write_counter(state.last)

    def _read_counter(self) -> int:
        try:
            return int((self.root / ".resourceVersion").read_text().strip() or "0")
        except (FileNotFoundError, ValueError):
            return 0

    def _write_counter(self, value: int) -> None:
        atomic_write(self.root / ".resourceVersion", f"{value}\n".encode(), FILE_MODE)

    def _next_resource_version(self) -> str:
        state = getattr(self._batch, "open", None)
        if state is None:
            nxt = self._read_counter() + 1
            self._write_counter(nxt)
            return str(nxt)
        state.last += 1
        if state.last > state.reserved:
            # Persist a block ahead: a crash mid-batch must never let the next writer reuse a version.
            state.reserved = state.last + RESOURCE_VERSION_BLOCK
            self._write_counter(state.reserved)
        return str(state.last)

    def _write_file(self, path: Path, data: bytes) -> None:
        state = getattr(self._batch, "open", None)
        if state is None:
            atomic_write(path, data, FILE_MODE)
            return
        atomic_write(path, data, FILE_MODE, sync_dir=False, fsync=not state.files_synced_later)
        state.dirs.add(path.parent)

    # -- reads -----------------------------------------------------------------------------

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        path = self.path_of(resource, namespace, name)
        try:
            text = read_object_text(path)
        except FileNotFoundError:
            where = f"{namespace}/{name}" if namespace else name
            raise NotFoundError(f"{resource} {where} not found in local store {self.root}") from None
        return _load(path, text)

    def list(self, resource: str, namespace: str | None = None, all_namespaces: bool = False) -> list[dict[str, Any]]:
        """Objects of one namespace (or cluster scope), or of every namespace, sorted by path.

        A file that cannot be read or parsed is left out with a warning naming it (`get` of that
        object still fails): one hostile or broken file must not hide every other object from the
        publisher, the allocator or `fake-dra get`."""
        base = self.root / _check_segment(resource, "resource", _RESOURCE_RE)
        if all_namespaces:
            dirs = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        else:
            dirs = [self._dir(resource, namespace)]
        out = []
        with _collector_paused():
            for d in dirs:
                if not d.is_dir():
                    continue
                for path in sorted(d.glob("*.yaml")):
                    try:
                        out.append(_load(path, read_object_text(path)))
                    except FileNotFoundError:  # deleted between glob and read
                        continue
                    except InputError as exc:
                        log.warning("leaving out an unreadable object: %s", exc)
        return out

    def names(self, resource: str, namespace: str | None = None) -> list[str]:
        """Names of the objects of one namespace (or cluster scope), from the file names alone."""
        folder = self._dir(resource, namespace)
        try:
            return sorted(e.name[:-len(_SUFFIX)] for e in os.scandir(folder)
                          if e.name.endswith(_SUFFIX) and not e.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def get_text(self, resource: str, namespace: str | None, name: str) -> str | None:
        """The stored text of one object, unparsed (None when absent): for callers that can tell an
        unchanged object by its bytes (driver.fleet) before paying for a parse."""
        try:
            return read_object_text(self.path_of(resource, namespace, name))
        except FileNotFoundError:
            return None

    # -- writes ----------------------------------------------------------------------------

    def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        obj = _own_metadata(obj)
        meta = obj["metadata"]
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise InputError(f"local store: {resource} object has neither metadata.name nor generateName")
            meta["name"] = prefix + secrets.token_hex(3)[:5]
        with self.locked():
            path = self.path_of(resource, meta.get("namespace"), meta["name"])
            if path.exists():
                raise ConflictError(f"{resource} {meta['name']} already exists in local store")
            meta["uid"] = meta.get("uid") or str(uuid.uuid4())
            meta["creationTimestamp"] = now_timestamp()
            meta["resourceVersion"] = self._next_resource_version()
            meta.setdefault("generation", 1)
            make_dirs(path.parent, DIR_MODE, DIR_MODE)
            self._write_file(path, encode(resource, obj))
        return obj

    def update(self, resource: str, obj: dict[str, Any], lock_timeout_s: float | None = None) -> dict[str, Any]:
        """Replace an object. A set metadata.resourceVersion must match the stored one.
        `lock_timeout_s`: see `locked`."""
        obj = _own_metadata(obj)
        meta = obj["metadata"]
        with self.locked(lock_timeout_s):
            current = self.get(resource, meta.get("namespace"), meta.get("name", ""))
            cur_meta = current["metadata"]
            wanted = meta.get("resourceVersion")
            if wanted and wanted != cur_meta.get("resourceVersion"):
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
            meta["resourceVersion"] = self._next_resource_version()
            self._write_file(self.path_of(resource, meta.get("namespace"), meta["name"]), encode(resource, obj))
        return obj

    def delete(self, resource: str, namespace: str | None, name: str, resource_version: str | None = None) -> None:
        with self.locked():
            current = self.get(resource, namespace, name)
            if resource_version and resource_version != current["metadata"].get("resourceVersion"):
                raise ConflictError(f"{resource} {name}: resourceVersion {resource_version} is stale")
            self.path_of(resource, namespace, name).unlink()
            self._next_resource_version()

    def current_resource_version(self) -> str:
        try:
            return (self.root / ".resourceVersion").read_text().strip() or "0"
        except FileNotFoundError:
            return "0"


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a list builds objects: parsed files hold no cycles, yet
    every few thousand new containers the collector walks all the young ones, which makes reading a
    fleet's slices (~1,000 containers per slice) three times slower."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Batch:
    """Deferred work of an open batch: directories to fsync, the versions handed out and reserved."""

    def __init__(self, counter: int) -> None:
        self.first = self.last = self.reserved = counter
        self.dirs: set[Path] = set()
        self.files_synced_later = can_sync_filesystem()  # else each file is fsynced as it is written


def _own_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj` whose top level and metadata the store may change (nested values shared)."""
    return {**obj, "metadata": dict(obj.get("metadata") or {})}


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k not in ("resourceVersion", "generation", "managedFields")}
    return {"body": body, "meta": meta}


def now_timestamp() -> str:
    """Now as the API server writes timestamps (RFC 3339, UTC, whole seconds)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_object_text(path: Path) -> str:
    """The text of one store file. FileNotFoundError passes through (the object does not exist);
    any other problem (a directory, a path component that is a file, no permission, too large,
    not UTF-8, not a regular file) is an InputError naming the file.

    Opened non-blocking and checked to be a regular file before reading: a FIFO (or a symlink to
    one) would otherwise block the reading thread forever, and each such claim would hold one of
    the plugin's few state-gate slots until every prepare was refused."""
    try:
        data = read_regular(path, follow_links=True, limit=MAX_OBJECT_BYTES + 1)
    except FileNotFoundError:
        raise
    except NotRegularFile as exc:
        raise InputError(f"local store: {exc}") from None
    except OSError as exc:
        raise InputError(f"local store: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_OBJECT_BYTES:
        raise InputError(f"local store: {path} is larger than {MAX_OBJECT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"local store: {path} is not UTF-8 text (byte {exc.start})") from None


def _load(path: Path, text: str) -> dict[str, Any]:
    obj = decode(text, f"local store: {path}")
    if not isinstance(obj, dict):
        raise InputError(f"local store: {path} does not hold an object")
    return obj
