"""An independent writer of Linux sysfs trees, used to hold discovery and rendering against real hosts.

Deliberately separate from driver.discovery.fakesysfs/fakeprofiles: those are the product's own idea of
sysfs, so testing the product with them can only show that it agrees with itself. This builder follows
the kernel's layout as documented and captured on real machines:

- every PCI function lives at devices/pciDDDD:BB/<root port>/[<bridges>/]<BDF>/ (Documentation/ABI/
  testing/sysfs-bus-pci), bus/pci/devices/<BDF> is a relative symlink to it;
- attribute files end in a newline; vendor/device/class are "0x"-prefixed hex, numa_node a signed
  decimal (-1 when the platform does not say);
- SR-IOV PFs carry sriov_totalvfs/sriov_numvfs/sriov_offset/sriov_stride/sriov_vf_device and
  virtfnN links, VFs a physfn link (Documentation/ABI/testing/sysfs-bus-pci);
- netdevs live in <fn>/net/<if>/ with class/net/<if> linking there; `speed` is Mb/s, -1 when the link
  is down or unknown (ethtool SPEED_UNKNOWN printed with %d);
- mdev types: <fn>/mdev_supported_types/<type>/{name,available_instances,device_api,description,
  devices/} (Documentation/ABI/testing/sysfs-bus-vfio-mdev);
- NVIDIA vendor-specific VFIO (vGPU 17+): <VF>/nvidia/{creatable_vgpu_types,current_vgpu_type}.

Only the standard library is used, so a bug in a shared helper cannot hide in both sides.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# Class codes as the kernel prints them (PCI Code and ID Assignment spec).
VGA = 0x030000
D3 = 0x030200
BRIDGE_OTHER = 0x068000
PCI_BRIDGE = 0x060400
ETHERNET = 0x020000
INFINIBAND = 0x020700
NVME = 0x010802


@dataclass
class Mdev:
    """One mdev type directory: `name` as the vGPU manager writes it (with its GRID/NVIDIA prefix)."""

    type_id: str
    name: str
    available: int
    description: str = ""


@dataclass
class Fn:
    """One PCI function and what hangs off it."""

    bdf: str
    vendor: int
    device: int
    klass: int
    numa: int = -1
    bridges: tuple[str, ...] = ()  # root port first; the root complex is derived from the first bridge
    driver: str | None = None
    total_vfs: int | None = None  # None: no SR-IOV capability (no sriov_* files at all)
    num_vfs: int = 0
    vf_offset: int = 1
    vf_stride: int = 1
    vf_device: int = 0
    interface: str | None = None
    speed: int | None = None  # written as-is; None writes no speed file
    vf_interfaces: bool = True
    pf_mdev: list[Mdev] = field(default_factory=list)  # pre-Ampere: types on the PF
    vf_mdev: list[Mdev] = field(default_factory=list)  # Ampere+ (mdev): types on every VF
    vf_creatable: str | None = None  # vendor VFIO: creatable_vgpu_types text of every free VF
    vf_current: dict[int, int] = field(default_factory=dict)  # VF index -> current_vgpu_type
    # subsystem_vendor/subsystem_device of the PF and its VFs (lspci's "Subsystem:"); None: vendor:0000
    subsystem: tuple[int, int] | None = None


def _w(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{value}\n", encoding="utf-8")


def _ln(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(os.path.relpath(target, link.parent))


def _vf_bdf(pf: str, n: int, offset: int, stride: int) -> str:
    """Routing ID arithmetic of SR-IOV: VF n's RID = PF RID + offset + n * stride (bus may carry)."""
    domain, bus, rest = pf.split(":")
    dev, fn = rest.split(".")
    rid = (int(bus, 16) << 8 | int(dev, 16) << 3 | int(fn)) + offset + n * stride
    return f"{domain}:{rid >> 8:02x}:{(rid >> 3) & 0x1F:02x}.{rid & 7}"


class Host:
    """A sysfs tree under `root` (the directory that plays /sys)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._group = 0
        (self.root / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
        (self.root / "class" / "net").mkdir(parents=True, exist_ok=True)

    def _dir(self, bridges: tuple[str, ...], bdf: str) -> Path:
        anchor = bridges[0] if bridges else bdf
        domain, bus = anchor.split(":")[:2]
        path = self.root / "devices" / f"pci{domain}:{bus}"
        for b in bridges:
            path = path / b
            if b.startswith("pci"):  # a nested root bus, e.g. Intel VMD's pci10000:00
                continue
            if not (path / "class").exists():
                self._basic(path, b, 0x8086, 0x2030, PCI_BRIDGE, -1, "pcieport")
        return path / bdf

    def _basic(self, path: Path, bdf: str, vendor: int, device: int, klass: int, numa: int,
               driver: str | None, subsystem: tuple[int, int] | None = None) -> None:
        _w(path / "vendor", f"0x{vendor:04x}")
        _w(path / "device", f"0x{device:04x}")
        _w(path / "class", f"0x{klass:06x}")
        _w(path / "numa_node", numa)
        sub_vendor, sub_device = subsystem or (vendor, 0)
        _w(path / "subsystem_vendor", f"0x{sub_vendor:04x}")
        _w(path / "subsystem_device", f"0x{sub_device:04x}")
        _ln(self.root / "bus" / "pci" / "devices" / bdf, path)
        if driver:
            drv = self.root / "bus" / "pci" / "drivers" / driver
            drv.mkdir(parents=True, exist_ok=True)
            _ln(path / "driver", drv)
        group = self.root / "kernel" / "iommu_groups" / str(self._group)
        self._group += 1
        (group / "devices").mkdir(parents=True, exist_ok=True)
        _ln(path / "iommu_group", group)
        _ln(group / "devices" / bdf, path)

    def _net(self, path: Path, interface: str, speed: int | None) -> None:
        netdir = path / "net" / interface
        netdir.mkdir(parents=True, exist_ok=True)
        if speed is not None:
            _w(netdir / "speed", speed)
        _w(netdir / "operstate", "up" if speed and speed > 0 else "down")
        _ln(netdir / "device", path)
        _ln(self.root / "class" / "net" / interface, netdir)

    @staticmethod
    def _mdev(path: Path, types: list[Mdev]) -> None:
        for t in types:
            d = path / "mdev_supported_types" / t.type_id
            _w(d / "name", t.name)
            _w(d / "available_instances", t.available)
            _w(d / "device_api", "vfio-pci")
            _w(d / "description", t.description)
            (d / "devices").mkdir(parents=True, exist_ok=True)

    def add(self, fn: Fn) -> None:
        path = self._dir(fn.bridges, fn.bdf)
        self._basic(path, fn.bdf, fn.vendor, fn.device, fn.klass, fn.numa, fn.driver, fn.subsystem)
        if fn.total_vfs is not None:
            _w(path / "sriov_totalvfs", fn.total_vfs)
            _w(path / "sriov_numvfs", fn.num_vfs)
            _w(path / "sriov_offset", fn.vf_offset)
            _w(path / "sriov_stride", fn.vf_stride)
            _w(path / "sriov_vf_device", f"{fn.vf_device:x}")  # the kernel prints it without 0x
        if fn.interface:
            self._net(path, fn.interface, fn.speed)
        self._mdev(path, fn.pf_mdev)
        for n in range(fn.num_vfs):
            vf = _vf_bdf(fn.bdf, n, fn.vf_offset, fn.vf_stride)
            vf_path = path.parent / vf
            self._basic(vf_path, vf, fn.vendor, fn.vf_device, fn.klass, fn.numa, fn.driver, fn.subsystem)
            _ln(path / f"virtfn{n}", vf_path)
            _ln(vf_path / "physfn", path)
            if fn.interface and fn.vf_interfaces:
                self._net(vf_path, f"{fn.interface}v{n}", -1)
            self._mdev(vf_path, fn.vf_mdev)
            if fn.vf_creatable is not None:
                current = fn.vf_current.get(n, 0)
                _w(vf_path / "nvidia" / "current_vgpu_type", current)
                _w(vf_path / "nvidia" / "creatable_vgpu_types", "" if current else fn.vf_creatable)

    def add_all(self, fns: list[Fn]) -> Host:
        for fn in fns:
            self.add(fn)
        return self


def vf_addresses(pf: str, count: int, offset: int = 1, stride: int = 1) -> list[str]:
    return [_vf_bdf(pf, n, offset, stride) for n in range(count)]
