"""Reading one sysfs tree under a configurable root: attribute files, symlinks and PCI functions.

Why its own module: both the inventory walk (driver.discovery.sysfs) and the vGPU type readers
(driver.discovery.vgpu) use these primitives, and keeping them here lets both import downwards instead
of into each other. Why so defensive: sysfs on real machines has half-bound drivers, links that vanish
while we read (hotplug, VF re-creation) and files that error on read (`speed` of a down link). One bad
device must never hide the others, so every problem becomes a warning that names the path.
Paths are plain strings with os.path, not pathlib: discovery runs on every publish pass and pathlib's
per-object parsing was most of its cost.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from dataclasses import dataclass
from os.path import join

from driver.model.inventory import PciDevice

log = logging.getLogger("fake-dra.discovery")

NVIDIA_VENDOR = 0x10DE
# PCI base class 0x03 (display): subclass 0x00 VGA, 0x02 3D controller. NVSwitch is 0x0680 (bridge).
GPU_CLASSES = (0x0300, 0x0302)
NETWORK_BASE_CLASS = 0x02
CANDIDATE_BASE_CLASSES = (0x03, NETWORK_BASE_CLASS)
# The kernel prints the domain with %04x, so domains above 0xffff (Intel VMD: 10000 and up) have more digits.
BDF = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_VIRTFN = re.compile(r"^virtfn(\d+)$")
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")


# A sysfs attribute is at most one page; anything longer is not sysfs.
MAX_ATTRIBUTE_BYTES = 4096


def read_attribute(path: str) -> str:
    """Contents of one sysfs attribute file, stripped.

    Opened non-blocking and checked to be a regular file, so a FIFO or device node planted in a tree
    cannot hang discovery, and at most one page is read, so a huge file cannot exhaust memory.
    Raises OSError (incl. FileNotFoundError), UnicodeDecodeError, or ValueError (not a regular file /
    too large).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = os.read(fd, MAX_ATTRIBUTE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_ATTRIBUTE_BYTES:
        raise ValueError(f"larger than {MAX_ATTRIBUTE_BYTES} bytes")
    return data.decode("utf-8").strip()


def _link_name(path: str) -> str | None:
    """Basename of a symlink's target (`driver`, `iommu_group`); None when absent. Optional facts:
    an unbound device has no `driver`, a host without IOMMU no `iommu_group` - neither is a warning."""
    try:
        return os.path.basename(os.readlink(path)) or None
    except OSError:
        return None


@dataclass
class FoundFunction:
    """A PCI function that passed the basic checks, with where it lives."""

    pci: PciDevice
    path: str  # resolved device directory


class SysfsReader:
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

    def pci(self, address: str, link: str, *, candidates_only: bool = False) -> FoundFunction | None:
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
        return FoundFunction(
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

    def functions(self) -> dict[str, FoundFunction]:
        bus = join(self.root, "bus", "pci", "devices")
        if not os.path.isdir(bus):
            self.warn(bus, "missing; no PCI devices discovered")
            return {}
        found: dict[str, FoundFunction] = {}
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
