"""Hosts of late 2026 as sysfs facts: an HGX B200 node, RTX PRO 6000 Blackwell servers (bare metal and vGPU
host), a two-superchip GH200 node and an L40S inference node, each fact with where it comes from.

Sources (short keys):
- [pciids26] pciutils/pciids 2026.08.22: 10de:2901 B200, 2bb5 RTX PRO 6000 Blackwell Server Edition, 2342 GH200,
             26b9 L40S; 15b3:1021 ConnectX-7, 101e mlx5Gen VF, a2dc BlueField-3; no NVSwitch function (22a3) on
             Blackwell boards.
- [smi]      nvidia-smi captures: eight "NVIDIA B200" at 00000000:1B/43/52/61/9D/C3/D1/DF:00.0 (the DGX H100/B200
             layout), 183359MiB; "NVIDIA GH200 480GB" at 00000009:01:00.0 and 00000019:01:00.0 (two superchips),
             97871MiB, NUMA node 0 and 1 (nvidia-smi topo: GPU 0 with CPUs 0-71 / node 0, GPU 1 with 72-143 /
             node 1); "NVIDIA RTX PRO 6000 Blackwell Server Edition" 97887MiB.
- [topo]     `nvidia-smi topo -m` on an HGX B200 (vllm-project/vllm#16336): GPUs 0-3 on NUMA node 0, 4-7 on node
             1, each GPU PXB (behind the same PCIe switch) with one NIC.
- [nvlsm]    HGX/DGX B200 manage their NVLink 5 switches through InfiniBand "NVSwitch LPF" mlx5 functions run by
             NVLSM (siderolabs/extensions#893: mlx5_8..mlx5_11; #717; the fabric-manager guide): InfiniBand
             functions the host owns, never NICs to hand out.
- [mdev]     mdev type names as the RTX PRO 6000 host writes them: "NVIDIA RTX Pro 6000 Blackwell DC-48C" (go-nvlib
             nvmdev's example), directories nvidia-1560 (DC-1-12C), nvidia-1563 (DC-1-24C), nvidia-1585
             (DC-4-96Q) on a public host; the other ids are synthetic.
- [vgpu20]   the DC-* types of the RTX PRO 6000 Server Edition and their maxima (vgpu-device-manager vGPU 20.0),
             time-sliced, MIG-backed and ...CGFX/...QGFX on +gfx instances.
- [pcieroot] k8s.io/dynamic-resource-allocation deviceattribute resolvePCIeRoot: the first directory under
             /sys/devices, e.g. "pci0009:00" for a GPU in PCI domain 0009.

Shape only (not established): NIC addresses, PCIe switch bus numbers, sriov_totalvfs of the RTX PRO 6000 (48,
enough for its 48 DC-1-2Q), the synthetic mdev ids.
"""

from __future__ import annotations

from truth_hosts import ASPEED, MLX, NV, SAMSUNG, _desc, _sw
from truth_sysfs import D3, ETHERNET, INFINIBAND, NVME, VGA, Fn, Mdev

# --- HGX B200 ------------------------------------------------------------------------------------------
B200_GPUS = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
             "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]  # [smi]
B200_LPF = ["0000:05:00.0", "0000:05:00.1", "0000:06:00.0", "0000:06:00.1"]  # [nvlsm] NVSwitch management


def hgx_b200() -> list[Fn]:
    fns = []
    for i, bdf in enumerate(B200_GPUS):
        bus = int(bdf[5:7], 16)
        numa = 0 if i < 4 else 1  # [topo]
        fns.append(Fn(bdf, NV, 0x2901, D3, numa, _sw(bus - 6, bus), driver="nvidia", total_vfs=32,
                      subsystem=(NV, 0x1999)))
        # The compute NIC behind the GPU's switch [topo]: ConnectX-7 InfiniBand, no VFs.
        ib = f"0000:{bus - 3:02x}:00.0"
        fns.append(Fn(ib, MLX, 0x1021, INFINIBAND, numa, (f"0000:{bus - 6:02x}:01.0", f"0000:{bus - 4:02x}:00.0",
                                                          f"0000:{bus - 4:02x}:01.0"),
                      driver="mlx5_core", total_vfs=16, vf_device=0x101E, interface=f"ibp{bus - 3}s0", speed=400000))
    for bdf in B200_LPF:  # [nvlsm] InfiniBand functions for NVLSM, no SR-IOV
        fns.append(Fn(bdf, MLX, 0x1021, INFINIBAND, 0, ("0000:00:01.3",), driver="mlx5_core",
                      interface=f"ibp5s0f{bdf[-1]}" if bdf.startswith("0000:05") else f"ibp6s0f{bdf[-1]}", speed=200000))
    # Storage / in-band: a dual-port BlueField-3; port 0 with 8 VFs for workloads, port 1 the host's.
    fns.append(Fn("0000:aa:00.0", MLX, 0xA2DC, ETHERNET, 1, ("0000:a0:01.0",), driver="mlx5_core", total_vfs=16,
                  num_vfs=8, vf_offset=2, vf_device=0x101E, interface="enp170s0f0np0", speed=200000))
    fns.append(Fn("0000:aa:00.1", MLX, 0xA2DC, ETHERNET, 1, ("0000:a0:01.0",), driver="mlx5_core", total_vfs=16,
                  vf_offset=9, vf_device=0x101E, interface="enp170s0f1np1", speed=200000))
    fns.append(Fn("0000:02:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:01:00.0"), driver="ast"))
    fns.append(Fn("0000:e1:00.0", SAMSUNG, 0xA80A, NVME, 1, ("0000:e0:01.1",), driver="nvme"))
    return fns


# --- RTX PRO 6000 Blackwell Server Edition: bare metal (MIG) and vGPU host ----------------------------
RTX_GPUS = [("0000:17:00.0", 0), ("0000:3d:00.0", 0), ("0000:98:00.0", 1), ("0000:bd:00.0", 1)]

# (id, suffix, GB) of every C and Q type of the board [vgpu20]; CGFX/QGFX run on +gfx instances.
_DC_TIME_SLICED = [(8, 12), (12, 8), (16, 6), (24, 4), (32, 3), (48, 2), (96, 1)]
_DC_MIG_BACKED = [(1, 8, 12), (1, 12, 8), (1, 24, 4), (2, 12, 8), (2, 16, 6), (2, 24, 4), (2, 48, 2),
                  (4, 24, 4), (4, 32, 3), (4, 48, 2), (4, 96, 1)]
DC_C_TYPES = ({f"DC-{gb}C": n for gb, n in _DC_TIME_SLICED}
              | {f"DC-{g}-{gb}C{gfx}": n for g, gb, n in _DC_MIG_BACKED for gfx in ("", "GFX")})
_KNOWN_IDS = {"DC-1-12C": 1560, "DC-1-24C": 1563, "DC-4-96Q": 1585}  # [mdev]


def _dc_types(mig_enabled: bool) -> list[Mdev]:
    names = ([f"DC-{gb}{s}" for gb, _ in _DC_TIME_SLICED for s in "CQ"]
             + [f"DC-{g}-{gb}{s}{gfx}" for g, gb, _ in _DC_MIG_BACKED for s in "CQ" for gfx in ("", "GFX")])
    free = [n for n in names if n not in _KNOWN_IDS]
    ids = dict(_KNOWN_IDS) | {n: 1600 + k for k, n in enumerate(free)}
    out = []
    for name in names:
        mig_backed = name.count("-") == 2
        gb = int(name.split("-")[-1].rstrip("CQGFX"))
        out.append(Mdev(f"nvidia-{ids[name]}", f"NVIDIA RTX Pro 6000 Blackwell {name}",
                        1 if mig_backed == mig_enabled else 0, _desc(gb * 1024, 96 // gb, res="7680x4320")))
    return out


def rtx_pro_6000_server(vgpu: bool = False) -> list[Fn]:
    """Four RTX PRO 6000 Server Edition (two per socket), a ConnectX-7 with VFs, BMC. With `vgpu`: SR-IOV on
    every GPU (48 VFs) and the board's DC-* mdev types on each VF, MIG on (MIG-backed types creatable)."""
    kw = {"num_vfs": 48, "vf_offset": 4, "vf_device": 0x2BB5, "vf_mdev": _dc_types(mig_enabled=True)} if vgpu else {}
    fns = [Fn(bdf, NV, 0x2BB5, D3, numa, (f"0000:{int(bdf[5:7], 16) - 1:02x}:01.0",), driver="nvidia",
              total_vfs=48, subsystem=(NV, 0x204E), **kw) for bdf, numa in RTX_GPUS]
    fns.append(Fn("0000:31:00.0", MLX, 0x1021, ETHERNET, 0, ("0000:30:01.0",), driver="mlx5_core", total_vfs=16,
                  num_vfs=8, vf_offset=2, vf_device=0x101E, interface="ens5f0np0", speed=400000))
    fns.append(Fn("0000:02:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:01:00.0"), driver="ast"))
    return fns


# --- GH200: two superchips, GPUs in PCI domains 0009 and 0019 ----------------------------------------
GH200_GPUS = [("0009:01:00.0", 0), ("0019:01:00.0", 1)]  # [smi]


def gh200_node() -> list[Fn]:
    fns = [Fn(bdf, NV, 0x2342, D3, numa, (f"{bdf[:4]}:00:00.0",), driver="nvidia", subsystem=(NV, 0x16EB))
           for bdf, numa in GH200_GPUS]
    # A ConnectX-7 on each Grace: port 0 of the first with 4 VFs.
    fns.append(Fn("0000:01:00.0", MLX, 0x1021, ETHERNET, 0, ("0000:00:00.0",), driver="mlx5_core", total_vfs=16,
                  num_vfs=4, vf_offset=2, vf_device=0x101E, interface="enP1p1s0f0np0", speed=400000))
    fns.append(Fn("0010:01:00.0", MLX, 0x1021, ETHERNET, 1, ("0010:00:00.0",), driver="mlx5_core", total_vfs=16,
                  vf_device=0x101E, interface="enP16p1s0f0np0", speed=400000))
    fns.append(Fn("0008:02:00.0", ASPEED, 0x2000, VGA, 0, ("0008:00:00.0", "0008:01:00.0"), driver="ast"))
    return fns


# --- L40S inference node ------------------------------------------------------------------------------
L40S_GPUS = [("0000:4f:00.0", 0), ("0000:52:00.0", 0), ("0000:ce:00.0", 1), ("0000:d1:00.0", 1)]


def l40s_node() -> list[Fn]:
    fns = [Fn(bdf, NV, 0x26B9, D3, numa, _sw(int(bdf[5:7], 16) - 6, int(bdf[5:7], 16)), driver="nvidia",
              total_vfs=32, subsystem=(NV, 0x1851)) for bdf, numa in L40S_GPUS]
    fns.append(Fn("0000:3b:00.0", MLX, 0x1021, ETHERNET, 0, ("0000:3a:01.0",), driver="mlx5_core", total_vfs=16,
                  num_vfs=4, vf_offset=2, vf_device=0x101E, interface="ens1f0np0", speed=200000))
    fns.append(Fn("0000:02:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:01:00.0"), driver="ast"))
    return fns


def single_gpu(device: int, vgpu_types: list[Mdev] | None = None, vfs: int = 48) -> list[Fn]:
    """One GPU of `device` (for the exhaustive checks), with vGPU types on `vfs` VFs when given."""
    kw = {"num_vfs": vfs, "vf_offset": 4, "vf_device": device, "vf_mdev": vgpu_types} if vgpu_types else {}
    return [Fn("0000:41:00.0", NV, device, D3, 0, ("0000:40:01.0",), driver="nvidia", total_vfs=vfs, **kw)]
