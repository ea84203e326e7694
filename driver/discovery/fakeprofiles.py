"""The named fake nodes (`fake-dra make-sysfs --profile NAME`): realistic topologies, small enough to test.
The hosts of late 2026 (HGX B200, RTX PRO 6000, GH200) live in driver.discovery.fakeprofiles_2026.

Addresses, root complexes and NUMA placement follow the shape of the real systems (DGX A100 puts each
GPU and its ConnectX behind one PCIe switch, HGX H100/H200 one root complex per GPU). vGPU type names
are what the board's host driver reports: per board (a DGX A100's 10de:20b0 offers `A100X-*`, the PCIe
boards `A100-*`/`A100D-*`), with the `GRID ` prefix of the vGPU 14 (R510) tables or the `NVIDIA ` prefix
of later releases. mdev type ids are the R510 vgpuConfig.xml ones where known (A100X: nvidia-457..467,
704; see driver/hardware/data/gpus.yaml, source vgpuconfig-510), otherwise synthetic.
"""

from __future__ import annotations

from driver.discovery.fakeprofiles_2026 import LATE_2026_PROFILES
from driver.discovery.fakespec import (
    ASPEED, CLASS_3D, CLASS_BRIDGE_OTHER, CLASS_ETH, CLASS_NVME, CLASS_VGA, INTEL, MELLANOX, NVIDIA, REALTEK,
    SAMSUNG, FakeFunction, FakeMdev, SysfsProfile,
)


def _switch(root: str, bus: int) -> tuple[str, ...]:
    """Root port + a PCIe switch (upstream, downstream port) in front of a device on bus `bus`."""
    return (f"{root}:01.0", f"0000:{bus - 2:02x}:00.0", f"0000:{bus - 1:02x}:00.0")


def _vgpu_types(
    prefix: str, board_gb: int, sizes: tuple[int, ...], first_id: int, per_vf: bool
) -> tuple[FakeMdev, ...]:
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


# HGX A100 40GB (10de:20b0) types as the R510 vgpuConfig.xml lists them: (mdev id, type, framebuffer
# MiB, max instances, MIG-backed). The vGPU guide's Tables 73/74 give the same framebuffers and maxima.
A100X_R510 = (
    (457, "A100X-4C", 4096, 10, False), (458, "A100X-5C", 5120, 8, False), (459, "A100X-8C", 8192, 5, False),
    (460, "A100X-10C", 10240, 4, False), (461, "A100X-20C", 20480, 2, False), (462, "A100X-40C", 40960, 1, False),
    (463, "A100X-1-5C", 5120, 7, True), (464, "A100X-2-10C", 10240, 3, True), (465, "A100X-3-20C", 20480, 2, True),
    (466, "A100X-4-20C", 20480, 1, True), (467, "A100X-7-40C", 40960, 1, True), (704, "A100X-1-5CME", 5120, 1, True),
)


def _mdev_on_vfs(rows: tuple, name_prefix: str, mig_enabled: bool) -> tuple[FakeMdev, ...]:
    """mdev types on every SR-IOV VF (Ampere+): one instance per free VF. Which family is creatable
    depends on the GPU's MIG mode: time-sliced types with MIG off, MIG-backed ones with MIG on; the
    others stay listed with 0 available instances."""
    return tuple(
        FakeMdev(f"nvidia-{type_id}", f"{name_prefix}{name}", 1 if mig_backed == mig_enabled else 0, fb, max_instance)
        for type_id, name, fb, max_instance, mig_backed in rows
    )


# HGX H200 (10de:2335) time-sliced types, vGPU guide Table 90: (type, framebuffer MiB, max instances).
# Vendor-specific VFIO ids: 1428 (H200X-141C) is the one seen in NVIDIA's kubevirt-gpu-device-plugin
# README; the others are synthetic.
H200X_TIME_SLICED = (
    ("1428", "H200X-141C", 144384, 1), ("1420", "H200X-70C", 71680, 2), ("1421", "H200X-35C", 35840, 4),
    ("1422", "H200X-28C", 28672, 5), ("1423", "H200X-17C", 17408, 8), ("1424", "H200X-14C", 14336, 10),
    ("1425", "H200X-8C", 8192, 16), ("1426", "H200X-7C", 7168, 20), ("1427", "H200X-4C", 4096, 32),
)


def _gpu(bdf: str, device: int, numa: int, root: str, **kw) -> FakeFunction:
    bus = int(bdf[5:7], 16)
    if kw.get("total_vfs"):
        # The SR-IOV capability's VF Device ID and First VF Offset are hardware fields the kernel reads
        # at enumeration (drivers/pci/iov.c, sriov_init), so sriov_vf_device and sriov_offset show them
        # whether or not VFs are enabled. NVIDIA GPU VFs carry the PF's device ID, the first at function 4.
        kw.setdefault("vf_device", device)
        kw.setdefault("vf_offset", 4)
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


def _dgx_a100_functions(**gpu_sriov) -> list[FakeFunction]:
    gpus = ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
            "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"]
    nics = ["0000:0c:00.0", "0000:12:00.0", "0000:54:00.0", "0000:5a:00.0",
            "0000:8d:00.0", "0000:94:00.0", "0000:ba:00.0", "0000:cc:00.0"]
    roots = ["0000:00", "0000:00", "0000:40", "0000:40", "0000:80", "0000:80", "0000:c0", "0000:c0"]
    fns: list[FakeFunction] = []
    for i, (g, n, r) in enumerate(zip(gpus, nics, roots)):
        numa = 0 if i < 4 else 1
        fns.append(_gpu(g, 0x20B0, numa, r, total_vfs=16, **gpu_sriov))
        fns.append(_nic(n, MELLANOX, 0x101B, numa, r, f"enp{int(n[5:7], 16)}s0np0", 200000,
                        total_vfs=16, num_vfs=4, vf_device=0x101C, vf_offset=1))
    for bdf in ["0000:c4:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0", "0000:c9:00.0"]:
        fns.append(FakeFunction(bdf, NVIDIA, 0x1AF1, CLASS_BRIDGE_OTHER, 1, "0000:c0", ("0000:c0:01.1",)))
    for port, bdf in enumerate(["0000:e1:00.0", "0000:e1:00.1"]):
        fns.append(_nic(bdf, MELLANOX, 0x101D, 1, "0000:e0", f"enp225s0f{port}", 100000,
                        total_vfs=8, num_vfs=0, vf_device=0x101E, vf_offset=2 - port, switch=False))
    fns.append(_BMC("0000:60"))
    fns.append(_NVME("0000:20", "0000:22:00.0"))
    return fns


def _dgx_a100() -> SysfsProfile:
    return SysfsProfile("dgx-a100", "DGX-A100-like: 8x A100-SXM4-40GB, 6 NVSwitches, 8x ConnectX-6 200G "
                        "(4 VFs each), 2x ConnectX-6 Dx 100G storage ports (no VFs enabled), BMC VGA, NVMe",
                        tuple(_dgx_a100_functions()))


def _dgx_a100_vgpu() -> SysfsProfile:
    """A DGX A100 as a vGPU host (vGPU 14 / R510 on KVM): sriov-manage enabled all 16 VFs of every GPU,
    each VF carries the board's 12 mdev types ("GRID A100X-*"); MIG is off, so the time-sliced types
    have an instance free on every VF and the MIG-backed ones none."""
    types = _mdev_on_vfs(A100X_R510, "GRID ", mig_enabled=False)
    fns = _dgx_a100_functions(num_vfs=16, vf_device=0x20B0, vf_offset=4, mdev=types, mdev_on_vfs=True)
    return SysfsProfile("dgx-a100-vgpu", "DGX-A100 vGPU host: 8x A100-SXM4-40GB with SR-IOV (16 VFs each, mdev "
                        "types GRID A100X-*, MIG off), 6 NVSwitches, 8x ConnectX-6 200G (4 VFs each), 2x ConnectX-6 "
                        "Dx storage ports (no VFs enabled), BMC VGA, NVMe", tuple(fns))


def _hgx_gpus(device: int, **sriov) -> list[FakeFunction]:
    gpus = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
            "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]
    roots = ["0000:15", "0000:37", "0000:48", "0000:59", "0000:97", "0000:b7", "0000:c7", "0000:d7"]
    return [_gpu(g, device, 0 if i < 4 else 1, r, total_vfs=32, **sriov) for i, (g, r) in enumerate(zip(gpus, roots))]


def _hgx_switches_and_nics() -> list[FakeFunction]:
    """What the HGX H100 and H200 profiles share besides the GPUs: 4 NVSwitches, 4 ConnectX-7 400G (8 VFs each)."""
    fns = [FakeFunction(bdf, NVIDIA, 0x22A3, CLASS_BRIDGE_OTHER, 0, "0000:00", ("0000:00:01.1",))
           for bdf in ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]]
    for k, (bdf, root) in enumerate([("0000:1d:00.0", "0000:15"), ("0000:45:00.0", "0000:37"),
                                     ("0000:9f:00.0", "0000:97"), ("0000:c5:00.0", "0000:b7")]):
        fns.append(_nic(bdf, MELLANOX, 0x1021, 0 if k < 2 else 1, root, f"ens{k + 1}np0", 400000,
                        total_vfs=16, num_vfs=8, vf_device=0x101E, vf_offset=1))
    return fns


def _h100() -> SysfsProfile:
    fns = _hgx_gpus(0x2330)
    fns.extend(_hgx_switches_and_nics())
    fns.append(_BMC("0000:00"))
    return SysfsProfile("h100", "HGX-H100-like: 8x H100 80GB HBM3 (SXM5), 4 NVSwitches, 4x ConnectX-7 400G "
                        "(8 VFs each), BMC VGA", tuple(fns))


def _h200_vgpu() -> SysfsProfile:
    """An HGX H200 vGPU host on a current stack (vGPU 17+ / R580 on Linux >= 6.8): no mdev, NVIDIA's
    vendor-specific VFIO. Each GPU has 32 VFs; every free VF lists the nine time-sliced H200X types in
    nvidia/creatable_vgpu_types (MIG off). Two ports stay the host's: a ConnectX-7 storage port with
    SR-IOV but no VFs enabled and an on-board I350 management port (SR-IOV capable, no VFs)."""
    types = tuple(FakeMdev(type_id, f"NVIDIA {name}", 1, fb, max_instance)
                  for type_id, name, fb, max_instance in H200X_TIME_SLICED)
    fns = _hgx_gpus(0x2335, num_vfs=32, vf_device=0x2335, vf_offset=4, mdev=types, mdev_on_vfs=True,
                    vgpu_framework="vendor-vfio")
    fns.extend(_hgx_switches_and_nics())
    fns.append(_nic("0000:e1:00.0", MELLANOX, 0x1021, 1, "0000:e0", "ens9np0", 200000,
                    total_vfs=16, num_vfs=0, vf_device=0x101E, vf_offset=1, switch=False))
    fns.append(_nic("0000:02:00.0", INTEL, 0x1521, 0, "0000:00", "eno1", 1000,
                    total_vfs=7, num_vfs=0, vf_device=0x1520, vf_offset=128, switch=False))
    fns.append(_BMC("0000:00"))
    return SysfsProfile("h200-vgpu", "HGX-H200 vGPU host: 8x H200 SXM 141GB with SR-IOV (32 VFs each, vendor-specific "
                        "VFIO, nine time-sliced H200X types, MIG off), 4 NVSwitches, 4x ConnectX-7 400G (8 VFs each), "
                        "a ConnectX-7 storage port and an I350 management port (no VFs enabled), BMC VGA", tuple(fns))


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
        # On-board NIC without SR-IOV: a network function discovery must ignore.
        FakeFunction("0000:02:00.0", REALTEK, 0x8168, CLASS_ETH, 0, "0000:00", ("0000:00:1c.0",),
                     interface="eno1", speed=1000),
        _BMC("0000:00"),
        _NVME("0000:00", "0000:01:00.0"),
    ]
    return SysfsProfile("no-gpu", "Host without GPUs: Intel E810-C 100G (8 VFs), on-board NIC without SR-IOV, "
                        "BMC VGA, NVMe", tuple(fns))


def _demo() -> SysfsProfile:
    # The SXM4 board's own names (A100X-*), time-sliced types only, in the "NVIDIA " form of current
    # releases, largest first.
    a100 = tuple(reversed(_mdev_on_vfs(tuple(r for r in A100X_R510 if not r[4]), "NVIDIA ", mig_enabled=False)))
    fns = [
        _gpu("0000:07:00.0", 0x20B0, 0, "0000:00", total_vfs=16),
        _gpu("0000:0f:00.0", 0x20B0, 0, "0000:00", total_vfs=16, num_vfs=16, vf_device=0x20B0, vf_offset=4,
             mdev=a100, mdev_on_vfs=True),
        _nic("0000:0c:00.0", MELLANOX, 0x101D, 0, "0000:00", "ens3f0", 100000,
             total_vfs=16, num_vfs=8, vf_device=0x101E, vf_offset=2),
    ]
    return SysfsProfile("demo", "Demo node: 2x A100-SXM4-40GB (the second vGPU-capable: 16 VFs with the board's "
                        "A100X-* mdev types), 1x ConnectX-6 Dx 100G with 8 VFs", tuple(fns))


PROFILES: dict[str, SysfsProfile] = {
    p.name: p for p in (_demo(), _dgx_a100(), _dgx_a100_vgpu(), _h100(), _h200_vgpu(), _vgpu_host(), _no_gpu(),
                        *LATE_2026_PROFILES)
}
