"""What a container is given for the CDI devices the kubelet handed to the runtime (local backend).

Why: the local backend has no container runtime, so it resolves the CDI device IDs of a prepared
pod the way containerd or CRI-O would: every spec in the CDI directory is read, and the devices
named by the IDs contribute their `containerEdits` — the environment variables, and the device
metadata files behind their read-only bind mounts (KEP-5304), read from the host path the mount
names. Each spec is read once per pod.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from driver.state.metadata import CONTAINER_DIR


@dataclass
class ContainerView:
    env: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)  # container path -> file content


def container_view(cdi_root: Path, cdi_ids: Sequence[str]) -> ContainerView:
    """The environment and device metadata files a container gets for `cdi_ids` (kind=name)."""
    wanted = {i.split("=", 1)[1] for i in cdi_ids if "=" in i}
    view = ContainerView()
    for path in sorted(cdi_root.glob("*.json")):
        spec = json.loads(path.read_text())
        chosen = [dev for dev in spec.get("devices") or [] if dev.get("name") in wanted]
        # A spec's own containerEdits apply to every container that gets one of its devices (CDI).
        for edits in ([spec.get("containerEdits") or {}] if chosen else []) + [d.get("containerEdits") or {} for d in chosen]:
            for item in edits.get("env") or []:
                key, _, value = item.partition("=")
                view.env[key] = value
            for mount in edits.get("mounts") or []:
                if mount.get("containerPath", "").startswith(CONTAINER_DIR + "/"):
                    try:
                        view.metadata[mount["containerPath"]] = Path(mount["hostPath"]).read_text()
                    except OSError as exc:  # judged as "not a JSON stream", naming the problem
                        view.metadata[mount["containerPath"]] = f"<host file unreadable: {exc}>"
    return view
