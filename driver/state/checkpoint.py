"""Crash-safe record of what this plugin prepared, so restarts and reboots do the right thing.

Format (JSON, version 1, mode 0600 in a 0700 directory, atomic tmp + fsync + rename; only the
intermediate PrepareStarted record skips the fsync, see driver.state.prepare):

    {"kind": "FakeDraCheckpoint", "version": 1, "driver": ..., "node": ..., "bootID": <last writer>,
     "claims": {<uid>: {"namespace", "name", "state": "PrepareStarted" | "PrepareCompleted",
                        "bootID": <boot the claim was prepared in>, "devices": [PreparedDevice...]}}}

There is deliberately no checksum: atomic renames already rule out torn files, and a checksum over
re-serialized data is what made other drivers declare valid checkpoints "corrupt" after upgrades.
Durability across power loss matters less than it seems: a power cut changes the boot ID, the
kubelet then prepares every claim in use again, and entries of an older boot are dropped at load
(they reserve nothing any more: their containers and /var/run CDI specs are gone), so stale entries
never accumulate. A file that is missing, does not parse or validate, or was written by a newer release
is not trusted: driver.state.recovery rebuilds the state from the evidence on disk (CDI specs, device
metadata) instead of crash-looping, after keeping a copy of the file (`keep_aside`:
`checkpoint.json.corrupt-<unix time>`, with `-<n>` appended when that name is taken, so no earlier copy is
ever overwritten). Something that cannot be read at all (a directory named checkpoint.json, no
permission) is a start-up error naming the path, not "corrupt".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driver.errors import InputError
from driver.fsutil import NotRegularFile, atomic_write, fsync_dir, make_dirs, read_own_file, remove_stale_temps
from driver.state.names import check_uid
from driver.state.types import ClaimRef, PreparedDevice

KIND = "FakeDraCheckpoint"
VERSION = 1
FILE_NAME = "checkpoint.json"
STARTED = "PrepareStarted"
COMPLETED = "PrepareCompleted"
log = logging.getLogger("fake-dra.checkpoint")


@dataclass
class ClaimEntry:
    ref: ClaimRef
    state: str
    boot_id: str
    devices: list[PreparedDevice] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.ref.namespace,
            "name": self.ref.name,
            "state": self.state,
            "bootID": self.boot_id,
            "devices": [d.to_json() for d in self.devices],
        }

    @classmethod
    def from_json(cls, uid: str, d: Mapping[str, Any]) -> ClaimEntry:
        state = d["state"]
        if state not in (STARTED, COMPLETED):
            raise ValueError(f"claim {uid}: unknown state {state!r}")
        return cls(
            ref=ClaimRef(str(d["namespace"]), str(d["name"]), check_uid(uid)),
            state=state,
            boot_id=str(d.get("bootID", "")),
            devices=[PreparedDevice.from_json(x) for x in d["devices"]],
        )


@dataclass
class Checkpoint:
    claims: dict[str, ClaimEntry] = field(default_factory=dict)


@dataclass(frozen=True)
class Loaded:
    """`checkpoint` when the file was usable; otherwise None and why: "missing", "corrupt (...)",
    "written by a newer release (...)"."""

    checkpoint: Checkpoint | None
    problem: str


class NewerVersion(ValueError):
    """A checkpoint of a later format (a rollback to an older release): not ours to read."""


class CheckpointStore:
    def __init__(self, state_dir: str | os.PathLike[str], *, driver_name: str, node_name: str, boot_id: str) -> None:
        self.dir = Path(state_dir)
        self.path = self.dir / FILE_NAME
        self.driver_name = driver_name
        self.node_name = node_name
        self.boot_id = boot_id
        self._fragments: dict[str, tuple[ClaimEntry, str]] = {}

    def ensure_dir(self) -> None:
        """Create the directory (0700 whatever the umask; missing parents 0755) and make it 0700."""
        make_dirs(self.dir, 0o700)
        os.chmod(self.dir, 0o700)

    def remove_stale_temps(self) -> None:
        """Temp files of checkpoint writes a crash interrupted (only while holding the lock)."""
        for tmp in remove_stale_temps(self.dir, FILE_NAME):
            log.info("removed the temp file of an interrupted checkpoint write", extra={"path": str(tmp)})

    def load(self) -> Loaded:
        """What `checkpoint.json` holds, never changing anything: driver.state.recovery decides
        what to do with a file that is missing or cannot be used (and in which order)."""
        try:
            raw = read_own_file(self.path)  # a symlink or FIFO there is "corrupt" (kept aside), never followed
        except FileNotFoundError:
            return Loaded(None, "missing")
        except IsADirectoryError:
            raise InputError(f"state directory {self.dir}: {self.path} is a directory, not a checkpoint file; "
                             "remove it (or point --state-dir elsewhere)") from None
        except NotRegularFile as exc:
            return Loaded(None, f"corrupt ({exc})")
        try:
            return Loaded(self._parse(raw), "")
        except NewerVersion as exc:
            return Loaded(None, f"written by a newer release ({exc})")
        except Exception as exc:  # noqa: BLE001 - anything unparsable is "corrupt", never fatal
            return Loaded(None, f"corrupt ({exc})")

    def peek(self) -> Checkpoint:
        """The stored checkpoint for a reader that is not the plugin (`fake-dra describe`): nothing
        is moved or written. FileNotFoundError when there is none; ValueError (or an OSError)
        saying what is wrong with a file the plugin would not trust (driver.state.recovery)."""
        return self._parse(read_own_file(self.path))

    def keep_aside(self) -> Path | None:
        """Keep the unusable `checkpoint.json` for a human as checkpoint.json.corrupt-<unix time>
        (`-<n>` appended when taken), without moving it: a hard link, which needs no data blocks (a
        full disk) and leaves checkpoint.json in place until the rebuilt one replaces it, so a crash
        in between repeats the recovery instead of finding no checkpoint. Idempotent: a copy of the
        same file (same inode) made by an interrupted earlier start is reused. None when no copy
        could be kept (the caller goes on: the state matters more than the copy)."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        for earlier in sorted(self.dir.glob(f"{FILE_NAME}.corrupt-*")):
            with contextlib.suppress(OSError):
                other = os.lstat(earlier)
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return earlier
        aside = self._corrupt_name()
        try:
            os.link(self.path, aside, follow_symlinks=False)
            return aside
        except OSError as exc:
            problem = exc
        if stat.S_ISREG(st.st_mode):  # a filesystem without hard links: a copy, space permitting
            try:
                atomic_write(aside, read_own_file(self.path), 0o600, fsync=False)
                return aside
            except (OSError, NotRegularFile) as exc:
                problem = exc
        log.error("cannot keep a copy of the unusable checkpoint; the rebuilt one replaces it",
                  extra={"path": str(self.path), "error": str(problem)})
        return None

    def _corrupt_name(self) -> Path:
        """checkpoint.json.corrupt-<unix time>, or -<time>-<n> when taken: two corrupt files in
        the same second must both be kept (the lock excludes other writers, so no race)."""
        base = f"{FILE_NAME}.corrupt-{int(time.time())}"
        aside, n = self.dir / base, 1
        while os.path.lexists(aside):
            aside, n = self.dir / f"{base}-{n}", n + 1
        return aside

    def _parse(self, raw: bytes) -> Checkpoint:
        doc = json.loads(raw)
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise ValueError(f"not a {KIND} document")
        version = doc.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
            raise NewerVersion(f"version {version}; this build reads {VERSION}")
        if version != VERSION:
            raise ValueError(f"unsupported checkpoint version {version!r} (this build reads {VERSION})")
        if doc.get("driver") != self.driver_name:
            raise ValueError(f"written for driver {doc.get('driver')!r}, not {self.driver_name!r}")
        claims = doc["claims"]
        if not isinstance(claims, dict):
            raise ValueError("claims must be an object")
        return Checkpoint({uid: ClaimEntry.from_json(uid, entry) for uid, entry in claims.items()})

    def encode(self, cp: Checkpoint, changed: Iterable[str] | None = None) -> bytes:
        """Serialise from cached per-claim fragments (entries are replaced, never mutated).

        With `changed` (the UIDs whose entry was set or removed since the last encode) only those
        fragments are rebuilt, so a prepare costs O(its claims) Python work plus one C-level join,
        not a walk over every prepared claim; without it every entry is checked by identity.
        """
        frags = self._fragments
        if changed is None:  # full check: start-up, or a change the caller did not report
            changed = [*cp.claims, *(u for u in frags if u not in cp.claims)]
        for uid in changed:
            entry = cp.claims.get(uid)
            if entry is None:
                frags.pop(uid, None)
                continue
            hit = frags.get(uid)
            if hit is None or hit[0] is not entry:
                frags[uid] = (entry, json.dumps(uid) + ":" + json.dumps(entry.to_json(), separators=(",", ":")))
        if len(frags) != len(cp.claims):  # only if a caller mutated cp.claims without telling us
            return self.encode(cp, None)
        head = json.dumps({"kind": KIND, "version": VERSION, "driver": self.driver_name, "node": self.node_name,
                           "bootID": self.boot_id}, separators=(",", ":"))
        body = ",".join(frag for _, frag in frags.values())
        return (head[:-1] + ',"claims":{' + body + "}}").encode()

    def write(self, data: bytes, durable: bool = False) -> None:
        """Atomic replace (tmp, fsync when durable, rename). Without fsync it survives a process
        crash, which is all the intermediate PrepareStarted record needs."""
        atomic_write(self.path, data, 0o600, fsync=durable, sync_dir=False)

    def sync(self) -> None:
        """fsync the current file (it holds everything written so far)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def save(self, cp: Checkpoint) -> None:
        self.write(self.encode(cp), durable=True)
        fsync_dir(self.dir)


def read_boot_id(path: str | os.PathLike[str] = "/proc/sys/kernel/random/boot_id") -> str:
    """The kernel's boot ID; empty when unreadable (then every boot looks the same, logged)."""
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:  # binary garbage is as unusable as a missing file
        log.warning("cannot read boot ID; reboots will not be detected", extra={"path": str(path), "error": str(exc)})
        return ""
