"""Reads GPUs, vGPU (mdev) types and network functions from a Linux sysfs tree under a configurable root.

Why not libudev: it ignores alternate roots, and fixtures, containers with a host mount and tests all need
ROOT != /sys. The file-level primitives (and their defensiveness: one bad device never hides the others)
live in driver.discovery.reader; this module decides what the functions it reads *are*.
"""

from __future__ import annotations

import os
from os.path import join
from pathlib import Path

from driver.discovery import netdev, vgpu
from driver.discovery.reader import (
    BDF,
    GPU_CLASSES,
    FoundFunction,
    NETWORK_BASE_CLASS,
    NVIDIA_VENDOR,
    SysfsReader,
    read_attribute,
)
from driver.errors import DiscoveryError
from driver.model.hardware import GpuModel, HardwareCatalog
from driver.model.inventory import Gpu, Inventory, NicPF, VirtualFunction

__all__ = ["BDF", "discover", "read_attribute"]


def discover(root: str | Path, catalog: HardwareCatalog) -> Inventory:
    """Inventory of the node whose sysfs is mounted at `root` (e.g. "/sys" or a fake tree).

    Raises DiscoveryError only when `root` itself is unusable; everything below it that is garbled,
    missing, unreadable, unknown or looping is skipped with a warning in Inventory.warnings.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise DiscoveryError(f"sysfs root {root!r} does not exist or is not a directory (--sysfs-root)")
    walker = SysfsReader(root)
    functions = walker.functions()
    gpus: list[Gpu] = []
    nics: list[NicPF] = []
    ports: list[FoundFunction] = []
    # functions() already dropped VFs (they are reached through their PF's virtfnN links).
    for item in functions.values():
        pci = item.pci
        if pci.vendor_id == NVIDIA_VENDOR and pci.class_code >> 8 in GPU_CLASSES:
            gpu = _gpu(walker, catalog, item, len(gpus))
            if gpu is not None:
                gpus.append(gpu)
        elif pci.class_code >> 16 == NETWORK_BASE_CLASS:
            if not os.path.lexists(join(item.path, "sriov_totalvfs")):
                ports.append(item)
                continue
            nic = _nic(walker, catalog, item, len(nics))
            if nic is not None:
                nics.append(nic)
    # Plain ports (no SR-IOV) are numbered after the SR-IOV PFs, so discovering them never renames an
    # existing VF device (nic-N-vf-K); they are only published when the driver config opts them in.
    for item in ports:
        nics.append(_port(walker, catalog, item, len(nics)))
    return Inventory(gpus=tuple(gpus), nics=tuple(nics), warnings=tuple(walker.warnings))


def _gpu(walker: SysfsReader, catalog: HardwareCatalog, item: FoundFunction, index: int) -> Gpu | None:
    pci, path = item.pci, item.path
    model = _model(walker, catalog, item)
    if model is None:
        return None
    # Pre-Ampere vGPU: mdev types on the PF. Ampere+ SR-IOV vGPU: on each VF (virtfnN), either as mdev
    # types or, with NVIDIA's vendor-specific VFIO framework, in <VF>/nvidia/creatable_vgpu_types.
    types = vgpu.mdev_types(walker, path, pci.address)
    paths = {pci.address: path}
    for _, vf_path in walker.virtfns(path, f"GPU {pci.address}"):
        vf_name = os.path.basename(vf_path)
        types += vgpu.mdev_types(walker, vf_path, vf_name) + vgpu.vendor_vfio_types(walker, vf_path, vf_name)
        paths[vf_name] = vf_path
    return Gpu(index=index, pci=pci, model=model, mdev_types=vgpu.merge(types, walker, pci.address, paths))


def _model(walker: SysfsReader, catalog: HardwareCatalog, item: FoundFunction) -> GpuModel | None:
    """The table model of this GPU. Boards that share a device ID (A2 and A16 are both 10de:25b6) are
    told apart by `subsystem_vendor`/`subsystem_device`, as NVIDIA's own driver tables do; those files
    are read only for such device IDs, so other GPUs do not depend on them."""
    pci, path = item.pci, item.path
    subsystem = None
    if catalog.needs_subsystem(pci.device_id):
        what = f"GPU {pci.address} (device ID 0x{pci.device_id:04x} is told apart by its PCI subsystem)"
        vendor = walker.hex(join(path, "subsystem_vendor"), what, 16)
        device = walker.hex(join(path, "subsystem_device"), what, 16) if vendor is not None else None
        if vendor is None or device is None:
            return None
        subsystem = (vendor, device)
    model = catalog.gpu(pci.device_id, subsystem)
    if model is not None:
        return model
    if subsystem is not None:
        known = ", ".join(f"{m.product_name} ({s[0]:04x}:{s[1]:04x})" for m in catalog.variants_of(pci.device_id)
                          for s in m.subsystems)
        walker.warn(
            join(path, "subsystem_device"),
            f"NVIDIA GPU device ID 0x{pci.device_id:04x} with subsystem {subsystem[0]:04x}:{subsystem[1]:04x} is "
            f"none of the known boards {known}; skipping GPU {pci.address} (add the model with its `subsystem:` "
            "under `hardware.gpus` in the driver config)",
        )
        return None
    walker.warn(
        join(path, "device"),
        f"unknown NVIDIA GPU device ID 0x{pci.device_id:04x}; skipping GPU {pci.address} "
        "(add the model under `hardware.gpus` in the driver config)",
    )
    return None


def _nic(
    walker: SysfsReader, catalog: HardwareCatalog, item: FoundFunction, index: int
) -> NicPF | None:
    pci, path = item.pci, item.path
    what = f"NIC {pci.address}"
    total = walker.integer(join(path, "sriov_totalvfs"), what)
    num = walker.integer(join(path, "sriov_numvfs"), what) if total is not None else None
    if total is None or num is None:
        return None
    vfs = []
    for n, vf_path in walker.virtfns(path, what):
        vf = walker.pci(os.path.basename(vf_path), vf_path)
        if vf is None:
            continue
        nd = netdev.netdev_of(vf_path, walker.warn)
        vfs.append(VirtualFunction(index=n, pci=vf.pci, interface=nd.interface if nd else None,
                                   hardware_address=nd.hardware_address if nd else None))
    if len(vfs) != num:
        walker.warn(join(path, "sriov_numvfs"), f"says {num} VFs but {len(vfs)} usable virtfnN links found on {what}")
    nd = netdev.netdev_of(path, walker.warn)
    interface = nd.interface if nd else None
    speed = walker.speed(interface, path) if interface else None
    return NicPF(
        index=index, pci=pci, interface=interface, speed_mbps=speed, total_vfs=total, num_vfs=num,
        vfs=tuple(vfs), product_name=_product(catalog, pci.vendor_id, pci.device_id),
        hardware_address=nd.hardware_address if nd else None,
    )


def _port(walker: SysfsReader, catalog: HardwareCatalog, item: FoundFunction, index: int) -> NicPF:
    """A network function without SR-IOV: the host's own port (on-board NIC, virtio-net, ...)."""
    nd = netdev.netdev_of(item.path, walker.warn)
    interface = nd.interface if nd else None
    speed = walker.speed(interface, item.path) if interface else None
    return NicPF(
        index=index, pci=item.pci, interface=interface, speed_mbps=speed, total_vfs=0, num_vfs=0,
        product_name=_product(catalog, item.pci.vendor_id, item.pci.device_id), sriov=False,
        hardware_address=nd.hardware_address if nd else None,
    )


def _product(catalog: HardwareCatalog, vendor: int, device: int) -> str:
    model = catalog.nics.get((vendor, device))
    return model.product_name if model else f"PCI {vendor:04x}:{device:04x}"
