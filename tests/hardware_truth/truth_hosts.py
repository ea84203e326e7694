"""Real hosts as sysfs facts, each fact with where it comes from.

Sources (short keys used in the comments below):
- [pciids]   pci.ids 2023.04.10 (Debian package pci.ids 0.0~2023.04.11): 10de:1af1 "GA100 [A100 NVSwitch]",
             1eb8 Tesla T4, 20b0 A100 SXM4 40GB, 20b2 A100 SXM4 80GB, 20b5 A100 PCIe 80GB, 2330 H100 SXM5 80GB,
             27b8 L4; 15b3:1021 ConnectX-7, 101e mlx5Gen VF, 101d ConnectX-6 Dx, a2dc BlueField-3;
             8086:159b E810-XXV, 1889 iavf VF, 1521 I350; 14e4:16d7 BCM57414; 1a03:2000 ASPEED.
             Newer than that snapshot: 10de:22a3 (H100 NVSwitch), 26b9 (L40S) - current pci-ids.ucw.cz.
- [vgpucfg]  vgpuConfig.xml of vGPU manager 510.47.03 as tabulated by the vgpu_unlock wiki "vGPU Types":
             mdev ids and names, e.g. nvidia-319/320/321 = "GRID T4-4C/8C/16C", nvidia-222..234,252 = the
             T4 B/A/Q types, nvidia-615..626,705 = "GRID A100DX-*".
- [mdevctl]  `mdevctl types` captures (Proxmox/KVM hosts, public GitHub READMEs): description format
             "num_heads=1, frl_config=60, framebuffer=4096M, max_resolution=4096x2160, max_instance=4";
             R525+ hosts name Ampere types "NVIDIA <type>" (e.g. "NVIDIA RTXA6000-2Q" on 525.147.01).
- [vfio]     NVIDIA/kubevirt-gpu-device-plugin README ("1428 : NVIDIA H200X-141C" in
             <VF>/nvidia/creatable_vgpu_types) and NVIDIA/vgpu-device-manager pkg/vgpu/vfio/types.go, whose
             parser accepts "ID : Name", "ID Name", a header line and blank lines.
- [guide]    NVIDIA AI Enterprise / vGPU guide, "Virtual GPU Types for Supported GPUs": C-series maxima per GPU.
- [smi]      nvidia-smi totals in public captures: H100 80GB HBM3 81559MiB, A100 80GB 81920MiB, L40S 46068MiB,
             L4 23034MiB, Tesla T4 15360MiB; `nvidia-smi mig -lgip` on H100 (SM 16/26/32/60/64/132).
- [kernel]   Documentation/ABI/testing/sysfs-bus-pci and sysfs-class-net: speed is -1 when unknown.

Facts that are NOT established and are only shape: PCI addresses of NICs/NVMe, the number of SR-IOV
VFs of each GPU board (sriov_totalvfs: 16 for A100 40GB in the project's profiles; 20 for the 80GB
board and 32 for H100/L40S/L4 are assumptions consistent with the guide's maxima: each Ampere+ vGPU
needs one VF, and A100DX-4C allows 20, L40S-1B 32), mdev ids of the vendor-VFIO hosts (synthetic).
"""

from __future__ import annotations

from truth_sysfs import BRIDGE_OTHER, D3, ETHERNET, INFINIBAND, NVME, VGA, Fn, Mdev

NV, MLX, INTEL, BCM, ASPEED, SAMSUNG = 0x10DE, 0x15B3, 0x8086, 0x14E4, 0x1A03, 0x144D


def _desc(fb_mib: int, max_instance: int, heads: int = 1, frl: int = 60, res: str = "4096x2160") -> str:
    return f"num_heads={heads}, frl_config={frl}, framebuffer={fb_mib}M, max_resolution={res}, max_instance={max_instance}"


def _sw(root_bus: int, dev_bus: int) -> tuple[str, ...]:
    """Root port + PCIe switch upstream/downstream ports in front of a device on bus `dev_bus`."""
    return (f"0000:{root_bus:02x}:01.0", f"0000:{dev_bus - 2:02x}:00.0", f"0000:{dev_bus - 1:02x}:00.0")


# --- DGX H100 ------------------------------------------------------------------------------------------
# GPU addresses as in the DGX H100 user guide's GPU table (1b, 43, 52, 61, 9d, c3, d1, df); NVSwitch
# chips show up as "Bridge: NVIDIA Corporation Device 22a3" [pciids, lspci captures]; the eight compute
# ConnectX-7 run InfiniBand (class 0x0207) with SR-IOV capable firmware but no VFs; two dual-port
# ConnectX-7 carry storage/in-band management (Ethernet, no VFs); one pair is given 8 VFs here to see
# that VFs are published; BMC VGA is an ASPEED.
H100_GPUS = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
             "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]


def dgx_h100() -> list[Fn]:
    fns = []
    for i, bdf in enumerate(H100_GPUS):
        bus = int(bdf[5:7], 16)
        numa = 0 if i < 4 else 1
        fns.append(Fn(bdf, NV, 0x2330, D3, numa, _sw(bus - 6, bus), driver="nvidia", total_vfs=32))
        ib = f"0000:{bus - 3:02x}:00.0"
        fns.append(Fn(ib, MLX, 0x1021, INFINIBAND, numa, (f"0000:{bus - 6:02x}:01.0", f"0000:{bus - 4:02x}:00.0",
                                                          f"0000:{bus - 4:02x}:01.0"),
                      driver="mlx5_core", total_vfs=16, vf_device=0x101E, interface=f"ibp{bus - 3}s0", speed=400000))
    for k in range(4):
        fns.append(Fn(f"0000:{5 + k:02x}:00.0", NV, 0x22A3, BRIDGE_OTHER, 0, ("0000:00:01.1",), driver="nvidia-nvswitch"))
    # Storage + in-band management: ConnectX-7 dual port; port 0 of the first has 8 VFs enabled.
    fns.append(Fn("0000:aa:00.0", MLX, 0x1021, ETHERNET, 1, ("0000:a0:01.0",), driver="mlx5_core", total_vfs=16,
                  num_vfs=8, vf_offset=2, vf_device=0x101E, interface="enp170s0f0np0", speed=200000))
    fns.append(Fn("0000:aa:00.1", MLX, 0x1021, ETHERNET, 1, ("0000:a0:01.0",), driver="mlx5_core", total_vfs=16,
                  vf_offset=9, vf_device=0x101E, interface="enp170s0f1np1", speed=200000))
    fns.append(Fn("0000:29:00.0", MLX, 0x1021, ETHERNET, 0, ("0000:20:01.0",), driver="mlx5_core", total_vfs=16,
                  vf_device=0x101E, interface="enp41s0f0np0", speed=-1))
    fns.append(Fn("0000:29:00.1", MLX, 0x1021, ETHERNET, 0, ("0000:20:01.0",), driver="mlx5_core", total_vfs=16,
                  vf_device=0x101E, interface="enp41s0f1np1", speed=-1))
    fns.append(Fn("0000:02:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:01:00.0"), driver="ast"))
    fns.append(Fn("0000:e1:00.0", SAMSUNG, 0xA80A, NVME, 1, ("0000:e0:01.1",), driver="nvme"))
    return fns


# --- HGX A100 80GB vGPU host, R525 mdev on SR-IOV VFs ---------------------------------------------------
# [vgpucfg] ids/names of the A100DX (HGX A100 80GB, 10de:20b2) types; R525+ writes the "NVIDIA " prefix
# [mdevctl]. MIG is off, so on every free VF the time-sliced types have 1 available instance and the
# MIG-backed ones 0. GPU 0 has only 8 VFs enabled (an operator may enable fewer): a type offered on 8 VFs
# can have at most 8 instances there.
A100DX = [  # (mdev id, type, framebuffer MiB, guide max, MIG-backed)
    (615, "A100DX-4C", 4096, 20, False), (616, "A100DX-8C", 8192, 10, False), (617, "A100DX-10C", 10240, 8, False),
    (618, "A100DX-16C", 16384, 5, False), (619, "A100DX-20C", 20480, 4, False), (620, "A100DX-40C", 40960, 2, False),
    (621, "A100DX-80C", 81920, 1, False), (622, "A100DX-1-10C", 10240, 7, True), (623, "A100DX-2-20C", 20480, 3, True),
    (624, "A100DX-3-40C", 40960, 2, True), (625, "A100DX-4-40C", 40960, 1, True), (626, "A100DX-7-80C", 81920, 1, True),
    (705, "A100DX-1-10CME", 10240, 1, True),
]
HGX_A100_GPUS = ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
                 "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"]


def hgx_a100_80gb_vgpu() -> list[Fn]:
    types = [Mdev(f"nvidia-{i}", f"NVIDIA {name}", 0 if mig else 1, _desc(fb, mx, res="4096x2400"))
             for i, name, fb, mx, mig in A100DX]
    fns = []
    for k, bdf in enumerate(HGX_A100_GPUS):
        bus = int(bdf[5:7], 16)
        fns.append(Fn(bdf, NV, 0x20B2, D3, 0 if k < 4 else 1, _sw(bus & 0xC0, bus), driver="nvidia", total_vfs=20,
                      num_vfs=8 if k == 0 else 20, vf_offset=4, vf_device=0x20B2, vf_mdev=types))
    for k in range(6):
        fns.append(Fn(f"0000:{0xc4 + k:02x}:00.0", NV, 0x1AF1, BRIDGE_OTHER, 1, ("0000:c0:01.1",),
                      driver="nvidia-nvswitch"))
    fns.append(Fn("0000:63:00.0", ASPEED, 0x2000, VGA, 0, ("0000:60:07.1",), driver="ast"))
    return fns


# --- HGX H100 vGPU host on NVIDIA's vendor-specific VFIO (vGPU 17+/R580, Linux >= 6.8) -----------------
# No mdev: every free VF lists the creatable types in nvidia/creatable_vgpu_types [vfio]. Type ids are
# synthetic. GPU 0 writes the "ID : Name" form under a header, GPU 1 the colon-less "ID Name" form that
# NVIDIA's own parser accepts, GPU 2 has three VFs holding a vGPU already (current_vgpu_type != 0).
H100XM_TS = [("4C", 20), ("5C", 16), ("8C", 10), ("10C", 8), ("16C", 5), ("20C", 4), ("40C", 2), ("80C", 1)]


def _creatable(colon: bool) -> str:
    rows = [(1100 + k, f"NVIDIA H100XM-{t}") for k, (t, _) in enumerate(H100XM_TS)]
    if colon:
        return "\n".join(["ID    : vGPU Name"] + [f"{i:<5} : {n}" for i, n in rows])
    return "\n".join(f"{i} {n}" for i, n in rows)


def hgx_h100_vendor_vfio() -> list[Fn]:
    fns = []
    for k, bdf in enumerate(H100_GPUS[:4]):
        bus = int(bdf[5:7], 16)
        # GPU 2: three VFs hold an H100XM-4C; the creatable lists of the others shrink to that type
        # (equal-size mode: only types that can co-exist with the running vGPUs stay creatable [vfio]).
        creatable = "ID    : vGPU Name\n1100  : NVIDIA H100XM-4C" if k == 2 else _creatable(colon=k != 1)
        fns.append(Fn(bdf, NV, 0x2330, D3, 0, _sw(bus - 6, bus), driver="nvidia", total_vfs=32, num_vfs=32,
                      vf_offset=4, vf_device=0x2330, vf_creatable=creatable,
                      vf_current={0: 1100, 1: 1100, 2: 1100} if k == 2 else {}))
    fns.append(Fn("0000:02:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:01:00.0"), driver="ast"))
    return fns


# --- Ada PCIe vGPU host: 2x L40S (mdev on 32 VFs, R535) + 2x L4 (vendor VFIO) ------------------------
# L40S/L4 offer B, Q, A and C series types [guide]; only the C (compute) series is for this driver.
L40S_TYPES = ([(f"{n}Q", n) for n in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)] + [("1B", 1), ("2B", 2)]
              + [(f"{n}A", n) for n in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)]
              + [(f"{n}C", n) for n in (4, 6, 8, 12, 16, 24, 48)])
L4_TYPES = ([(f"{n}Q", n) for n in (1, 2, 3, 4, 6, 8, 12, 24)] + [("1B", 1), ("2B", 2)]
            + [(f"{n}A", n) for n in (1, 2, 3, 4, 6, 8, 12, 24)] + [(f"{n}C", n) for n in (4, 6, 8, 12, 24)])


def ada_vgpu_host() -> list[Fn]:
    l40s = [Mdev(f"nvidia-{1140 + k}", f"NVIDIA L40S-{t}", 1, _desc(gb * 1024, min(32, 48 // gb), res="4096x2400"))
            for k, (t, gb) in enumerate(L40S_TYPES)]
    l4 = "\n".join(["ID    : vGPU Name"] + [f"{1200 + k:<5} : NVIDIA L4-{t}" for k, (t, _) in enumerate(L4_TYPES)])
    return [
        Fn("0000:3b:00.0", NV, 0x26B9, D3, 0, ("0000:3a:00.0",), driver="nvidia", total_vfs=32, num_vfs=32,
           vf_offset=4, vf_device=0x26B9, vf_mdev=l40s),
        Fn("0000:86:00.0", NV, 0x26B9, D3, 1, ("0000:85:00.0",), driver="nvidia", total_vfs=32, num_vfs=32,
           vf_offset=4, vf_device=0x26B9, vf_mdev=l40s),
        Fn("0000:5e:00.0", NV, 0x27B8, D3, 0, ("0000:5d:00.0",), driver="nvidia", total_vfs=32, num_vfs=32,
           vf_offset=4, vf_device=0x27B8, vf_creatable=l4),
        Fn("0000:d8:00.0", NV, 0x27B8, D3, 1, ("0000:d7:00.0",), driver="nvidia", total_vfs=32, num_vfs=32,
           vf_offset=4, vf_device=0x27B8, vf_creatable=l4),
        Fn("0000:18:00.0", INTEL, 0x159B, ETHERNET, 0, ("0000:17:00.0",), driver="ice", total_vfs=64, num_vfs=4,
           vf_offset=16, vf_device=0x1889, interface="ens1f0", speed=25000),
    ]


# --- T4 host, mdev types on the PF (Turing has no SR-IOV vGPU) ---------------------------------------
# [vgpucfg] ids and names with the "GRID " prefix; [mdevctl] available_instances on an idle GPU equal
# the per-type maximum (16 GB board / framebuffer, Q/B capped at 16).
T4_TYPES = [(222, "1B", 1024, 16), (223, "2B", 2048, 8), (224, "2B4", 2048, 8), (225, "1A", 1024, 16),
            (226, "2A", 2048, 8), (227, "4A", 4096, 4), (228, "8A", 8192, 2), (229, "16A", 16384, 1),
            (230, "1Q", 1024, 16), (231, "2Q", 2048, 8), (232, "4Q", 4096, 4), (233, "8Q", 8192, 2),
            (234, "16Q", 16384, 1), (252, "1B4", 1024, 16), (319, "4C", 4096, 4), (320, "8C", 8192, 2),
            (321, "16C", 16384, 1)]


def t4_host() -> list[Fn]:
    types = [Mdev(f"nvidia-{i}", f"GRID T4-{t}", mx, _desc(fb, mx)) for i, t, fb, mx in T4_TYPES]
    return [Fn(bdf, NV, 0x1EB8, D3, numa, (root,), driver="nvidia", pf_mdev=types)
            for bdf, numa, root in [("0000:3b:00.0", 0, "0000:3a:00.0"), ("0000:5e:00.0", 0, "0000:5d:00.0"),
                                    ("0000:86:00.0", 1, "0000:85:00.0"), ("0000:af:00.0", 1, "0000:ae:00.0")]]


# --- Mixed 2U server ---------------------------------------------------------------------------------
# Two A100 80GB PCIe (no vGPU manager), a BMC VGA, a Broadcom BCM57414 storage pair without SR-IOV files,
# an E810-XXV with 4 VFs on port 0 and port 1 down (speed -1, no VFs), an I350 management port (SR-IOV
# capable, 0 VFs), an NVMe behind an Intel VMD domain (10000:...), and a platform that reports
# numa_node -1 for one GPU.
def mixed_server() -> list[Fn]:
    return [
        Fn("0000:17:00.0", NV, 0x20B5, D3, 0, ("0000:16:02.0",), driver="nvidia", total_vfs=20),
        Fn("0000:ca:00.0", NV, 0x20B5, D3, -1, ("0000:c9:02.0",), driver="nvidia", total_vfs=20),
        Fn("0000:03:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:02:00.0"), driver="ast"),
        Fn("0000:31:00.0", BCM, 0x16D7, ETHERNET, 0, ("0000:30:02.0",), driver="bnxt_en", interface="ens3f0np0",
           speed=25000),
        Fn("0000:31:00.1", BCM, 0x16D7, ETHERNET, 0, ("0000:30:02.0",), driver="bnxt_en", interface="ens3f1np1",
           speed=25000),
        Fn("0000:4b:00.0", INTEL, 0x159B, ETHERNET, 0, ("0000:4a:02.0",), driver="ice", total_vfs=128, num_vfs=4,
           vf_offset=16, vf_device=0x1889, interface="ens5f0", speed=25000),
        Fn("0000:4b:00.1", INTEL, 0x159B, ETHERNET, 0, ("0000:4a:02.0",), driver="ice", total_vfs=128,
           vf_offset=143, vf_device=0x1889, interface="ens5f1", speed=-1),
        Fn("0000:05:00.0", INTEL, 0x1521, ETHERNET, 0, ("0000:00:1c.5",), driver="igb", total_vfs=7,
           vf_offset=128, vf_device=0x1520, interface="eno1", speed=1000),
        Fn("10000:01:00.0", SAMSUNG, 0xA80A, NVME, 0, ("0000:00:0e.0", "pci10000:00", "10000:00:02.0"), driver="nvme"),
    ]


# --- NIC-only host with the adapters of current clusters ----------------------------------------------
# [pciids] BlueField-3 host functions are 15b3:a2dc (VFs the mlx5Gen 15b3:101e), ConnectX-6 Lx 15b3:101f,
# Broadcom BCM57508 14e4:1750 (VFs 14e4:1806), Intel X710 8086:1572 (VFs 8086:154c).
def nic_zoo() -> list[Fn]:
    return [
        Fn("0000:c1:00.0", MLX, 0xA2DC, ETHERNET, 1, ("0000:c0:01.1",), driver="mlx5_core", total_vfs=16, num_vfs=4,
           vf_offset=2, vf_device=0x101E, interface="ens7f0np0", speed=400000),
        Fn("0000:41:00.0", MLX, 0x101F, ETHERNET, 0, ("0000:40:01.1",), driver="mlx5_core", total_vfs=8, num_vfs=2,
           vf_offset=2, vf_device=0x101E, interface="ens2f0np0", speed=25000),
        Fn("0000:61:00.0", BCM, 0x1750, ETHERNET, 0, ("0000:60:01.1",), driver="bnxt_en", total_vfs=64, num_vfs=2,
           vf_offset=1, vf_device=0x1806, interface="ens4f0np0", speed=100000),
        Fn("0000:81:00.0", INTEL, 0x1572, ETHERNET, 1, ("0000:80:01.1",), driver="i40e", total_vfs=64, num_vfs=2,
           vf_offset=16, vf_device=0x154C, interface="ens5f0", speed=10000),
    ]


# --- HGX H200 on vendor VFIO with vGPUs running ---------------------------------------------------------
# H200X-4C: the guide's maximum is 32 per GPU, one per VF, so all 32 VFs matter. GPU 0: 3 VFs run an
# H200X-4C, the 29 free VFs list only that type (equal-size mode) and the busy VFs list nothing.
# GPU 1: all 32 VFs busy, no VF lists anything (the GPU is full). Type id 1427 is synthetic.
def hgx_h200_busy() -> list[Fn]:
    only_4c = "ID    : vGPU Name\n1427  : NVIDIA H200X-4C"
    return [
        Fn("0000:1b:00.0", NV, 0x2335, D3, 0, _sw(0x15, 0x1B), driver="nvidia", total_vfs=32, num_vfs=32,
           vf_offset=4, vf_device=0x2335, vf_creatable=only_4c, vf_current={0: 1427, 1: 1427, 2: 1427}),
        Fn("0000:43:00.0", NV, 0x2335, D3, 0, _sw(0x3D, 0x43), driver="nvidia", total_vfs=32, num_vfs=32,
           vf_offset=4, vf_device=0x2335, vf_creatable=only_4c, vf_current={n: 1427 for n in range(32)}),
    ]
