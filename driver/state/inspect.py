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
from driver.state.checkpoint import COMPLETED, FILE_NAME, CheckpointStore, read_boot_id
from driver.state.metadata import HOST_SUBDIR
from driver.state.types import PreparedDevice


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


def inspect_claim(state_dir: Path, cdi_root: Path, driver_name: str, claim_uid: str,
                  boot_id_file: str = "/proc/sys/kernel/random/boot_id") -> PreparedView:
    """The plugin's records of `claim_uid` under its state directory and CDI root."""
    view = PreparedView(checkpoint=state_dir / FILE_NAME)
    if not view.checkpoint.exists():
        view.problem = f"no checkpoint at {view.checkpoint} (has the plugin of this node run with this state directory?)"
        return view
    reader = CheckpointStore(state_dir, driver_name=driver_name, node_name="", boot_id="")
    try:
        checkpoint = reader.peek()
    except (OSError, ValueError, KeyError, TypeError, NotRegularFile, FakeDraError) as exc:
        view.problem = f"checkpoint {view.checkpoint} cannot be read: {exc}"
        return view
    entry = checkpoint.claims.get(claim_uid)
    cdi = CdiWriter(cdi_root, driver_name)
    view.cdi_spec = cdi.spec_path(claim_uid)
    view.cdi_spec_exists = view.cdi_spec.is_file()
    root = state_dir / HOST_SUBDIR / claim_uid
    view.metadata_files = sorted(p for p in root.glob("*/*-metadata.json") if p.is_file()) if root.is_dir() else []
    if entry is None:
        return view
    view.state = entry.state
    view.devices = list(entry.devices)
    current = read_boot_id(boot_id_file)
    view.earlier_boot = bool(current and entry.boot_id and entry.boot_id != current)
    return view

