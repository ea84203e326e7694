"""Writes realistic fake sysfs trees for named node profiles, so discovery, slices and e2e run anywhere.

The layout follows the kernel's: functions live under devices/pciDDDD:BB/<root port>/[<switch ports>/]<BDF>,
bus/pci/devices/<BDF> and class/net/<if> are relative symlinks into that tree, SR-IOV PFs carry
virtfnN -> VF links and VFs a physfn link, attribute files end with a newline and hex values carry the
0x prefix as the kernel prints them. Output is a pure function of the profile (deterministic).

Health faults for the plugin: a file `fake-dra-fault` in a device's directory holds a one-line message;
its presence marks the device unhealthy (`set_fault` / `read_fault`). Real sysfs never has this file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from driver.discovery.sysfs import read_attribute
from driver.errors import InputError

FAULT_FILE = "fake-dra-fault"


@dataclass(frozen=True)
class FakeMdev:
    """One mdev type directory; `available` instances per parent function."""

    type_id: str
    name: str
    available: int
    framebuffer_mib: int
    max_instance: int


@dataclass(frozen=True)
class FakeFunction:
    """A PCI function to write, with its place in the hierarchy and optional SR-IOV/net/mdev details."""

    bdf: str
    vendor: int
    device: int
    klass: int
    numa: int
    root: str  # root complex, e.g. "0000:00" -> devices/pci0000:00
    bridges: tuple[str, ...] = ()  # bridge BDFs from the root port down to the device's parent
    total_vfs: int = 0
    num_vfs: int = 0
    vf_device: int = 0
    vf_offset: int = 1
    interface: str | None = None
    speed: int | None = None  # Mb/s; -1 written as-is for a down link
    mdev: tuple[FakeMdev, ...] = ()
    mdev_on_vfs: bool = False  # Ampere+ SR-IOV vGPU: types on each VF instead of the PF
    subsystem: tuple[int, int] = (0, 0)
    driver: str | None = None  # bound driver; None: the usual one for vendor/class (see _default_driver)


@dataclass(frozen=True)
class SysfsProfile:
    name: str
    description: str
    functions: tuple[FakeFunction, ...] = field(default_factory=tuple)


# --- building blocks ------------------------------------------------------------------------------

NVIDIA, MELLANOX, INTEL, ASPEED, SAMSUNG, BROADCOM_PLX, AMD = 0x10DE, 0x15B3, 0x8086, 0x1A03, 0x144D, 0x1000, 0x1022
CLASS_3D, CLASS_VGA, CLASS_BRIDGE_OTHER, CLASS_ETH, CLASS_IB, CLASS_NVME, CLASS_PCI_BRIDGE = (
    0x030200, 0x030000, 0x068000, 0x020000, 0x020700, 0x010802, 0x060400,
)


def _bdf_add(bdf: str, offset: int) -> str:
    """The function `offset` devfn steps after `bdf` (how SR-IOV numbers VFs: offset + i * stride)."""
    domain, bus, devfn = bdf[:4], int(bdf[5:7], 16), int(bdf[8:10], 16) << 3 | int(bdf[11], 16)
    devfn += offset
    bus += devfn >> 8
    devfn &= 0xFF
    return f"{domain}:{bus:02x}:{devfn >> 3:02x}.{devfn & 7}"


def _switch(root: str, bus: int) -> tuple[str, ...]:
    """Root port + a PCIe switch (upstream, downstream port) in front of a device on bus `bus`."""
    return (f"{root}:01.0", f"0000:{bus - 2:02x}:00.0", f"0000:{bus - 1:02x}:00.0")


def _vgpu_types(prefix: str, board_gb: int, sizes: tuple[int, ...], first_id: int, per_vf: bool) -> tuple[FakeMdev, ...]:
    # Type ids are synthetic (real ones depend on the vGPU manager release); names follow NVIDIA's
    # "NVIDIA <profile>" form of current releases.
    return tuple(
        FakeMdev(
            type_id=f"nvidia-{first_id + i}",
            name=f"NVIDIA {prefix}-{gb}C",
            available=1 if per_vf else board_gb // gb,
            framebuffer_mib=gb * 1024,
            max_instance=board_gb // gb,
        )
        for i, gb in enumerate(sizes)
    )


def _gpu(bdf: str, device: int, numa: int, root: str, **kw) -> FakeFunction:
    bus = int(bdf[5:7], 16)
    return FakeFunction(bdf, NVIDIA, device, CLASS_3D, numa, root, _switch(root, bus), subsystem=(NVIDIA, 0x1450), **kw)


def _nic(bdf: str, vendor: int, device: int, numa: int, root: str, interface: str, speed: int, *,
         total_vfs: int, num_vfs: int, vf_device: int, vf_offset: int, switch: bool = True) -> FakeFunction:
    bridges = _switch(root, int(bdf[5:7], 16)) if switch else (f"{root}:03.1",)
    return FakeFunction(
        bdf, vendor, device, CLASS_ETH, numa, root, bridges, total_vfs=total_vfs, num_vfs=num_vfs,
        vf_device=vf_device, vf_offset=vf_offset, interface=interface, speed=speed,
    )


def _other(bdf: str, vendor: int, device: int, klass: int, numa: int, root: str) -> FakeFunction:
    return FakeFunction(bdf, vendor, device, klass, numa, root, (f"{root}:07.1",))


def _BMC(root: str) -> FakeFunction:
    """The BMC's VGA function: a display-class device that is not NVIDIA and must not become a GPU."""
    return _other("0000:63:00.0", ASPEED, 0x2000, CLASS_VGA, 0, root)


def _NVME(root: str, bdf: str) -> FakeFunction:
    return _other(bdf, SAMSUNG, 0xA80A, CLASS_NVME, 0, root)


def _dgx_a100() -> SysfsProfile:
    gpus = ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
            "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"]
    nics = ["0000:0c:00.0", "0000:12:00.0", "0000:54:00.0", "0000:5a:00.0",
            "0000:8d:00.0", "0000:94:00.0", "0000:ba:00.0", "0000:cc:00.0"]
    roots = ["0000:00", "0000:00", "0000:40", "0000:40", "0000:80", "0000:80", "0000:c0", "0000:c0"]
    fns: list[FakeFunction] = []
    for i, (g, n, r) in enumerate(zip(gpus, nics, roots)):
        numa = 0 if i < 4 else 1
        fns.append(_gpu(g, 0x20B0, numa, r, total_vfs=16))
        fns.append(_nic(n, MELLANOX, 0x101B, numa, r, f"enp{int(n[5:7], 16)}s0np0", 200000,
                        total_vfs=16, num_vfs=4, vf_device=0x101C, vf_offset=1))
    for k, bdf in enumerate(["0000:c4:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0", "0000:c9:00.0"]):
        fns.append(FakeFunction(bdf, NVIDIA, 0x1AF1, CLASS_BRIDGE_OTHER, 1, "0000:c0", ("0000:c0:01.1",)))
    for port, bdf in enumerate(["0000:e1:00.0", "0000:e1:00.1"]):
        fns.append(_nic(bdf, MELLANOX, 0x101D, 1, "0000:e0", f"enp225s0f{port}", 100000,
                        total_vfs=8, num_vfs=0, vf_device=0x101E, vf_offset=2 - port, switch=False))
    fns.append(_BMC("0000:60"))
    fns.append(_NVME("0000:20", "0000:22:00.0"))
    return SysfsProfile("dgx-a100", "DGX-A100-like: 8x A100-SXM4-40GB, 6 NVSwitches, 8x ConnectX-6 200G "
                        "(4 VFs each), 2x ConnectX-6 Dx 100G storage ports (SR-IOV off), BMC VGA, NVMe", tuple(fns))


def _h100() -> SysfsProfile:
    gpus = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
            "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]
    roots = ["0000:15", "0000:37", "0000:48", "0000:59", "0000:97", "0000:b7", "0000:c7", "0000:d7"]
    fns = [_gpu(g, 0x2330, 0 if i < 4 else 1, r, total_vfs=32) for i, (g, r) in enumerate(zip(gpus, roots))]
    for k, bdf in enumerate(["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]):
        fns.append(FakeFunction(bdf, NVIDIA, 0x22A3, CLASS_BRIDGE_OTHER, 0, "0000:00", ("0000:00:01.1",)))
    for k, (bdf, root) in enumerate([("0000:1d:00.0", "0000:15"), ("0000:45:00.0", "0000:37"),
                                     ("0000:9f:00.0", "0000:97"), ("0000:c5:00.0", "0000:b7")]):
        fns.append(_nic(bdf, MELLANOX, 0x1021, 0 if k < 2 else 1, root, f"ens{k + 1}np0", 400000,
                        total_vfs=16, num_vfs=8, vf_device=0x101E, vf_offset=1))
    fns.append(_BMC("0000:00"))
    return SysfsProfile("h100", "HGX-H100-like: 8x H100 80GB HBM3 (SXM5), 4 NVSwitches, 4x ConnectX-7 400G "
                        "(8 VFs each), BMC VGA", tuple(fns))


def _vgpu_host() -> SysfsProfile:
    a100 = _vgpu_types("A100D", 80, (80, 40, 20, 16, 10, 8, 4), 500, per_vf=True)
    t4 = _vgpu_types("T4", 16, (16, 8, 4), 230, per_vf=False)
    fns = [
        _gpu("0000:3b:00.0", 0x20B5, 0, "0000:3a", total_vfs=20, num_vfs=20, vf_device=0x20B5, vf_offset=4,
             mdev=a100, mdev_on_vfs=True),
        _gpu("0000:af:00.0", 0x20B5, 1, "0000:ae", total_vfs=20, num_vfs=20, vf_device=0x20B5, vf_offset=4,
             mdev=a100, mdev_on_vfs=True),
        _gpu("0000:5e:00.0", 0x1EB8, 0, "0000:5d", mdev=t4),
        _gpu("0000:d8:00.0", 0x1EB8, 1, "0000:d7", mdev=t4),
        _gpu("0000:86:00.0", 0x27B8, 1, "0000:85"),  # no vGPU manager bound: no mdev types
        _nic("0000:18:00.0", INTEL, 0x159B, 0, "0000:17", "ens1f0", 25000,
             total_vfs=64, num_vfs=4, vf_device=0x1889, vf_offset=16),
        _nic("0000:18:00.1", INTEL, 0x159B, 0, "0000:17", "ens1f1", -1,  # link down
             total_vfs=64, num_vfs=0, vf_device=0x1889, vf_offset=79),
        _BMC("0000:00"),
    ]
    return SysfsProfile("vgpu-host", "vGPU host: 2x A100 80GB PCIe with SR-IOV vGPU (types on 20 VFs each), "
                        "2x T4 (types on the PF), 1x L4 without vGPU, Intel E810 25G (4 VFs; port 2 down)", tuple(fns))


def _no_gpu() -> SysfsProfile:
    fns = [
        _nic("0000:31:00.0", INTEL, 0x1592, 0, "0000:30", "ens2f0", 100000,
             total_vfs=128, num_vfs=8, vf_device=0x1889, vf_offset=8, switch=False),
        FakeFunction("0000:02:00.0", 0x10EC, 0x8168, CLASS_ETH, 0, "0000:00", ("0000:00:1c.0",), interface="eno1", speed=1000),
        _BMC("0000:00"),
        _NVME("0000:00", "0000:01:00.0"),
    ]
    return SysfsProfile("no-gpu", "Host without GPUs: Intel E810-C 100G (8 VFs), on-board NIC without SR-IOV, "
                        "BMC VGA, NVMe", tuple(fns))


def _demo() -> SysfsProfile:
    a100 = _vgpu_types("A100", 40, (40, 20, 10, 8, 5, 4), 470, per_vf=True)
    fns = [
        _gpu("0000:07:00.0", 0x20B0, 0, "0000:00", total_vfs=16),
        _gpu("0000:0f:00.0", 0x20B0, 0, "0000:00", total_vfs=16, num_vfs=16, vf_device=0x20B0, vf_offset=4,
             mdev=a100, mdev_on_vfs=True),
        _nic("0000:0c:00.0", MELLANOX, 0x101D, 0, "0000:00", "ens3f0", 100000,
             total_vfs=16, num_vfs=8, vf_device=0x101E, vf_offset=2),
    ]
    return SysfsProfile("demo", "Demo node: 2x A100-SXM4-40GB (the second vGPU-capable, 16 VFs with mdev types), "
                        "1x ConnectX-6 Dx 100G with 8 VFs", tuple(fns))


PROFILES: dict[str, SysfsProfile] = {p.name: p for p in (_demo(), _dgx_a100(), _h100(), _vgpu_host(), _no_gpu())}


# --- writer ---------------------------------------------------------------------------------------

_DRIVERS = {
    (MELLANOX, None): "mlx5_core",
    (INTEL, 0x1889): "iavf",
    (INTEL, None): "ice",
    (ASPEED, None): "ast",
    (SAMSUNG, None): "nvme",
    (0x10EC, None): "r8169",
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

    def write(self, fn: FakeFunction) -> None:
        parent = self.out / "devices" / f"pci{fn.root}"
        for bridge in fn.bridges:
            parent = parent / bridge
            self.function(bridge, parent, AMD if bridge.startswith(fn.root) else BROADCOM_PLX, 0x1483 if bridge.startswith(fn.root) else 0xC010, CLASS_PCI_BRIDGE, fn.numa)
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
            vf_bdf = _bdf_add(fn.bdf, fn.vf_offset + i)
            vf_path = parent / vf_bdf
            self.function(vf_bdf, vf_path, fn.vendor, fn.vf_device, fn.klass, fn.numa)
            _link(path / f"virtfn{i}", vf_path)
            _link(vf_path / "physfn", path)
            if fn.interface:
                self.net(vf_path, f"{fn.interface}v{i}", None, 0x0E4200000000 | seed << 8 | i)
            if fn.mdev and fn.mdev_on_vfs:
                self.mdev(vf_path, fn.mdev)


def make_sysfs(profile: str, out: Path) -> None:
    """Write the fake sysfs tree of `profile` (a key of PROFILES) under `out` (created; must be empty)."""
    spec = PROFILES.get(profile)
    if spec is None:
        raise InputError(f"unknown sysfs profile {profile!r}; known profiles: {', '.join(sorted(PROFILES))}")
    write_profile(spec, out)


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


def read_fault(root: str | Path, bdf: str) -> str | None:
    """The injected fault message of device `bdf`, or None when healthy (or the device is gone)."""
    path = Path(root) / "bus" / "pci" / "devices" / bdf / FAULT_FILE
    try:
        return read_attribute(str(path)) or "fault injected"
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        # Present but unreadable still means "something is wrong with this device".
        return f"fault file unreadable: {exc}"
