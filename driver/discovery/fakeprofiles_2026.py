"""Named fake nodes of late 2026 (`fake-dra make-sysfs --profile hgx-b200 | rtxpro6000 | rtxpro6000-vgpu | gh200`).

Laid out as such hosts are (sources in docs/hardware.md and driver/hardware/data/gpus-2026.yaml):

- HGX B200: eight B200 at the DGX B200 bus ids (1b, 43, 52, 61, 9d, c3, d1, df), GPUs 0-3 on NUMA node 0, each
  behind a PCIe switch shared with its InfiniBand ConnectX-7 compute NIC (no VFs). No NVSwitch PCI functions:
  NVLink 5 switches are managed by NVLSM through four InfiniBand "NVSwitch LPF" mlx5 functions, which the host
  owns. A dual-port BlueField-3 carries storage/in-band traffic (port 0 with 8 VFs).
- RTX PRO 6000 Blackwell Server Edition: eight PCIe GPUs, four per socket, each on its own root port; a
  ConnectX-7 400G per socket with 8 VFs; MIG mode on (bare metal). The vGPU host variant has two GPUs with
  SR-IOV (16 of 48 VFs enabled) and the board's `DC-*` C and Q types as mdev types on every VF, named as the
  host writes them (`NVIDIA RTX Pro 6000 Blackwell DC-48C`); MIG on, so the MIG-backed types are creatable.
- GH200: two Grace Hopper superchips, GPUs at 0009:01:00.0 and 0019:01:00.0 (each Grace has its own PCI domains),
  NUMA nodes 0 and 1; a ConnectX-7 per Grace (0000:01:00.x with 4 VFs on port 0, 0010:01:00.0), BMC VGA.

mdev type ids: nvidia-1560 (DC-1-12C), 1563 (DC-1-24C) and 1585 (DC-4-96Q) as a public RTX PRO 6000 host lists
them; the others are synthetic. NIC addresses and switch bus numbers are shape only.
"""

from __future__ import annotations

from driver.discovery.fakespec import (
    ASPEED, CLASS_3D, CLASS_ETH, CLASS_IB, CLASS_NVME, CLASS_VGA, MELLANOX, NVIDIA, SAMSUNG, FakeFunction, FakeMdev,
    SysfsProfile,
)

_BLUEFIELD3, _CX7, _MLX_VF = 0xA2DC, 0x1021, 0x101E


def _behind_switch(root_bus: int, port: str) -> tuple[str, tuple[str, ...]]:
    """(root complex, bridges) for a function behind root port <root_bus>:01.0 and one downstream `port` of
    the PCIe switch whose upstream port is on the next bus (HGX: a GPU and its NIC share such a switch)."""
    return f"0000:{root_bus:02x}", (f"0000:{root_bus:02x}:01.0", f"0000:{root_bus + 1:02x}:00.0",
                                     f"0000:{root_bus + 2:02x}:{port}")


def _on_root_port(bdf: str, root_bus: int, port: str = "01.0") -> tuple[str, tuple[str, ...]]:
    domain = bdf[:4]
    return f"{domain}:{root_bus:02x}", (f"{domain}:{root_bus:02x}:{port}",)


def _gpu(bdf: str, device: int, numa: int, where: tuple[str, tuple[str, ...]], subsystem: int, **kw) -> FakeFunction:
    root, bridges = where
    if kw.get("total_vfs"):
        kw.setdefault("vf_device", device)  # NVIDIA GPU VFs carry the PF's device ID, the first at function 4
        kw.setdefault("vf_offset", 4)
    return FakeFunction(bdf, NVIDIA, device, CLASS_3D, numa, root, bridges, subsystem=(NVIDIA, subsystem), **kw)


def _mlx(bdf: str, device: int, klass: int, numa: int, where: tuple[str, tuple[str, ...]], interface: str,
         speed: int, *, total_vfs: int = 0, num_vfs: int = 0, vf_offset: int = 1) -> FakeFunction:
    root, bridges = where
    return FakeFunction(bdf, MELLANOX, device, klass, numa, root, bridges, total_vfs=total_vfs, num_vfs=num_vfs,
                        vf_device=_MLX_VF if total_vfs else 0, vf_offset=vf_offset, interface=interface, speed=speed)


def _bmc(bdf: str, root: str) -> FakeFunction:
    return FakeFunction(bdf, ASPEED, 0x2000, CLASS_VGA, 0, root, (f"{root}:1c.0", f"{root[:4]}:01:00.0"))


B200_BUSES = (0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF)


def _hgx_b200() -> SysfsProfile:
    fns: list[FakeFunction] = []
    for i, bus in enumerate(B200_BUSES):
        numa = 0 if i < 4 else 1
        fns.append(_gpu(f"0000:{bus:02x}:00.0", 0x2901, numa, _behind_switch(bus - 6, "03.0"), 0x1999, total_vfs=32))
        # The compute NIC sits behind the same switch as its GPU (nvidia-smi topo: PXB), InfiniBand, no VFs.
        fns.append(_mlx(f"0000:{bus - 3:02x}:00.0", _CX7, CLASS_IB, numa, _behind_switch(bus - 6, "00.0"),
                        f"ibp{bus - 3}s0", 400000, total_vfs=16))
    # NVSwitch management (NVLSM): two dual-port InfiniBand functions, no SR-IOV; the host's.
    for bdf in ("0000:05:00.0", "0000:05:00.1", "0000:06:00.0", "0000:06:00.1"):
        fns.append(_mlx(bdf, _CX7, CLASS_IB, 0, _on_root_port(bdf, 0, "01.3"),
                        f"ibp{int(bdf[5:7], 16)}s0f{bdf[-1]}", 200000))
    for port in (0, 1):
        bdf = f"0000:aa:00.{port}"
        fns.append(_mlx(bdf, _BLUEFIELD3, CLASS_ETH, 1, _on_root_port(bdf, 0xA0), f"enp170s0f{port}np{port}", 200000,
                        total_vfs=16, num_vfs=8 if port == 0 else 0, vf_offset=2 if port == 0 else 9))
    fns.append(_bmc("0000:02:00.0", "0000:00"))
    fns.append(FakeFunction("0000:e1:00.0", SAMSUNG, 0xA80A, CLASS_NVME, 1, "0000:e0", ("0000:e0:01.1",)))
    return SysfsProfile("hgx-b200", "HGX B200: 8x B200 (MIG), 8 InfiniBand ConnectX-7 compute NICs without VFs, 4 "
                        "InfiniBand NVSwitch-management functions (NVLSM), a BlueField-3 with 8 VFs on port 0, BMC VGA, "
                        "NVMe", tuple(fns))


RTX_BUSES = ((0x17, 0), (0x2A, 0), (0x3D, 0), (0x63, 0), (0x98, 1), (0xAB, 1), (0xBD, 1), (0xE1, 1))


def _rtx_nics() -> list[FakeFunction]:
    return [_mlx(bdf, _CX7, CLASS_ETH, numa, _on_root_port(bdf, int(bdf[5:7], 16) - 1), name, 400000,
                 total_vfs=16, num_vfs=8, vf_offset=2)
            for bdf, numa, name in (("0000:31:00.0", 0, "ens5f0np0"), ("0000:b1:00.0", 1, "ens13f0np0"))]


def _rtxpro6000() -> SysfsProfile:
    fns = [_gpu(f"0000:{bus:02x}:00.0", 0x2BB5, numa, _on_root_port(f"0000:{bus:02x}:00.0", bus - 1), 0x204E,
                total_vfs=48) for bus, numa in RTX_BUSES]
    fns += _rtx_nics()
    fns.append(_bmc("0000:02:00.0", "0000:00"))
    return SysfsProfile("rtxpro6000", "RTX PRO 6000 Blackwell server: 8x RTX PRO 6000 Blackwell Server Edition "
                        "(MIG with the GB20X +gfx/+me.all/-me profiles), 2x ConnectX-7 400G with 8 VFs, BMC VGA",
                        tuple(fns))


# The board's DC types (vGPU 20.0): time-sliced (GB, max per GPU) and MIG-backed (slices, GB, max per GPU).
DC_TIME_SLICED = ((96, 1), (48, 2), (32, 3), (24, 4), (16, 6), (12, 8), (8, 12))
DC_MIG_BACKED = ((4, 96, 1), (4, 48, 2), (4, 32, 3), (4, 24, 4), (2, 48, 2), (2, 24, 4), (2, 16, 6), (2, 12, 8),
                 (1, 24, 4), (1, 12, 8), (1, 8, 12))
_DC_IDS = {"DC-1-12C": 1560, "DC-1-24C": 1563, "DC-4-96Q": 1585}  # as a public RTX PRO 6000 host lists them


def dc_mdev_types(mig_enabled: bool) -> tuple[FakeMdev, ...]:
    """The C and Q (RTX workstation) DC types on one VF, as the host names them. MIG-backed types have a free
    instance when MIG is on, time-sliced ones when it is off."""
    rows = [(f"DC-{gb}{series}", gb, mx, False) for gb, mx in DC_TIME_SLICED for series in "CQ"]
    rows += [(f"DC-{g}-{gb}{series}{gfx}", gb, mx, True) for g, gb, mx in DC_MIG_BACKED for series in "CQ"
             for gfx in ("", "GFX")]
    out, synthetic = [], 1600
    for name, gb, mx, mig_backed in rows:
        type_id = _DC_IDS.get(name)
        if type_id is None:
            type_id, synthetic = synthetic, synthetic + 1
        out.append(FakeMdev(f"nvidia-{type_id}", f"NVIDIA RTX Pro 6000 Blackwell {name}",
                            1 if mig_backed == mig_enabled else 0, gb * 1024, mx))
    return tuple(out)


def _rtxpro6000_vgpu() -> SysfsProfile:
    types = dc_mdev_types(mig_enabled=True)
    fns = [_gpu(f"0000:{bus:02x}:00.0", 0x2BB5, numa, _on_root_port(f"0000:{bus:02x}:00.0", bus - 1), 0x204E,
                total_vfs=48, num_vfs=16, mdev=types, mdev_on_vfs=True) for bus, numa in (RTX_BUSES[0], RTX_BUSES[4])]
    fns += _rtx_nics()
    fns.append(_bmc("0000:02:00.0", "0000:00"))
    return SysfsProfile("rtxpro6000-vgpu", "RTX PRO 6000 Blackwell vGPU host: 2x RTX PRO 6000 Blackwell Server Edition "
                        "with SR-IOV (16 of 48 VFs enabled) and the board's DC-* C and Q mdev types on every VF (MIG on: "
                        "MIG-backed and time-sliced MIG-backed types creatable), 2x ConnectX-7 400G with 8 VFs, BMC VGA",
                        tuple(fns))


def _gh200() -> SysfsProfile:
    fns = [_gpu(bdf, 0x2342, numa, _on_root_port(bdf, 0, "00.0"), 0x16EB)
           for bdf, numa in (("0009:01:00.0", 0), ("0019:01:00.0", 1))]
    fns.append(_mlx("0000:01:00.0", _CX7, CLASS_ETH, 0, _on_root_port("0000:01:00.0", 0, "00.0"), "enP1p1s0f0np0",
                    400000, total_vfs=16, num_vfs=4, vf_offset=2))
    fns.append(_mlx("0000:01:00.1", _CX7, CLASS_ETH, 0, _on_root_port("0000:01:00.1", 0, "00.0"), "enP1p1s0f1np1",
                    400000, total_vfs=16, vf_offset=9))
    fns.append(_mlx("0010:01:00.0", _CX7, CLASS_ETH, 1, _on_root_port("0010:01:00.0", 0, "00.0"), "enP16p1s0f0np0",
                    400000, total_vfs=16))
    fns.append(_bmc("0008:02:00.0", "0008:00"))
    return SysfsProfile("gh200", "Two Grace Hopper GH200 superchips: GPUs in PCI domains 0009 and 0019 (NUMA 0 and 1, "
                        "MIG), a ConnectX-7 per Grace (4 VFs on the first port), BMC VGA", tuple(fns))


LATE_2026_PROFILES = (_hgx_b200(), _rtxpro6000(), _rtxpro6000_vgpu(), _gh200())
