"""DRA device metadata files (KEP-5304): what a container can read about the devices it was given.

The protocol (kubernetes.io "Observability of Dynamic Resources", section "DRA device metadata in
containers"; Go types in k8s.io/dynamic-resource-allocation/api/metadata):
- per prepared claim, request and driver, one file appears read-only in every container that uses
  the request, at `/var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/
  <driver>-metadata.json`, or `.../resourceclaimtemplates/<podClaimName>/<request>/...` when the
  claim was generated from a template (the claim's `resource.kubernetes.io/pod-claim-name`
  annotation, set by the resourceclaim controller, is the pod's `spec.resourceClaims[].name`);
  a firstAvailable request uses the top-level request name in the path and `<request>/<sub>` in
  the file;
- the file is a JSON stream: the same `DeviceMetadata` object once per API version, newest first
  (readers take the first version they know). Kubernetes 1.37 requires
  `metadata.resource.k8s.io/v1beta1`; `v1alpha1` (1.36) follows for older readers. We write one
  compact object per line, which any streaming JSON decoder reads and `head -n1` can split;
- `metadata.generation` is 1 in a new file and grows by one on every rewrite with new content.

Where the upstream helper (kubeletplugin, metadata.go) keys host files by claim namespace/name, we
key them by claim UID under the plugin's state directory — `<state>/dra-device-metadata/<uid>/
<request>/<driver>-metadata.json` — so a claim deleted and recreated under the same name can never
see or remove the other one's file. Files are replaced atomically (tmp + rename) without fsync: a
bind mount pins the inode, so a running container keeps reading the complete version it started
with, and after a power loss the boot ID changes and every claim is prepared (and written) again.

Content per device: driver, pool, name, the attributes the device is published with (same JSON
shape as in its ResourceSlice), plus fake-dra's runtime-only attributes `granted<Capacity>` (the
amount of each capacity this claim was granted, as a quantity string: the schema has no capacity
field, "device capacity values are not included"), and for network functions `networkData` with
the interface name and hardware address read from sysfs at prepare time.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driver.errors import InputError, PrepareError
from driver.fsutil import TEMP_SUFFIX, NotRegularFile, atomic_write_at, make_dirs, open_dirs, read_regular
from driver.model.deviceattrs import granted
from driver.state.names import check_label, check_subdomain, check_uid
from driver.state.types import ClaimRef, NetworkData, PreparedDevice

log = logging.getLogger("fake-dra.metadata")

# Newest first: the order of the objects in each file.
API_VERSIONS = ("metadata.resource.k8s.io/v1beta1", "metadata.resource.k8s.io/v1alpha1")
KIND = "DeviceMetadata"
CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
CLAIMS_SUBDIR = "resourceclaims"
TEMPLATES_SUBDIR = "resourceclaimtemplates"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
HOST_SUBDIR = "dra-device-metadata"
FILE_MODE = 0o644  # read inside containers running as any user
DIR_MODE = 0o755
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")  # a ResourceSlice attribute name


@dataclass(frozen=True)
class MetadataFile:
    """One request's file: where it lives on the host and in containers, and its object."""

    request: str  # top-level request name (the path segment)
    host_path: Path
    container_path: str
    body: dict[str, Any]  # the DeviceMetadata object without apiVersion/kind/generation


def base_request(request: str) -> str:
    """`gpu/high-memory` -> `gpu` (firstAvailable subrequests share their request's file)."""
    return request.split("/", 1)[0]


def pod_claim_name(claim: Mapping[str, Any]) -> str | None:
    """The template claim's name in the pod spec (a DNS label, as the resourceclaim controller sets
    it), or None for a claim the pod names directly. PrepareError for any other value: it becomes a
    path inside the container, so "../x" must never reach the runtime."""
    meta = claim.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, Mapping):
        raise PrepareError(f"claim {meta.get('namespace')}/{meta.get('name')}: metadata.annotations is not a map")
    value = annotations.get(POD_CLAIM_NAME_ANNOTATION)
    if value is None or value == "":
        return None
    try:
        return check_label(value, f"annotation {POD_CLAIM_NAME_ANNOTATION}")
    except InputError as exc:
        raise PrepareError(f"claim {meta.get('namespace')}/{meta.get('name')}: {exc}") from None


def container_path(driver_name: str, claim_name: str, request: str, pod_claim: str | None = None) -> str:
    """Where a container reads the file of `request` (top-level name): under the pod's name for a
    claim from a template (`pod_claim`), else under the claim's name."""
    if pod_claim:
        return f"{CONTAINER_DIR}/{TEMPLATES_SUBDIR}/{pod_claim}/{request}/{driver_name}-metadata.json"
    return f"{CONTAINER_DIR}/{CLAIMS_SUBDIR}/{claim_name}/{request}/{driver_name}-metadata.json"


def granted_attributes(result: Mapping[str, Any] | None, device: Mapping[str, Any],
                       unrequested: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """`granted<Capacity>` string attributes: for each capacity of the device, what the claim was
    given (driver.model.deviceattrs.granted: the same figure the workload's env carries)."""
    out: dict[str, dict[str, str]] = {}
    for name in device.get("capacity") or {}:
        if "/" in name:
            continue
        key = "granted" + name[:1].upper() + name[1:]
        if not _IDENTIFIER.fullmatch(key):
            continue
        value = granted(result or {}, device, name, unrequested)
        if value is not None:
            out[key] = {"string": value}
    return out


def build_files(
    driver_name: str,
    host_dir: Path,
    ref: ClaimRef,
    claim: Mapping[str, Any],
    devices: Sequence[PreparedDevice],
    pool_devices: Mapping[str, Mapping[str, Any]],
    network_data: NetworkData | None = None,
    unrequested: Callable[[str], Mapping[str, str]] | None = None,
) -> list[MetadataFile]:
    """The files of one claim (pure apart from `network_data`'s sysfs reads), one per request.
    `unrequested(device)`: what a request-driven counter grants a claim that records no amount."""
    pod_claim = pod_claim_name(claim)
    results = {(r.get("request"), r.get("device")): r
               for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
               if isinstance(r, Mapping) and r.get("driver") == driver_name}
    by_request: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for dev in devices:
        for full in dev.request_names:
            published = pool_devices.get(dev.device) or {}
            entry: dict[str, Any] = {"driver": driver_name, "pool": dev.pool, "name": dev.device}
            attributes = dict(published.get("attributes") or {})
            grants = unrequested(dev.device) if unrequested is not None else None
            for key, value in granted_attributes(results.get((full, dev.device)), published, grants).items():
                attributes.setdefault(key, value)
            if attributes:
                entry["attributes"] = attributes
            net = network_data(published) if network_data is not None else None
            if net:
                entry["networkData"] = net
            by_request.setdefault(base_request(full), (full, []))[1].append(entry)
    files = []
    for request, (full, entries) in by_request.items():
        body: dict[str, Any] = {"metadata": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid}}
        if pod_claim:
            body["podClaimName"] = pod_claim
        body["requests"] = [{"name": full, "devices": entries}]
        files.append(MetadataFile(
            request=request,
            host_path=host_dir / check_uid(ref.uid) / request / f"{driver_name}-metadata.json",
            container_path=container_path(driver_name, ref.name, request, pod_claim),
            body=body,
        ))
    return files


def encode(body: Mapping[str, Any], generation: int) -> bytes:
    """The JSON stream: one object per API version, newest first, one per line."""
    lines = []
    for version in API_VERSIONS:
        obj = {"kind": KIND, "apiVersion": version, **body}
        obj["metadata"] = {**body["metadata"], "generation": generation}
        lines.append(json.dumps(obj, sort_keys=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode()


def decode(data: bytes | str) -> list[dict[str, Any]]:
    """Every object of a metadata stream (whitespace between objects is free); ValueError if torn."""
    text = data.decode() if isinstance(data, bytes) else data
    decoder = json.JSONDecoder()
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        obj, pos = decoder.raw_decode(text, pos)
        if not isinstance(obj, dict):
            raise ValueError(f"stream element {len(out)} is not an object")
        out.append(obj)


def _without_generation(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "generation"}
    return out


class DeviceMetadataWriter:
    """Writes, recreates and removes the metadata files of prepared claims.

    `enabled=False` (--device-metadata=false) writes nothing and adds no mounts, but still removes
    files left from a run that had it on."""

    def __init__(self, state_dir: str | os.PathLike[str], driver_name: str, *, enabled: bool = True,
                 network_data: NetworkData | None = None) -> None:
        # Absolute: the CDI spec hands this path to the container runtime, which has another cwd.
        self.root = Path(state_dir).absolute() / HOST_SUBDIR
        self.driver_name = driver_name
        self.enabled = enabled
        self._network_data = network_data

    def files(self, ref: ClaimRef, claim: Mapping[str, Any], devices: Sequence[PreparedDevice],
              pool_devices: Mapping[str, Mapping[str, Any]], *, network: bool = True,
              unrequested: Callable[[str], Mapping[str, str]] | None = None) -> list[MetadataFile]:
        """The claim's files ([] when disabled); `network=False` skips the sysfs reads (paths only)."""
        if not self.enabled:
            return []
        net = self._network_data if network else None
        return build_files(self.driver_name, self.root, ref, claim, devices, pool_devices, net, unrequested)

    @staticmethod
    def mounts(files: Sequence[MetadataFile], devices: Sequence[PreparedDevice]) -> dict[str, list[dict[str, Any]]]:
        """Device name -> read-only bind mounts for its CDI containerEdits: every device of a request
        carries its request's file, so any container given the request sees it (the runtime keys
        mounts by container path, so several devices of one request do not mount it twice)."""
        by_request = {f.request: f for f in files}
        out: dict[str, list[dict[str, Any]]] = {}
        for dev in devices:
            for full in dev.request_names:
                f = by_request.get(base_request(full))
                if f is not None:
                    out.setdefault(dev.device, []).append(
                        {"hostPath": str(f.host_path), "containerPath": f.container_path, "options": ["ro", "bind"]})
        return out

    def write(self, ref: ClaimRef, claim: Mapping[str, Any], devices: Sequence[PreparedDevice],
              pool_devices: Mapping[str, Mapping[str, Any]],
              unrequested: Callable[[str], Mapping[str, str]] | None = None) -> list[MetadataFile]:
        """Write the claim's files at prepare; returns them (for the CDI mounts). Raises OSError, or
        PrepareError for a claim whose files cannot be named (the caller fails the claim)."""
        files = self.files(ref, claim, devices, pool_devices, unrequested=unrequested)
        self._write(files)
        return files

    def ensure(self, ref: ClaimRef, claim: Mapping[str, Any], devices: Sequence[PreparedDevice],
               pool_devices: Mapping[str, Mapping[str, Any]],
               unrequested: Callable[[str], Mapping[str, str]] | None = None) -> list[MetadataFile]:
        """For an already prepared claim: recreate files that went missing; cheap when none did
        (no sysfs reads). Returns the files (for the CDI mounts)."""
        files = self.files(ref, claim, devices, pool_devices, network=False, unrequested=unrequested)
        missing = {f.request for f in files if not self._present(f)}
        if missing:
            log.warning("device metadata file missing for a prepared claim; recreating it",
                        extra={"claim": f"{ref.namespace}/{ref.name}", "requests": sorted(missing)})
            self._write([f for f in self.files(ref, claim, devices, pool_devices, unrequested=unrequested)
                         if f.request in missing])
        return files

    def _write(self, files: Sequence[MetadataFile]) -> None:
        """Write each file unless it already holds this content; a rewrite bumps the generation.
        Relative to directory fds opened without following links (driver.fsutil.open_dirs): a
        symlink planted at the claim's or the request's directory is replaced, never written
        through (the files used to land wherever it pointed)."""
        if files:
            make_dirs(self.root, DIR_MODE)  # once per call, not per file
        for f in files:
            fd = self._open_request_dir(f)
            try:
                previous = self._read_first(fd, f.host_path)
                if previous is not None and _without_generation(previous) == _without_generation(f.body):
                    continue
                atomic_write_at(fd, f.host_path.name, encode(f.body, _generation(previous) + 1), FILE_MODE)
            finally:
                os.close(fd)

    def _open_request_dir(self, f: MetadataFile) -> int:
        def replaced(where: str) -> None:
            log.warning("replaced a symlink or file found in place of a device metadata directory",
                        extra={"path": str(self.root / where)})
        try:
            return open_dirs(self.root, f.host_path.parent.relative_to(self.root).parts, DIR_MODE, replaced=replaced)
        except OSError as exc:
            # The root itself replaced by a link since start-up (which refuses one): O_NOFOLLOW with
            # O_DIRECTORY reports ENOTDIR for a link on Linux, ELOOP elsewhere.
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and self.root.is_symlink():
                raise PrepareError(f"device metadata directory {self.root} is a symbolic link; not writing "
                                   "through it: remove the link") from None
            raise

    def _present(self, f: MetadataFile) -> bool:
        """The file is there as a regular file, reached without following any link."""
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            for part in f.host_path.relative_to(self.root).parts[:-1]:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
            return stat.S_ISREG(os.stat(f.host_path.name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            return False
        finally:
            os.close(fd)

    def remove(self, claim_uid: str) -> None:
        """Remove every file of the claim (also when disabled). Raises OSError."""
        path = self.root / check_uid(claim_uid)
        try:
            if path.is_symlink():  # rmtree refuses links: unprepare would fail on every retry
                path.unlink()
            else:
                shutil.rmtree(path)
        except FileNotFoundError:
            return

    def remove_stale_temps(self) -> list[Path]:
        """At start-up: temp files of metadata writes a crash interrupted, in every claim's request
        directories (only while holding the state directory; links are not entered)."""
        removed: list[Path] = []
        pattern = f".{self.driver_name}-metadata.json.*{TEMP_SUFFIX}"
        for claim_dir in _subdirs(self.root):
            for request_dir in _subdirs(claim_dir):
                for tmp in request_dir.glob(pattern):
                    with contextlib.suppress(FileNotFoundError):
                        tmp.unlink()
                        removed.append(tmp)
        return removed

    def prune(self, keep: set[str]) -> list[str]:
        """At start-up: remove the directories of claims that are not recorded as prepared (left by
        a crash before the checkpoint knew the claim, or by an older boot). Returns their UIDs."""
        if self.root.is_symlink():
            # Pruning through it would delete whatever the link points at (everything there is
            # "not a prepared claim"); the plugin made this directory itself, never a link.
            raise InputError(f"device metadata directory {self.root} is a symbolic link (to {os.readlink(self.root)}); "
                             "refusing to clean up through it: remove the link")
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        gone = []
        for entry in entries:
            if entry.name in keep or entry.name.startswith("."):
                continue
            try:
                shutil.rmtree(entry.path) if entry.is_dir(follow_symlinks=False) else os.unlink(entry.path)
                gone.append(entry.name)
            except OSError as exc:
                log.warning("cannot remove stale device metadata", extra={"path": entry.path, "error": str(exc)})
        if gone:
            log.info("removed device metadata of claims that are not prepared", extra={"claims": gone})
        return gone

    @staticmethod
    def _read_first(dir_fd: int, path: Path) -> dict[str, Any] | None:
        try:
            data = read_regular(path.name, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except NotRegularFile:  # never followed nor read; the atomic rewrite replaces the name
            log.warning("device metadata file is not a regular file; replacing it", extra={"path": str(path)})
            return None
        try:
            objects = decode(data)
        except ValueError:
            log.warning("unreadable device metadata file; rewriting it", extra={"path": str(path)})
            return None
        return objects[0] if objects else None


@dataclass(frozen=True)
class MetadataRecord:
    """What a claim's metadata files say about it: the claim and its devices of this driver as
    (request, pool, device). Evidence that a prepare of the claim got at least that far."""

    ref: ClaimRef
    devices: list[tuple[str, str, str]]


def read_evidence(root: Path, driver_name: str) -> list[MetadataRecord]:
    """Every claim with metadata files under `root` (driver.state.recovery, when the checkpoint
    cannot be used). Files and directories that are not ours, links, and files that do not
    decode or do not name the claim of their directory are skipped with a warning."""
    out = []
    for claim_dir in sorted(_subdirs(root)):
        try:
            uid = check_uid(claim_dir.name)
        except InputError:
            continue
        ref, devices = None, []
        for request_dir in sorted(_subdirs(claim_dir)):
            path = request_dir / f"{driver_name}-metadata.json"
            try:
                obj = decode(read_regular(path))[0]
                meta = obj["metadata"]
                found = ClaimRef(check_label(meta["namespace"], "namespace"), check_subdomain(meta["name"], "name"),
                                 meta["uid"])
                if found.uid != uid or (ref is not None and found != ref):
                    raise ValueError(f"names claim {found.uid}, not {uid}")
                ref = found
                for request in obj["requests"]:
                    for dev in request["devices"]:
                        if dev.get("driver") == driver_name:
                            devices.append((str(request["name"]), str(dev["pool"]), check_label(dev["name"], "device")))
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError, IndexError, InputError) as exc:
                log.warning("skipping unreadable device metadata while rebuilding state",
                            extra={"path": str(path), "error": str(exc)})
        if ref is not None and devices:
            out.append(MetadataRecord(ref, devices))
    return out


def _subdirs(path: Path) -> list[Path]:
    """The real directories in `path` (no links), [] when it is missing or not a directory."""
    try:
        with os.scandir(path) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _generation(obj: Mapping[str, Any] | None) -> int:
    value = ((obj or {}).get("metadata") or {}).get("generation")
    return value if isinstance(value, int) and value > 0 else 0
