"""The directory layout of earlier stores (and of `fake-dra store export`): read it in, write it out.

Up to this release the store was a directory of files, `STORE/<resource>/<namespace>/<name>.yaml`
(`_cluster` for cluster-scoped objects; slices as one line of JSON). A store found in that layout
is imported into the database the first time any command opens it, announced on stderr, in one
transaction; the files then move to `STORE/.imported-<time>/` (nothing is deleted, and nothing is
imported twice). Files dropped into that layout later are imported the same way, so the layout
stays a way to hand the store objects. Every file is read as the old store read it (never through
a symbolic link, never a FIFO, at most 3 MiB) and checked as a row changed outside the store is
(driver.store.shape: the strict 1.37 schema of its kind): a file that fails is left out, named in
a warning, and kept with the others. Temp files of an interrupted writer are removed.

`export_layout` writes the same layout from a store, for people who grep; `import_layout(...,
source=DIR)` reads one in (an export, or an old store elsewhere) without moving it.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from driver.errors import InputError
from driver.fsutil import TEMP_SUFFIX, NotRegularFile, atomic_write, make_dirs, read_regular, sync_filesystem
from driver.store import shape
from driver.store.codec import decode, encode
from driver.store.kinds import KINDS

if TYPE_CHECKING:
    from driver.store.objectstore import ObjectStore

log = logging.getLogger("fake-dra.store")

CLUSTER_SCOPE = "_cluster"
SUFFIX = ".yaml"
COUNTER_FILE = ".resourceVersion"
MAX_FILE_BYTES = 3 * 1024 * 1024  # what the directory store read at most
_PLURALS = {k.plural for k in KINDS}
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass
class ImportReport:
    imported: int = 0
    refused: list[str] = field(default_factory=list)  # "<path>: <why>"
    temps_removed: int = 0
    moved_to: Path | None = None


def _resource_dirs(root: Path) -> list[Path]:
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(Path(e.path) for e in entries if e.name in _PLURALS and e.is_dir(follow_symlinks=False))


def has_layout(root: Path) -> bool:
    """Whether `root` holds objects (or temp files) in the directory layout."""
    for resource_dir in _resource_dirs(root):
        for _ in _files(resource_dir):
            return True
    return False


def _files(resource_dir: Path) -> Iterator[Path]:
    for ns in sorted(os.scandir(resource_dir), key=lambda e: e.name):
        if ns.is_dir(follow_symlinks=False):
            for f in sorted(os.scandir(ns.path), key=lambda e: e.name):
                yield Path(f.path)
        elif ns.is_symlink():
            yield Path(ns.path)  # a linked namespace directory: refused, never walked through


def _read(path: Path, resource: str) -> tuple[str | None, dict[str, Any]]:
    """(namespace, object) of one file; InputError saying why it cannot be imported."""
    ns_dir = path.parent.name
    if ns_dir == resource:  # an entry of the resource directory that is not a namespace directory
        if os.path.islink(path):
            raise InputError(f"{path} is a symbolic link; the store never follows links")
        raise InputError(f"{path}: not a namespace directory")
    if not path.name.endswith(SUFFIX):
        raise InputError(f"{path}: not a {SUFFIX} file")
    name = path.name[:-len(SUFFIX)]
    if not _NAME.fullmatch(name):
        raise InputError(f"{path}: {name!r} is not an object name")
    namespace = None if ns_dir == CLUSTER_SCOPE else ns_dir
    try:
        data = read_regular(path, follow_links=False, limit=MAX_FILE_BYTES + 1)
    except NotRegularFile as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    obj = decode(text, str(path))
    if not isinstance(obj, dict):
        raise InputError(f"{path} does not hold an object")
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("name") is None:
        meta["name"] = name
    if isinstance(meta, dict) and namespace and meta.get("namespace") is None:
        meta["namespace"] = namespace
    shape.check(resource, namespace, name, obj, f"{path}")
    return namespace, obj


def import_layout(store: ObjectStore, source: Path | None = None) -> ImportReport:
    """Import the directory layout at `source` (default: the store's own directory, whose files
    then move aside) into `store`, in one transaction; see the module docstring."""
    own = source is None
    root = store.root if own else Path(source)
    report = ImportReport()
    if own:
        log.warning("local store %s: importing the objects of its directory layout into %s (once; the files "
                    "move to %s/.imported-<time>/)", root, store.db_path, root)
    counter = _old_counter(root)
    with store.locked(timeout_s=60.0):
        store.raise_revision(counter)
        for resource_dir in _resource_dirs(root):
            resource = resource_dir.name
            for path in _files(resource_dir):
                if path.name.startswith(".") and path.name.endswith(TEMP_SUFFIX):
                    if own:
                        path.unlink(missing_ok=True)
                        report.temps_removed += 1
                    continue
                try:
                    namespace, obj = _read(path, resource)
                    store.restore(resource, obj)
                    report.imported += 1
                except InputError as exc:
                    report.refused.append(str(exc))
    if own:
        report.moved_to = _move_aside(root)
        # Name refused files where they are now, so the warning points at something that exists.
        report.refused = [why.replace(f"{root}/", f"{report.moved_to}/", 1) for why in report.refused]
    for why in report.refused:
        log.warning("local store %s: not imported: %s", root, why)
    if own:  # an explicit `fake-dra store import` says it itself
        log.warning("local store %s: imported %d objects; the files are now in %s", root, report.imported,
                    report.moved_to)
    return report


def _old_counter(root: Path) -> int:
    try:
        st = os.lstat(root / COUNTER_FILE)
        if not stat.S_ISREG(st.st_mode):
            return 0
        return int((root / COUNTER_FILE).read_text().strip() or "0")
    except (OSError, ValueError):
        return 0


def _move_aside(root: Path) -> Path:
    dest = root / f".imported-{time.strftime('%Y%m%dT%H%M%S')}"
    n = 1
    while os.path.lexists(dest):
        n += 1
        dest = root / f".imported-{time.strftime('%Y%m%dT%H%M%S')}-{n}"
    os.mkdir(dest, 0o700)
    for resource_dir in _resource_dirs(root):
        os.rename(resource_dir, dest / resource_dir.name)
    if os.path.lexists(root / COUNTER_FILE):
        os.rename(root / COUNTER_FILE, dest / COUNTER_FILE)
    return dest


def export_layout(store: ObjectStore, dest: Path) -> int:
    """Write every readable object of `store` under `dest` in the directory layout (slices as
    JSON lines, the rest as YAML); `dest` must be absent or empty. The number written."""
    dest = Path(dest)
    if os.path.lexists(dest) and (not dest.is_dir() or any(os.scandir(dest))):
        raise InputError(f"store export: {dest} exists and is not an empty directory")
    make_dirs(dest, 0o755)
    written = 0
    for resource in store.resources():
        for obj in store.iter(resource, all_namespaces=True):
            meta = obj["metadata"]
            folder = dest / resource / (meta.get("namespace") or CLUSTER_SCOPE)
            make_dirs(folder, 0o755)
            atomic_write(folder / f"{meta['name']}{SUFFIX}", encode(resource, obj), 0o644, sync_dir=False, fsync=False)
            written += 1
    if not sync_filesystem(dest):
        os.sync()
    return written
