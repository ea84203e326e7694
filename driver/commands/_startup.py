"""What `fake-dra run` says about the node when it starts: one line a person can check at a glance.

Why: before this the first lines of a local run named sockets, not hardware, so a wrong
--sysfs-root or a driver config that turned a mode off showed up only when a claim failed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from driver.model.deviceattrs import attr

# Publishing order of the device types (the `type` attribute, docs/architecture.md §2, Rendering).
TYPE_ORDER = ("gpu", "mig", "vgpu", "timeshare", "nic", "vf")


def inventory_summary(pool: Any, driver_name: str) -> tuple[str, dict[str, Any]]:
    """(message, log fields) for a rendered pool: GPUs, devices per mode, NICs and VFs, slices."""
    devices = pool.devices()
    # A driver without a `type` attribute (the SR-IOV driver's VFs) counts plain devices.
    types = Counter(str(attr(d, "type", driver_name) or "device") for d in devices.values())
    gpus = types.get("gpu", 0)
    pfs = {attr(d, "pfPciBusID", driver_name) for d in devices.values() if attr(d, "type", driver_name) == "vf"}
    pfs |= {attr(d, "pciBusID", driver_name) for d in devices.values() if attr(d, "type", driver_name) == "nic"}
    pfs.discard(None)
    vfs = types.get("vf", 0)
    ordered = [t for t in TYPE_ORDER if types.get(t)] + sorted(t for t in types if t not in TYPE_ORDER)
    modes = {t: types[t] for t in ordered}
    slices = len(pool.slices)
    mode_text = ", ".join(f"{n} {t}" for t, n in modes.items()) or "none"
    message = (f"inventory: {gpus} GPU{'s' * (gpus != 1)}, {len(pfs)} SR-IOV NIC{'s' * (len(pfs) != 1)} "
               f"with {vfs} VF{'s' * (vfs != 1)}; devices by mode: {mode_text}; "
               f"{slices} slice{'s' * (slices != 1)} in pool {pool.name}")
    fields = {"gpus": gpus, "nics": len(pfs), "vfs": vfs, "modes": modes, "slices": slices,
              "counter_sets": len(pool.counter_sets()), "pool": pool.name, "driver": driver_name}
    return message, fields


def empty_inventory_warning(pools: Sequence[Any], sysfs_root: str) -> str | None:
    """The warning for a node with nothing to publish in any of its drivers' pools (a wrong
    --sysfs-root, or a host without GPUs and SR-IOV NICs), naming the flag and how to make a fake
    node; None when there are devices (a personality's NIC driver alone may well have none)."""
    if any(pool.devices() for pool in pools):
        return None
    return (f"no GPUs or SR-IOV NICs found under --sysfs-root {sysfs_root}: the node publishes an empty pool and "
            "no claim can be prepared. Check the path; for a fake node, write a tree with "
            "`fake-dra make-sysfs --profile demo --out sys` and run with --sysfs-root sys "
            "(`fake-dra make-sysfs --list` shows the profiles)")
