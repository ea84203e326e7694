"""Atomic file writes shared by the local object store, the checkpoint and the CDI specs, and the
one way to read a text file a user named.

Why: a crash (or SIGKILL) between write and rename must leave either the old or the new file,
never a torn one; fsync of the file and then its directory additionally makes the rename durable
across power loss. Reading: a binary or unreadable file must end in a message naming it, not in
a UnicodeDecodeError traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def temp_path(path: Path) -> Path:
    """Where atomic_write stages `path`: starts with "." and does not end in .json, so neither a
    CDI runtime scanning the directory nor our own loaders ever pick up a half-written file."""
    return path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")


def atomic_write(path: Path, data: bytes, mode: int, sync_dir: bool = True, fsync: bool = True) -> None:
    """Write via tmp (+ fsync) + rename (+ directory fsync).

    The rename alone is atomic for process crashes (SIGKILL): the page cache survives them. The
    fsyncs only add durability across power loss, so callers skip them for intermediate states
    whose loss is equivalent to "the step never happened" (see driver.state.prepare).
    """
    _write_replace(None, temp_path(path).name, path, data, mode, fsync)
    if sync_dir and fsync:
        fsync_dir(path.parent)


def atomic_write_at(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """atomic_write (without fsync) of the entry `name` of the directory open at `dir_fd`: no path
    is resolved, so no symlink on the way to that directory is followed (driver.state.metadata
    opens it with open_dirs)."""
    _write_replace(dir_fd, temp_path(Path(name)).name, name, data, mode, fsync=False)


def _write_replace(dir_fd: int | None, tmp: str, target: str | Path, data: bytes, mode: int, fsync: bool) -> None:
    at = {"dir_fd": dir_fd}
    # `tmp` is a bare name: relative to dir_fd, or to the target's directory when dir_fd is None.
    tmp_path: str | Path = tmp if dir_fd is not None else Path(target).with_name(tmp)
    # A fresh inode, never through whatever already has the temp name: a symlink planted there
    # would otherwise have its target truncated and overwritten (O_TRUNC follows links).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp_path, **at)
    fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, **at)
    try:
        try:
            os.fchmod(fd, mode)  # umask must not widen or narrow the intended mode
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_path, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_path, **at)  # a full disk must not also leave temp files behind
        raise


def open_dirs(root: Path, parts: Sequence[str], mode: int, *,
              replaced: Callable[[str], None] | None = None) -> int:
    """An O_DIRECTORY fd of root/parts[0]/parts[1]/..., each part created (`mode`, whatever the
    umask) when missing. Nothing is followed: `root` itself must not be a symlink (ELOOP), and a
    symlink or file found in place of a part is removed and replaced by a directory (`replaced`
    is told its relative path). For directories the caller owns outright, like a claim's device
    metadata: a link planted there would otherwise redirect the files it writes."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, flags)
    try:
        for i, part in enumerate(parts):
            nxt = _open_or_make(fd, part, mode, flags, "/".join(parts[:i + 1]), replaced)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_or_make(fd: int, name: str, mode: int, flags: int, where: str,
                  replaced: Callable[[str], None] | None) -> int:
    for _ in range(3):  # a racing remover or creator gets another try, not a loop
        try:
            return os.open(name, flags, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(name, dir_fd=fd)  # a symlink or a file where our directory belongs
            if replaced is not None:
                replaced(where)
        try:
            os.mkdir(name, 0o700, dir_fd=fd)
        except FileExistsError:
            continue
        new = os.open(name, flags, dir_fd=fd)
        os.fchmod(new, mode)
        return new
    raise OSError(errno.EAGAIN, "kept changing while being created", where)


class NotRegularFile(ValueError):
    """A file the plugin writes itself is a symlink, FIFO, socket or device: not ours to read."""


def read_regular(path: Path | str, *, follow_links: bool = False, limit: int = -1, dir_fd: int | None = None) -> bytes:
    """The bytes (at most `limit`) of a file that must be a regular file. Never blocks: a FIFO, or a
    link to /dev/zero, planted in its place would otherwise hang or exhaust the process
    (NotRegularFile instead); a symlink is NotRegularFile too unless `follow_links`. `dir_fd`:
    `path` is relative to that directory. FileNotFoundError and IsADirectoryError pass through,
    like any other OSError."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise NotRegularFile(f"{path} is a symbolic link") from None
        raise
    with open(fd, "rb", closefd=True) as f:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path} is not a regular file (a FIFO, socket or device)")
        return f.read(limit)


def read_own_file(path: Path) -> bytes:
    """The bytes of a file the plugin itself wrote (atomic_write: always a regular file, never a link)."""
    return read_regular(path)


def sync_filesystem(path: Path) -> bool:
    """Flush every written file and directory entry of the filesystem holding `path` (Linux
    syncfs(2)): one call instead of an fsync per file, for callers writing hundreds of files in a
    row. False where syncfs is unavailable (the caller then fsyncs each file itself)."""
    libc = _libc()
    if libc is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return libc.syncfs(fd) == 0
    finally:
        os.close(fd)


_LIBC: list = []


def _libc():  # loaded once; None off Linux or without glibc's syncfs
    if not _LIBC:
        try:
            import ctypes
            import ctypes.util

            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _LIBC.append(lib if hasattr(lib, "syncfs") else None)
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


def can_sync_filesystem() -> bool:
    return _libc() is not None


def fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove(path: Path, sync_dir: bool = True) -> bool:
    """Remove a file; True if it existed. Durable like the writes unless the caller batches."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    if sync_dir:
        fsync_dir(path.parent)
    return True


def remove_stale_temps(directory: Path, name_glob: str) -> list[Path]:
    """Remove the temp files an interrupted atomic_write left for files named `name_glob` in
    `directory` (call only while no other process can be writing there)."""
    removed: list[Path] = []
    for tmp in directory.glob(f".{name_glob}.*{TEMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def make_dirs(path: Path, mode: int, parents_mode: int = 0o755) -> bool:
    """mkdir -p with exact modes whatever the umask (umask 000 must not make a directory
    world-writable, nor 077 one the container runtime cannot read). Existing directories keep
    their mode. True if `path` itself was created. The leaf is tried first, so the common case
    (everything but the leaf exists: a prepare's metadata directory) costs one mkdir."""
    path = Path(path)
    try:
        os.mkdir(path, 0o700)  # narrow until the chmod below
    except FileNotFoundError:
        if path.parent == path:
            raise
        make_dirs(path.parent, parents_mode, parents_mode)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:  # created by someone else meanwhile
            return _existing_dir(path)
    except FileExistsError:
        return _existing_dir(path)
    os.chmod(path, mode)
    return True


def _existing_dir(path: Path) -> bool:
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    return False


def read_text_file(path: str | os.PathLike[str], what: str) -> str:
    """The text of a file a user pointed us at; InputError naming `what` and the path when it cannot
    be read or is not UTF-8 (a binary file given by mistake must not end in a traceback)."""
    from driver.errors import InputError

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot read: {exc.strerror or exc}") from None
    return decode_text(data, f"{what} {path}")


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text of `data`; InputError naming `where` and the offset of the first bad byte."""
    from driver.errors import InputError

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
