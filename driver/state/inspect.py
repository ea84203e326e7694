"""Read-only look at what a node's kubelet plugin holds for a claim: `fake-dra describe` answers
"is it prepared, and where are its files?" from the plugin's own records.

The plugin's state directory holds the checkpoint (`checkpoint.json`, driver.state.checkpoint) and
the device metadata files (`dra-device-metadata/<claim uid>/<request>/<driver>-metadata.json`); its
CDI root holds one spec per prepared claim (`k8s.<driver>_device_<claim uid>.json`). Nothing here
writes, locks or moves a file (a corrupt checkpoint is reported, not set aside as the plugin
would), so it is safe next to a running plugin: every file it reads is replaced atomically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from driver.errors import FakeDraError
from driver.fsutil import NotRegularFile
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import COMPLETED, FILE_NAME, Checkpoint, CheckpointStore, read_boot_id
from driver.state.metadata import HOST_SUBDIR
from driver.state.types import ClaimRef, PreparedDevice

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


@dataclass
class PreparedView:
    """What the plugin of one driver on one node records about one claim."""

    checkpoint: Path
    state: str | None = None  # PrepareStarted | PrepareCompleted | None (no entry)
    earlier_boot: bool = False  # recorded in another boot: the plugin drops it at its next start
    devices: list[PreparedDevice] = field(default_factory=list)
    cdi_spec: Path | None = None
    cdi_spec_exists: bool = False
    metadata_files: list[Path] = field(default_factory=list)
    problem: str | None = None  # why the record could not be read (then nothing else is known)

    @property
    def prepared(self) -> bool:
        return self.state == COMPLETED and not self.earlier_boot


@dataclass
class PreparedClaim:
    ref: ClaimRef
    state: str
    earlier_boot: bool


def _load(state_dir: Path, driver_name: str) -> tuple[Checkpoint | None, str | None]:
    path = state_dir / FILE_NAME
    if not path.exists():
        return None, f"no checkpoint at {path} (has the plugin of this node run with this state directory?)"
    try:
        return CheckpointStore(state_dir, driver_name=driver_name, node_name="", boot_id="").peek(), None
    except (OSError, ValueError, KeyError, TypeError, NotRegularFile, FakeDraError) as exc:
        return None, f"checkpoint {path} cannot be read: {exc}"


def _earlier_boot(recorded: str, current: str) -> bool:
    return bool(current and recorded and recorded != current)


def inspect_claim(state_dir: Path, cdi_root: Path, driver_name: str, claim_uid: str,
                  boot_id_file: str = BOOT_ID_FILE) -> PreparedView:
    """The plugin's records of `claim_uid` under its state directory and CDI root."""
    view = PreparedView(checkpoint=state_dir / FILE_NAME)
    checkpoint, view.problem = _load(state_dir, driver_name)
    if checkpoint is None:
        return view
    cdi = CdiWriter(cdi_root, driver_name)
    view.cdi_spec = cdi.spec_path(claim_uid)
    view.cdi_spec_exists = view.cdi_spec.is_file()
    root = state_dir / HOST_SUBDIR / claim_uid
    view.metadata_files = sorted(p for p in root.glob("*/*-metadata.json") if p.is_file()) if root.is_dir() else []
    entry = checkpoint.claims.get(claim_uid)
    if entry is not None:
        view.state = entry.state
        view.devices = list(entry.devices)
        view.earlier_boot = _earlier_boot(entry.boot_id, read_boot_id(boot_id_file))
    return view


def prepared_claims(state_dir: Path, driver_name: str,
                    boot_id_file: str = BOOT_ID_FILE) -> tuple[list[PreparedClaim], str | None]:
    """Every claim the plugin's checkpoint records, by namespace and name; or why it cannot be read."""
    checkpoint, problem = _load(state_dir, driver_name)
    if checkpoint is None:
        return [], problem
    current = read_boot_id(boot_id_file)
    claims = [PreparedClaim(e.ref, e.state, _earlier_boot(e.boot_id, current)) for e in checkpoint.claims.values()]
    return sorted(claims, key=lambda c: (c.ref.namespace, c.ref.name)), None
