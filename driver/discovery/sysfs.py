"""Reads GPUs, vGPU (mdev) types and SR-IOV NICs from a Linux sysfs tree under a configurable root.

Why not libudev: it ignores alternate roots, and fixtures, containers with a host mount and tests all need
ROOT != /sys. Why so defensive: sysfs on real machines has half-bound drivers, links that vanish while we
read (hotplug, VF re-creation) and files that error on read (`speed` of a down link). One bad device must
never hide the others, so every problem becomes a warning that names the path and the device is skipped.
Paths are plain strings with os.path, not pathlib: discovery runs on every publish pass and pathlib's
per-object parsing was most of its cost.
"""

from __future__ import annotations

import errno
import logging
import os
import re
from dataclasses import dataclass
from os.path import join
from pathlib import Path

from driver.discovery import netdev, vgpu
from driver.discovery.sysfsio import BDF, MAX_ATTRIBUTE_BYTES, read_attribute  # noqa: F401 (re-exported)
from driver.errors import DiscoveryError
from driver.model.hardware import HardwareCatalog
from driver.model.inventory import Gpu, Inventory, NicPF, PciDevice, VirtualFunction

log = logging.getLogger("fake-dra.discovery")

NVIDIA_VENDOR = 0x10DE
# PCI base class 0x03 (display): subclass 0x00 VGA, 0x02 3D controller. NVSwitch is 0x0680 (bridge).
GPU_CLASSES = (0x0300, 0x0302)
NETWORK_BASE_CLASS = 0x02
CANDIDATE_BASE_CLASSES = (0x03, NETWORK_BASE_CLASS)
_VIRTFN = re.compile(r"^virtfn(\d+)$")
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")


def _link_name(path: str) -> str | None:
    """Basename of a symlink's target (`driver`, `iommu_group`); None when absent. Optional facts:
    an unbound device has no `driver`, a host without IOMMU no `iommu_group` - neither is a warning."""
    try:
        return os.path.basename(os.readlink(path)) or None
    except OSError:
        return None


@dataclass
class _Found:
    """A PCI function that passed the basic checks, with where it lives."""

    pci: PciDevice
    path: str  # resolved device directory


class _Walker:
    """One discovery pass: collects warnings instead of raising for anything below the root."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.devices_root = join(os.path.realpath(root), "devices")
        self.warnings: list[str] = []

    def warn(self, path: str, problem: str) -> None:
        message = f"{path}: {problem}"
        self.warnings.append(message)
        log.warning(message, extra={"path": str(path)})

    # --- file readers: None means "problem already reported" ------------------------------------

    def text(self, path: str, what: str, *, required: bool = True) -> str | None:
        try:
            return read_attribute(path)
        except FileNotFoundError:
            if required:
                self.warn(path, f"missing; skipping {what}")
            return None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            self.warn(path, f"unreadable ({exc.__class__.__name__}: {exc}); skipping {what}")
            return None

    def hex(self, path: str, what: str, bits: int) -> int | None:
        raw = self.text(path, what)
        if raw is None:
            return None
        if not _HEX.match(raw) or int(raw, 16) >= 1 << bits:
            self.warn(path, f"garbled value {raw[:40]!r} (want a {bits}-bit hex number); skipping {what}")
            return None
        return int(raw, 16)

    def integer(self, path: str, what: str, *, minimum: int = 0, required: bool = True) -> int | None:
        raw = self.text(path, what, required=required)
        if raw is None:
            return None
        try:
            value = int(raw, 10)
        except ValueError:
            self.warn(path, f"garbled value {raw[:40]!r} (want an integer); skipping {what}")
            return None
        if value < minimum:
            self.warn(path, f"value {value} below {minimum}; skipping {what}")
            return None
        return value

    def resolve(self, link: str, what: str) -> str | None:
        """Resolve a symlink strictly inside ROOT/devices (a link may not escape the root)."""
        try:
            real = os.path.realpath(link, strict=True)
        except RuntimeError:  # Python < 3.13 reports loops this way
            self.warn(link, f"symlink loop; skipping {what}")
            return None
        except OSError as exc:
            problem = "symlink loop" if exc.errno == errno.ELOOP else f"broken symlink ({exc.strerror or exc})"
            self.warn(link, f"{problem}; skipping {what}")
            return None
        if not real.startswith(self.devices_root + os.sep):
            self.warn(link, f"resolves to {real}, outside {self.devices_root}; skipping {what}")
            return None
        if not os.path.isdir(real):
            self.warn(link, f"resolves to {real}, which is not a directory; skipping {what}")
            return None
        return real

    # --- PCI functions ---------------------------------------------------------------------------

    def pci(self, address: str, link: str, *, candidates_only: bool = False) -> _Found | None:
        """Read one PCI function. `candidates_only`: silently drop VFs (reached through their PF's
        virtfnN links instead) and classes we never publish (bridges, storage, ...) before reading
        more than `class` — most functions on a server are neither GPUs nor NICs."""
        what = f"PCI device {address}"
        real = self.resolve(link, what)
        if real is None:
            return None
        name = os.path.basename(real)
        if name != address:
            self.warn(link, f"resolves to {name!r}, not a directory named {address}; skipping {what}")
            return None
        if candidates_only and os.path.lexists(join(real, "physfn")):
            return None
        klass = self.hex(join(real, "class"), what, 24)
        if klass is None or (candidates_only and klass >> 16 not in CANDIDATE_BASE_CLASSES):
            return None
        vendor = self.hex(join(real, "vendor"), what, 16)
        device = self.hex(join(real, "device"), what, 16) if vendor is not None else None
        if vendor is None or device is None:
            return None
        numa = self.numa(join(real, "numa_node"))
        driver = _link_name(join(real, "driver"))
        group = _link_name(join(real, "iommu_group"))
        parts = real[len(self.devices_root) + 1:].split(os.sep)
        # Same rule as k8s.io/dynamic-resource-allocation deviceattribute.resolvePCIeRoot: the first
        # path component under /sys/devices, e.g. "pci0000:00".
        pcie_root = parts[0] if len(parts) > 1 and parts[0].startswith("pci") else None
        if pcie_root is None:
            self.warn(link, f"resolves to {real}, not below a devices/pciDDDD:BB root complex; pcieRoot unknown")
        return _Found(
            PciDevice(
                address=address, vendor_id=vendor, device_id=device, class_code=klass,
                numa_node=numa, pcie_root=pcie_root, sysfs_path=real, driver=driver,
                iommu_group=int(group) if group is not None and group.isdigit() else None,
            ),
            real,
        )

    def numa(self, path: str) -> int | None:
        # numa_node is optional information: a bad value makes it unknown, it does not skip the device.
        raw = self.text(path, "numa_node", required=False)
        if raw is None:
            return None
        try:
            value = int(raw, 10)
        except ValueError:
            self.warn(path, f"garbled value {raw[:40]!r}; NUMA node unknown")
            return None
        return value if value >= 0 else None

    def functions(self) -> dict[str, _Found]:
        bus = join(self.root, "bus", "pci", "devices")
        if not os.path.isdir(bus):
            self.warn(bus, "missing; no PCI devices discovered")
            return {}
        found: dict[str, _Found] = {}
        try:
            names = sorted(os.listdir(bus))
        except OSError as exc:
            self.warn(bus, f"unreadable ({exc}); no PCI devices discovered")
            return {}
        for name in names:
            if not BDF.match(name):
                self.warn(join(bus, name), "not a PCI address (DDDD:BB:DD.F, lower-case hex); skipping")
                continue
            item = self.pci(name, join(bus, name), candidates_only=True)
            if item is not None:
                found[name] = item
        return found

    def virtfns(self, path: str, owner: str) -> list[tuple[int, str]]:
        """(N, resolved VF dir) for each `virtfnN` link of a PF, sorted by N."""
        out = []
        try:
            entries = sorted(os.listdir(path))
        except OSError as exc:
            self.warn(path, f"unreadable ({exc}); skipping VFs of {owner}")
            return []
        for entry in entries:
            match = _VIRTFN.match(entry)
            if not match:
                continue
            real = self.resolve(join(path, entry), f"VF {entry} of {owner}")
            if real is not None:
                out.append((int(match.group(1)), real))
        out.sort(key=lambda item: item[0])
        return out

    def netdev(self, path: str) -> netdev.NetDev | None:
        """The function's first network interface and its hardware address (None: no netdev)."""
        return netdev.netdev_of(path, self.warn)

    def speed(self, interface: str, device_path: str) -> int | None:
        path = join(self.root, "class", "net", interface, "speed")
        if not os.path.lexists(path):
            path = join(device_path, "net", interface, "speed")
        try:
            raw = read_attribute(path)
        except (OSError, UnicodeDecodeError, ValueError):
            # The kernel answers EINVAL on read for a down link: unknown speed, not an error.
            log.debug("link speed unreadable", extra={"path": str(path)})
            return None
        try:
            value = int(raw, 10)
        except ValueError:
            self.warn(path, f"garbled value {raw[:40]!r}; link speed unknown")
            return None
        return value if value > 0 else None


def discover(root: str | Path, catalog: HardwareCatalog) -> Inventory:
    """Inventory of the node whose sysfs is mounted at `root` (e.g. "/sys" or a fake tree).

    Raises DiscoveryError only when `root` itself is unusable; everything below it that is garbled,
    missing, unreadable, unknown or looping is skipped with a warning in Inventory.warnings.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise DiscoveryError(f"sysfs root {root!r} does not exist or is not a directory (--sysfs-root)")
    walker = _Walker(root)
    functions = walker.functions()
    gpus: list[Gpu] = []
    nics: list[NicPF] = []
    # functions() already dropped VFs (they are reached through their PF's virtfnN links).
    for item in functions.values():
        pci = item.pci
        if pci.vendor_id == NVIDIA_VENDOR and pci.class_code >> 8 in GPU_CLASSES:
            gpu = _gpu(walker, catalog, item, len(gpus))
            if gpu is not None:
                gpus.append(gpu)
        elif pci.class_code >> 16 == NETWORK_BASE_CLASS:
            nic = _nic(walker, catalog, item, len(nics))
            if nic is not None:
                nics.append(nic)
    return Inventory(gpus=tuple(gpus), nics=tuple(nics), warnings=tuple(walker.warnings))


def _gpu(walker: _Walker, catalog: HardwareCatalog, item: _Found, index: int) -> Gpu | None:
    pci, path = item.pci, item.path
    model = catalog.gpu(pci.device_id)
    if model is None:
        walker.warn(
            join(path, "device"),
            f"unknown NVIDIA GPU device ID 0x{pci.device_id:04x}; skipping GPU {pci.address} "
            "(add the model under `hardware.gpus` in the driver config)",
        )
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


def _nic(
    walker: _Walker, catalog: HardwareCatalog, item: _Found, index: int
) -> NicPF | None:
    pci, path = item.pci, item.path
    what = f"NIC {pci.address}"
    if not os.path.lexists(join(path, "sriov_totalvfs")):
        log.debug("network function without SR-IOV ignored", extra={"path": str(path)})
        return None
    total = walker.integer(join(path, "sriov_totalvfs"), what)
    num = walker.integer(join(path, "sriov_numvfs"), what) if total is not None else None
    if total is None or num is None:
        return None
    vfs = []
    for n, vf_path in walker.virtfns(path, what):
        vf = walker.pci(os.path.basename(vf_path), vf_path)
        if vf is None:
            continue
        nd = walker.netdev(vf_path)
        vfs.append(VirtualFunction(index=n, pci=vf.pci, interface=nd.interface if nd else None,
                                   hardware_address=nd.hardware_address if nd else None))
    if len(vfs) != num:
        walker.warn(join(path, "sriov_numvfs"), f"says {num} VFs but {len(vfs)} usable virtfnN links found on {what}")
    nd = walker.netdev(path)
    interface = nd.interface if nd else None
    speed = walker.speed(interface, path) if interface else None
    model = catalog.nics.get((pci.vendor_id, pci.device_id))
    product = model.product_name if model else f"PCI {pci.vendor_id:04x}:{pci.device_id:04x}"
    return NicPF(
        index=index, pci=pci, interface=interface, speed_mbps=speed, total_vfs=total, num_vfs=num,
        vfs=tuple(vfs), product_name=product, hardware_address=nd.hardware_address if nd else None,
    )
