"""Writes realistic fake sysfs trees for named node profiles, so discovery, slices and e2e run anywhere.

The layout follows the kernel's: functions live under devices/pciDDDD:BB/<root port>/[<switch ports>/]<BDF>,
bus/pci/devices/<BDF> and class/net/<if> are relative symlinks into that tree, SR-IOV PFs carry
virtfnN -> VF links and VFs a physfn link, attribute files end with a newline and hex values carry the
0x prefix as the kernel prints them. Output is a pure function of the profile (deterministic).

Health faults for the plugin: a file `fake-dra-fault` in a device's directory holds a one-line message;
its presence marks the device unhealthy (written by `set_fault`, read by driver.state.health.read_fault).
Real sysfs never has this file.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from driver.discovery.fakeprofiles import PROFILES
from driver.discovery.fakespec import (
    AMD, ASPEED, BROADCOM_PLX, CLASS_PCI_BRIDGE, INTEL, MELLANOX, NVIDIA, REALTEK, SAMSUNG, FakeFunction,
    FakeMdev, SysfsProfile, bdf_add,
)
from driver.discovery.reader import GPU_CLASSES, NVIDIA_VENDOR
from driver.errors import InputError

__all__ = [
    "FAULT_FILE", "PROFILES", "FakeFunction", "FakeMdev", "SysfsProfile", "make_sysfs",
    "set_fault", "write_profile",
]

FAULT_FILE = "fake-dra-fault"


# --- writer ---------------------------------------------------------------------------------------

_DRIVERS = {
    (MELLANOX, None): "mlx5_core",
    (INTEL, 0x1889): "iavf",
    (INTEL, 0x1521): "igb",
    (INTEL, 0x1520): "igbvf",
    (INTEL, None): "ice",
    (ASPEED, None): "ast",
    (SAMSUNG, None): "nvme",
    (REALTEK, None): "r8169",
}


def _default_driver(vendor: int, device: int, klass: int) -> str | None:
    """The in-tree driver a stock host binds (NVIDIA: the proprietary `nvidia` module)."""
    if klass >> 8 == 0x0604:
        return "pcieport"
    if vendor == NVIDIA:
        return "nvidia-nvswitch" if klass >> 8 == 0x0680 else "nvidia"
    return _DRIVERS.get((vendor, device)) or _DRIVERS.get((vendor, None))


def _write(path: Path, value: str | int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{value}\n", encoding="utf-8")


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


class _Tree:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.written: set[str] = set()

    def function(self, bdf: str, path: Path, vendor: int, device: int, klass: int, numa: int,
                 subsystem: tuple[int, int] = (0, 0), driver: str | None = None) -> None:
        if bdf in self.written:
            return
        self.written.add(bdf)
        _write(path / "vendor", f"0x{vendor:04x}")
        _write(path / "device", f"0x{device:04x}")
        _write(path / "class", f"0x{klass:06x}")
        _write(path / "subsystem_vendor", f"0x{subsystem[0]:04x}")
        _write(path / "subsystem_device", f"0x{subsystem[1]:04x}")
        _write(path / "numa_node", numa)
        _link(self.out / "bus" / "pci" / "devices" / bdf, path)
        driver = driver or _default_driver(vendor, device, klass)
        if driver:
            drv = self.out / "bus" / "pci" / "drivers" / driver
            _link(path / "driver", drv)
            _link(drv / bdf, path)
        # One IOMMU group per function (ACS everywhere), numbered in write order: deterministic.
        group = self.out / "kernel" / "iommu_groups" / str(len(self.written) - 1)
        _link(path / "iommu_group", group)
        _link(group / "devices" / bdf, path)

    def net(self, path: Path, interface: str, speed: int | None, mac_seed: int) -> None:
        netdir = path / "net" / interface
        _write(netdir / "speed", speed if speed is not None else -1)
        _write(netdir / "operstate", "up" if speed and speed > 0 else "down")
        _write(netdir / "address", ":".join(f"{(mac_seed >> (8 * i)) & 0xFF:02x}" for i in range(5, -1, -1)))
        _write(netdir / "mtu", 1500)
        _link(netdir / "device", path)
        _link(self.out / "class" / "net" / interface, netdir)

    def mdev(self, path: Path, types: tuple[FakeMdev, ...]) -> None:
        for t in types:
            d = path / "mdev_supported_types" / t.type_id
            _write(d / "name", t.name)
            _write(d / "available_instances", t.available)
            _write(d / "device_api", "vfio-pci")
            _write(d / "description", f"num_heads=1, frl_config=60, framebuffer={t.framebuffer_mib}M, "
                                      f"max_resolution=4096x2160, max_instance={t.max_instance}")
            (d / "devices").mkdir(exist_ok=True)
            # Every type has `create` (write a UUID to make an instance; Documentation/driver-api/
            # vfio-mediated-device.rst). The kernel's is write-only (0200); ours is an empty readable
            # file so the trees stay copyable by an unprivileged user.
            (d / "create").touch()

    def vendor_vfio(self, vf_path: Path, types: tuple[FakeMdev, ...]) -> None:
        lines = ["ID    : vGPU Name"] + [f"{t.type_id:<5} : {t.name}" for t in types]
        _write(vf_path / "nvidia" / "creatable_vgpu_types", "\n".join(lines))
        _write(vf_path / "nvidia" / "current_vgpu_type", 0)

    def write(self, fn: FakeFunction) -> None:
        parent = self.out / "devices" / f"pci{fn.root}"
        for bridge in fn.bridges:
            parent = parent / bridge
            root_port = bridge.startswith(fn.root)
            vendor, device = (AMD, 0x1483) if root_port else (BROADCOM_PLX, 0xC010)
            self.function(bridge, parent, vendor, device, CLASS_PCI_BRIDGE, fn.numa)
        path = parent / fn.bdf
        self.function(fn.bdf, path, fn.vendor, fn.device, fn.klass, fn.numa, fn.subsystem, fn.driver)
        if fn.total_vfs:
            _write(path / "sriov_totalvfs", fn.total_vfs)
            _write(path / "sriov_numvfs", fn.num_vfs)
            _write(path / "sriov_offset", fn.vf_offset)
            _write(path / "sriov_stride", 1)
            _write(path / "sriov_vf_device", f"{fn.vf_device:x}")
        seed = int(fn.bdf.replace(":", "").replace(".", ""), 16)
        if fn.interface:
            self.net(path, fn.interface, fn.speed, 0x0C4200000000 | seed << 8)
        if fn.mdev and not fn.mdev_on_vfs:
            self.mdev(path, fn.mdev)
        for i in range(fn.num_vfs):
            vf_bdf = bdf_add(fn.bdf, fn.vf_offset + i)
            vf_path = parent / vf_bdf
            self.function(vf_bdf, vf_path, fn.vendor, fn.vf_device, fn.klass, fn.numa)
            _link(path / f"virtfn{i}", vf_path)
            _link(vf_path / "physfn", path)
            if fn.interface:
                self.net(vf_path, f"{fn.interface}v{i}", None, 0x0E4200000000 | seed << 8 | i)
            if fn.mdev and fn.mdev_on_vfs and fn.vgpu_framework == "vendor-vfio":
                self.vendor_vfio(vf_path, fn.mdev)
            elif fn.mdev and fn.mdev_on_vfs:
                self.mdev(vf_path, fn.mdev)


def profile_named(name: str, flag: str | None = None) -> SysfsProfile:
    """PROFILES[name], or an InputError naming `flag` and the known profiles (commands check a
    --profile with this before they create anything)."""
    spec = PROFILES.get(name)
    if spec is None:
        where = f"{flag}: " if flag else ""
        raise InputError(f"{where}unknown sysfs profile {name!r}; known profiles: {', '.join(sorted(PROFILES))}")
    return spec


def make_sysfs(profile: str, out: Path, gpus: int | None = None) -> None:
    """Write the fake sysfs tree of `profile` (a key of PROFILES) under `out` (created; must be empty);
    `gpus`: keep only the first that many GPUs (by PCI address), everything else as it is."""
    spec = profile_named(profile)
    write_profile(spec if gpus is None else first_gpus(spec, gpus), out)


def is_gpu(fn: FakeFunction) -> bool:
    """What discovery takes for a GPU (its own test: an NVIDIA display or 3D controller; NVSwitches are bridges)."""
    return fn.vendor == NVIDIA_VENDOR and fn.klass >> 8 in GPU_CLASSES


def first_gpus(spec: SysfsProfile, count: int) -> SysfsProfile:
    """The profile with only its first `count` GPUs (a "2x H100" node from the 8-GPU HGX profile);
    InputError when it has fewer."""
    gpus = sorted((fn for fn in spec.functions if is_gpu(fn)), key=lambda fn: fn.bdf)
    if count < 0 or count > len(gpus):
        raise InputError(f"--gpus {count}: profile {spec.name} has {len(gpus)} GPU{'s' * (len(gpus) != 1)}; "
                         f"give 0 to {len(gpus)}")
    dropped = {fn.bdf for fn in gpus[count:]}
    return replace(spec, functions=tuple(fn for fn in spec.functions if fn.bdf not in dropped))


def write_profile(spec: SysfsProfile, out: Path) -> None:
    """Write a custom SysfsProfile (e.g. a variant of PROFILES[...] made with dataclasses.replace)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"output {out} exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    tree = _Tree(out)
    for fn in sorted(spec.functions, key=lambda f: f.bdf):
        tree.write(fn)
    (out / "class" / "net").mkdir(parents=True, exist_ok=True)
    _write(out / "devices" / "virtual" / "net" / "lo" / "speed", -1)
    _link(out / "class" / "net" / "lo", out / "devices" / "virtual" / "net" / "lo")


# --- health fault injection -----------------------------------------------------------------------

def _device_dir(root: Path, bdf: str) -> Path:
    link = Path(root) / "bus" / "pci" / "devices" / bdf
    if not link.exists():
        raise InputError(f"no PCI device {bdf} under {root}/bus/pci/devices")
    return link.resolve()


def set_fault(root: str | Path, bdf: str, message: str | None) -> None:
    """Mark device `bdf` unhealthy with `message` (written to <device dir>/fake-dra-fault); None clears it."""
    path = _device_dir(Path(root), bdf) / FAULT_FILE
    if message is None:
        path.unlink(missing_ok=True)
    else:
        tmp = path.with_name(FAULT_FILE + ".tmp")
        tmp.write_text(message.strip().replace("\n", " ")[:1024] + "\n", encoding="utf-8")
        tmp.replace(path)  # atomic: a concurrent health poll sees the old or the new message

