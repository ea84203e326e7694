"""CDI spec files: one per prepared claim, so the container runtime can inject what was allocated.

Layout (documented in docs/internals.md, "CDI spec"):
- file `<cdi-root>/k8s.<driver>_device_<claimUID>.json`, mode 0644, written atomically; the root
  is created 0755 whatever the umask and is never left group/world-writable (anyone could inject
  a spec);
- `cdiVersion` 0.6.0 — the lowest spec version with the fields we use (spec annotations;
  container-device-interface specs-go/version.go, requiresV060), so every runtime whose CDI
  library knows 0.6.0 accepts it; older ones drop the whole spec (Debian 12's podman 4.3 answers
  "unresolvable CDI devices", see tests/deploy/test_cdi_runtime.py);
- kind `k8s.<driver>/device`: <class> is the constant `device` because one file holds every
  device of a claim and a CDI file has exactly one kind; the device type (gpu, mig, vf, ...) is
  exported in the env instead (another personality names kind and file as its driver does, e.g.
  NVIDIA's `k8s.gpu.nvidia.com/claim` in `k8s.gpu.nvidia.com-claim_<claimUID>.json`, with
  spec-wide `containerEdits`: driver.personality.base.CdiNaming);
- device IDs `k8s.<driver>/device=<claimUID>-<device>`;
- per device, env vars `FAKE_DRA_<DEVICE>_<FIELD>` (TYPE, PROFILE, UUID, PARENT_UUID, PCI_BUS_ID,
  PRODUCT_NAME, NUMA_NODE, MEMORY, BANDWIDTH, SHARE_ID, CLAIM, REQUEST, CONFIG_KIND, CONFIG; built by
  driver.state.device_env) where <DEVICE> is the device name upper-cased with '-' -> '_';
- per device, read-only bind mounts of its request's device metadata file (driver.state.metadata;
  `containerEdits.mounts`, options `ro`, `bind`) when --device-metadata is on;
- spec annotation `<driver>/prepared`: JSON with the claim, its devices and the boot ID it was
  prepared in, which lets the plugin rebuild its state from these files if the checkpoint is ever
  lost or corrupt (driver.state.recovery; a spec of another boot reserves nothing).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driver.errors import FakeDraError
from driver.fsutil import atomic_write, make_dirs, read_own_file, remove, remove_stale_temps
from driver.personality.base import CdiNaming
from driver.personality.fakedra import cdi_naming
from driver.state.names import check_subdomain, check_uid
from driver.state.ownership import fix_mode
from driver.state.types import ClaimRef, PreparedDevice

CDI_VERSION = "0.6.0"
SPEC_MODE = 0o644
ROOT_MODE = 0o755
log = logging.getLogger("fake-dra.cdi")


@dataclass(frozen=True)
class SpecRecord:
    """What a spec's `<driver>/prepared` annotation says: the claim, its devices, and the boot it
    was prepared in ("" in specs of releases before the boot ID was recorded there)."""

    ref: ClaimRef
    devices: list[PreparedDevice]
    boot_id: str


class CdiWriter:
    def __init__(self, root: str | os.PathLike[str], driver_name: str, naming: CdiNaming | None = None) -> None:
        """`naming`: the personality's CDI layout (default fake-dra's, above)."""
        self.root = Path(root)
        self.driver_name = check_subdomain(driver_name, "driver name", 63)
        self.naming = naming if naming is not None else cdi_naming(self.driver_name)
        self.vendor = self.naming.vendor
        self.kind = self.naming.kind
        self._prefix = self.naming.file_prefix

    def ensure_root(self) -> None:
        if not make_dirs(self.root, ROOT_MODE):
            fix_mode(self.root, "CDI root")

    def remove_stale_temps(self) -> list[Path]:
        """Temp files of our spec writes a crash interrupted (only while holding the state lock)."""
        return remove_stale_temps(self.root, f"{self._prefix}*.json")

    def device_id(self, claim_uid: str, device: str) -> str:
        return f"{self.kind}={self.device_name(claim_uid, device)}"

    @staticmethod
    def device_name(claim_uid: str, device: str) -> str:
        return f"{check_uid(claim_uid)}-{device}"

    def spec_path(self, claim_uid: str) -> Path:
        return self.root / f"{self._prefix}{check_uid(claim_uid)}.json"

    def render(self, claim: ClaimRef, devices: Sequence[PreparedDevice],
               mounts: Mapping[str, Sequence[Mapping[str, Any]]] | None = None, boot_id: str = "") -> dict[str, Any]:
        """`mounts`: device name -> CDI mount entries added to that device's containerEdits."""
        prepared = {
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
            "devices": [d.to_json() for d in devices],
        }
        if boot_id:
            prepared["bootID"] = boot_id
        spec: dict[str, Any] = {
            "cdiVersion": CDI_VERSION,
            "kind": self.kind,
            "annotations": {f"{self.driver_name}/prepared": json.dumps(prepared, sort_keys=True)},
        }
        if self.naming.common_env:  # edits for every container of the claim (NVIDIA: NVIDIA_VISIBLE_DEVICES=void)
            spec["containerEdits"] = {"env": list(self.naming.common_env)}
        spec["devices"] = [
            {"name": self.device_name(claim.uid, d.device), "containerEdits": _edits(d, (mounts or {}).get(d.device))}
            for d in devices
        ]
        return spec

    def write(self, claim: ClaimRef, devices: Sequence[PreparedDevice],
              mounts: Mapping[str, Sequence[Mapping[str, Any]]] | None = None, boot_id: str = "") -> Path:
        """Write the claim's spec atomically, without fsync: the CDI root is normally a tmpfs
        (/var/run/cdi), and after a power loss the boot ID changes, so every claim is prepared —
        and its spec rewritten — again anyway."""
        path = self.spec_path(claim.uid)
        body = json.dumps(self.render(claim, devices, mounts, boot_id), indent=2, sort_keys=True).encode() + b"\n"
        atomic_write(path, body, SPEC_MODE, fsync=False)
        return path

    def exists(self, claim_uid: str) -> bool:
        return self.spec_path(claim_uid).is_file()

    def remove(self, claim_uid: str) -> bool:
        return remove(self.spec_path(claim_uid), sync_dir=False)

    def read_prepared(self, skip: set[str] | frozenset[str] = frozenset()) -> list[SpecRecord]:
        """Every claim recorded in our spec files (evidence to rebuild a lost or corrupt checkpoint),
        except those whose file is named for a UID in `skip` (not even read).

        Unreadable files are logged and skipped: they are ours only if they parse.
        """
        out: list[SpecRecord] = []
        if not self.root.is_dir():
            return out
        for path in sorted(self.root.glob(f"{self._prefix}*.json")):
            if path.name[len(self._prefix):-len(".json")] in skip:
                continue
            try:
                spec = json.loads(read_own_file(path))  # never a FIFO or a link to /dev/zero
                data = json.loads(spec["annotations"][f"{self.driver_name}/prepared"])
                ref = ClaimRef(str(data["namespace"]), str(data["name"]), check_uid(data["uid"]))
                if path != self.spec_path(ref.uid):
                    raise ValueError("file name does not match the recorded claim UID")
                boot = data.get("bootID", "")
                if not isinstance(boot, str):
                    raise ValueError("bootID must be a string")
                out.append(SpecRecord(ref, [PreparedDevice.from_json(d) for d in data["devices"]], boot))
            except (OSError, ValueError, KeyError, TypeError, FakeDraError) as exc:
                log.warning("skipping unreadable CDI spec while rebuilding state", extra={"path": str(path), "error": str(exc)})
        return out


def _edits(device: PreparedDevice, mounts: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    edits: dict[str, Any] = {"env": [f"{k}={v}" for k, v in sorted(device.env.items())]}
    if mounts:
        edits["mounts"] = [dict(m) for m in mounts]
    return edits
