"""NVIDIA vGPU types from sysfs, in both host frameworks NVIDIA ships.

- mdev (all vGPU releases up to 17 on older kernels): `<fn>/mdev_supported_types/<type>/{name,
  available_instances,device_api,description}`, on the PF for pre-Ampere GPUs and on every SR-IOV VF for
  Ampere and later.
- vendor-specific VFIO (vGPU 17+/R580 on Linux >= 6.8, Ada/Hopper and newer): no mdev; each VF has
  `nvidia/creatable_vgpu_types` ("<id> : <name>" lines, optionally under an "ID : vGPU Name" header;
  "<id> <name>" without the colon is read too, as NVIDIA's own parser in vgpu-device-manager
  pkg/vgpu/vfio/types.go does) and `nvidia/current_vgpu_type` (0 = free, else the type id assigned
  to that VF). The creatable list is capacity-dependent: once a vGPU exists, VFs list only types that
  can still coexist with it.

Both become MdevType entries, folded per type across the functions that offer them.
"""

from __future__ import annotations

import os
import re
from os.path import join

from driver.discovery.reader import SysfsReader
from driver.model.inventory import MdevType

_CREATABLE_LINE = re.compile(r"^\s*(\d+)(?:\s*:\s*|\s+)([^\s:].*?)\s*$")
_HEADER_LINE = re.compile(r"^\s*ID\s*:", re.IGNORECASE)
VENDOR_VFIO = "vendor-vfio"


def mdev_types(walker: SysfsReader, device_path: str, address: str) -> list[MdevType]:
    base = join(device_path, "mdev_supported_types")
    if not os.path.lexists(base):
        return []
    try:
        type_ids = sorted(os.listdir(base))
    except OSError as exc:
        walker.warn(base, f"unreadable ({exc}); skipping vGPU types of {address}")
        return []
    out = []
    for type_id in type_ids:
        type_dir = join(base, type_id)
        what = f"mdev type {type_id} of {address}"
        name = walker.text(join(type_dir, "name"), what)
        available = walker.integer(join(type_dir, "available_instances"), what) if name is not None else None
        api = walker.text(join(type_dir, "device_api"), what) if available is not None else None
        if name is None or available is None or api is None:
            continue
        description = walker.text(join(type_dir, "description"), what, required=False) or ""
        out.append(MdevType(type_id, name, available, api, description, parents=(address,)))
    return out


def vendor_vfio_types(walker: SysfsReader, vf_path: str, address: str) -> list[MdevType]:
    creatable = join(vf_path, "nvidia", "creatable_vgpu_types")
    if not os.path.lexists(creatable):
        return []
    what = f"vGPU types of VF {address}"
    raw = walker.text(creatable, what)
    if raw is None:
        return []
    current = walker.text(join(vf_path, "nvidia", "current_vgpu_type"), what, required=False)
    if current is not None and not current.isdigit():
        walker.warn(join(vf_path, "nvidia", "current_vgpu_type"), f"garbled value {current[:40]!r}; skipping {what}")
        return []
    free = current in (None, "0")  # a VF carries at most one vGPU
    out = []
    if not free:
        # The VF's own vGPU: its type stays offered by this VF (0 free), even though a busy VF need not
        # list it; the name comes from another VF's list (merge), so an allocated device keeps its slot.
        out.append(_vfio_type(current, "", 0, address))
    for n, line in enumerate(raw.splitlines(), start=1):
        match = _CREATABLE_LINE.match(line)
        if match is None:
            if line.strip() and not _HEADER_LINE.match(line):
                walker.warn(creatable, f"line {n} {line[:60]!r} is not '<id> : <name>' or '<id> <name>'; "
                            "ignoring that line")
            continue
        if not free and match.group(1) == current:
            out[0] = _vfio_type(current, match.group(2), 0, address)
            continue
        out.append(_vfio_type(match.group(1), match.group(2), 1 if free else 0, address))
    return out


def _vfio_type(type_id: str, name: str, available: int, address: str) -> MdevType:
    """A vGPU type one VF offers under the vendor-specific VFIO framework (bound to vfio-pci)."""
    return MdevType(type_id, name, available, "vfio-pci", "NVIDIA vendor-specific VFIO", parents=(address,),
                    framework=VENDOR_VFIO)


def merge(types: list[MdevType], walker: SysfsReader, gpu_address: str, paths: dict[str, str]) -> tuple[MdevType, ...]:
    """Fold per-function types into one entry per (framework, type id): instances summed, parents listed."""
    merged: dict[tuple[str, str], MdevType] = {}
    for t in types:
        key = (t.framework, t.type_id)
        seen = merged.get(key)
        if seen is None:
            merged[key] = t
        elif seen.name and t.name and seen.name != t.name:
            where = (
                join(paths[t.parents[0]], "nvidia", "creatable_vgpu_types")
                if t.framework == VENDOR_VFIO
                else join(paths[t.parents[0]], "mdev_supported_types", t.type_id, "name")
            )
            walker.warn(
                where,
                f"name {t.name!r} differs from {seen.name!r} on {seen.parents[0]}; ignoring it for GPU {gpu_address}",
            )
        else:
            merged[key] = MdevType(
                seen.type_id, seen.name or t.name, seen.available_instances + t.available_instances,
                seen.device_api, seen.description, parents=seen.parents + t.parents, framework=seen.framework,
            )
    for key, t in list(merged.items()):
        if not t.name:  # only busy VFs hold it and no VF lists it (e.g. the GPU is full)
            walker.warn(
                join(paths[t.parents[0]], "nvidia", "current_vgpu_type"),
                f"vGPU type id {t.type_id} is in use on {len(t.parents)} VF(s) of GPU {gpu_address} but no VF "
                "lists it in creatable_vgpu_types, so its name is unknown; its devices are not published",
            )
            del merged[key]
    # Numeric ids (vendor VFIO) in numeric order, "nvidia-N" names in name order.
    return tuple(merged[k] for k in sorted(merged, key=lambda k: (k[0], len(k[1]), k[1])))
