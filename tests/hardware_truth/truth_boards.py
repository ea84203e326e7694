"""Hosts with the data-centre boards added after the truth check found them missing, as sysfs facts.

Each fact names where it comes from (short keys as in truth_hosts.py, plus):
- [pciids26]  pciutils/pciids 2026.08.22: 10de:2321 "GH100 [H100L 94GB]" (H100 NVL), 2331 "GH100 [H100 PCIe]",
              233b "GH100 [H200 NVL]", 2235 A40, 2236 A10, 25b6 "GA107GL [A2 / A16]", 26b5 L40,
              26b1 "RTX 6000 Ada Generation".
- [readme]    NVIDIA driver README "Supported NVIDIA GPU Products" (open-gpu-kernel-modules 560.31.02): the
              subsystem that tells the A16 (25B6 10DE 14A9) from the A2 (25B6 10DE 157E); H100 PCIe 2331
              10DE 1626, H100 NVL 2321 10DE 1839, A40 2235 10DE 145A, A10 2236 10DE 1482, L40 26B5 10DE 169D,
              RTX 6000 Ada 26B1 10DE 16A1. An A16 host's `nvidia-smi -q` shows "Sub System Id: 0x14A910DE"
              and its four GPUs as four PCI functions (3D controller, class 0x0302).
- [a2host]    a real A2 vGPU host (Harvester docs, VGPUDevice status): "NVIDIA A2-1B" nvidia-742 ...
              "NVIDIA A2-16C" nvidia-756.
- [a10host]   a real A10 vendor-VFIO host (OpenNebula docs): "588 (NVIDIA A10-1B)" ... "605 (NVIDIA A10-24A)"
              on VF 41:00.4, class 0302.
- [vfiodoc]   NVIDIA's vGPU VFIO kernel documentation: an RTX 6000 Ada VF lists "941 : NVIDIA RTX6000-Ada-1Q"
              ... "950 : NVIDIA RTX6000-Ada-48Q" in nvidia/creatable_vgpu_types.
- [guide]     vGPU guide (AI Enterprise 6) maxima per GPU, see driver/hardware/data/gpus.yaml.

Shape only, not established: PCI addresses, sriov_totalvfs (32 on Hopper/Ada/GA102, 16 on GA107: at least
the guide's largest per-GPU maximum), mdev/vendor-VFIO ids of the C-series types (synthetic where no
capture lists them), the PCIe switch in front of the A16's four GPUs.
"""

from __future__ import annotations

from truth_hosts import ASPEED, NV, _desc, _sw
from truth_sysfs import D3, VGA, Fn, Mdev

# --- Hopper PCIe: H100 PCIe (MIG, bare metal) ----------------------------------------------------------
H100_PCIE = [("0000:17:00.0", 0), ("0000:65:00.0", 0), ("0000:ca:00.0", 1), ("0000:e3:00.0", 1)]


def h100_pcie_host() -> list[Fn]:
    fns = [Fn(bdf, NV, 0x2331, D3, numa, (f"0000:{int(bdf[5:7], 16) - 1:02x}:01.0",), driver="nvidia",
              total_vfs=32, subsystem=(NV, 0x1626)) for bdf, numa in H100_PCIE]
    fns.append(Fn("0000:03:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:02:00.0"), driver="ast"))
    return fns


# --- H100 NVL: one GPU bare metal (MIG), one as a vendor-VFIO vGPU host (R580) -------------------------
H100L_TS = [("94C", 1), ("47C", 2), ("23C", 4), ("15C", 6), ("11C", 8), ("6C", 15), ("4C", 23)]  # [guide]


def h100_nvl_host() -> list[Fn]:
    creatable = "\n".join(["ID    : vGPU Name"] + [f"{1500 + k:<5} : NVIDIA H100L-{t}" for k, (t, _) in enumerate(H100L_TS)])
    return [
        Fn("0000:4e:00.0", NV, 0x2321, D3, 0, _sw(0x48, 0x4E), driver="nvidia", total_vfs=32, subsystem=(NV, 0x1839)),
        Fn("0000:ce:00.0", NV, 0x2321, D3, 1, _sw(0xC8, 0xCE), driver="nvidia", total_vfs=32, num_vfs=32, vf_offset=4,
           vf_device=0x2321, vf_creatable=creatable, subsystem=(NV, 0x1839)),
    ]


# --- H200 NVL: mdev on SR-IOV VFs with the board's "H200-*" names --------------------------------------
H200_TS = [("141C", 141, 1), ("70C", 70, 2), ("35C", 35, 4), ("28C", 28, 5), ("17C", 17, 8), ("14C", 14, 10),
           ("8C", 8, 16), ("7C", 7, 20), ("4C", 4, 32)]  # [guide] Table 88


def h200_nvl_host() -> list[Fn]:
    types = [Mdev(f"nvidia-{1600 + k}", f"NVIDIA H200-{t}", 1, _desc(gb * 1024, mx, res="3840x2400"))
             for k, (t, gb, mx) in enumerate(H200_TS)]
    return [Fn(bdf, NV, 0x233B, D3, numa, _sw(bus - 6, bus), driver="nvidia", total_vfs=32, num_vfs=32, vf_offset=4,
               vf_device=0x233B, vf_mdev=types)
            for bdf, numa, bus in [("0000:1b:00.0", 0, 0x1B), ("0000:9d:00.0", 1, 0x9D)]]


# --- Ampere/Ada VDI and inference host ----------------------------------------------------------------
# A10 on vendor VFIO with the real B/Q/A type ids of [a10host] and synthetic C ids; A40 mdev (R535, NVIDIA
# prefix); L40 vendor VFIO; RTX 6000 Ada vendor VFIO with the Q ids of [vfiodoc] and synthetic C ids;
# one A16 board (four GPUs behind the board's PCIe switch) with mdev on VFs; one A2 with [a2host]'s ids.
def _series(q: list[int], a: list[int], b: list[int], c: list[int]) -> list[tuple[str, int]]:
    """(type name suffix, framebuffer GiB) of every series a board offers."""
    return ([(f"{n}Q", n) for n in q] + [(f"{n}A", n) for n in a] + [(f"{n}B", n) for n in b]
            + [(f"{n}C", n) for n in c])


A10_TYPES = [(588, "1B"), (589, "2B"), (590, "1Q"), (591, "2Q"), (592, "3Q"), (593, "4Q"), (594, "6Q"), (595, "8Q"),
             (596, "12Q"), (597, "24Q"), (598, "1A"), (599, "2A"), (600, "3A"), (601, "4A"), (602, "6A"), (603, "8A"),
             (604, "12A"), (605, "24A"), (606, "4C"), (607, "6C"), (608, "8C"), (609, "12C"), (610, "24C")]
A10_C = {"A10-24C": 1, "A10-12C": 2, "A10-8C": 3, "A10-6C": 4, "A10-4C": 6}
A40_C = {"A40-48C": 1, "A40-24C": 2, "A40-16C": 3, "A40-12C": 4, "A40-8C": 6, "A40-6C": 8, "A40-4C": 12}
L40_C = {f"L40-{t}": n for t, n in (("48C", 1), ("24C", 2), ("16C", 3), ("12C", 4), ("8C", 6), ("6C", 8), ("4C", 12))}
RTX6000ADA_C = {f"RTX6000-Ada-{t}": n for t, n in
                (("48C", 1), ("24C", 2), ("16C", 3), ("12C", 4), ("8C", 6), ("6C", 8), ("4C", 12))}
A16_C = {"A16-16C": 1, "A16-8C": 2, "A16-4C": 4}
A2_C = {"A2-16C": 1, "A2-8C": 2, "A2-4C": 4}
A2_TYPES = [(742, "1B"), (743, "2B"), (744, "1Q"), (745, "2Q"), (746, "4Q"), (747, "8Q"), (748, "16Q"), (749, "1A"),
            (750, "2A"), (751, "4A"), (752, "8A"), (753, "16A"), (754, "4C"), (755, "8C"), (756, "16C")]
A16_GPUS = ["0000:c4:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0"]


def _creatable(rows: list[tuple[int, str]]) -> str:
    return "\n".join(["ID    : vGPU Name"] + [f"{i:<5} : NVIDIA {name}" for i, name in rows])


def vdi_host() -> list[Fn]:
    a40 = [Mdev(f"nvidia-{700 + k}", f"NVIDIA A40-{t}", 1, _desc(gb * 1024, 48 // gb, res="3840x2400"))
           for k, (t, gb) in enumerate(_series([1, 2, 3, 4, 6, 8, 12, 16, 24, 48], [1, 2, 3, 4, 6, 8, 12, 16, 24, 48],
                                               [1, 2], [4, 6, 8, 12, 16, 24, 48]))]
    l40 = _creatable([(1300 + k, f"L40-{t}") for k, (t, _) in enumerate(
        _series([1, 2, 3, 4, 6, 8, 12, 16, 24, 48], [1, 2, 3, 4, 6, 8, 12, 16, 24, 48], [1, 2],
                [4, 6, 8, 12, 16, 24, 48]))])
    rtx = _creatable([(941 + k, f"RTX6000-Ada-{n}Q") for k, n in enumerate([1, 2, 3, 4, 6, 8, 12, 16, 24, 48])]
                     + [(960 + k, f"RTX6000-Ada-{n}C") for k, n in enumerate([4, 6, 8, 12, 16, 24, 48])])
    a16 = [Mdev(f"nvidia-{800 + k}", f"NVIDIA A16-{t}", 1, _desc(gb * 1024, min(16, 16 // gb), res="3840x2400"))
           for k, (t, gb) in enumerate(_series([1, 2, 4, 8, 16], [1, 2, 4, 8, 16], [1, 2], [4, 8, 16]))]
    a2 = [Mdev(f"nvidia-{i}", f"NVIDIA A2-{t}", 1, _desc(int(t[:-1]) * 1024, min(16, 16 // int(t[:-1]))))
          for i, t in A2_TYPES]
    fns = [
        Fn("0000:41:00.0", NV, 0x2236, D3, 0, ("0000:40:01.1",), driver="nvidia", total_vfs=32, num_vfs=32, vf_offset=4,
           vf_device=0x2236, vf_creatable=_creatable([(i, f"A10-{t}") for i, t in A10_TYPES]), subsystem=(NV, 0x1482)),
        Fn("0000:61:00.0", NV, 0x2235, D3, 0, ("0000:60:01.1",), driver="nvidia", total_vfs=32, num_vfs=32, vf_offset=4,
           vf_device=0x2235, vf_mdev=a40, subsystem=(NV, 0x145A)),
        Fn("0000:81:00.0", NV, 0x26B5, D3, 1, ("0000:80:01.1",), driver="nvidia", total_vfs=32, num_vfs=32, vf_offset=4,
           vf_device=0x26B5, vf_creatable=l40, subsystem=(NV, 0x169D)),
        Fn("0000:a1:00.0", NV, 0x26B1, D3, 1, ("0000:a0:01.1",), driver="nvidia", total_vfs=32, num_vfs=32, vf_offset=4,
           vf_device=0x26B1, vf_creatable=rtx, subsystem=(NV, 0x16A1)),
        Fn("0000:e1:00.0", NV, 0x25B6, D3, 1, ("0000:e0:03.1",), driver="nvidia", total_vfs=16, num_vfs=16, vf_offset=4,
           vf_device=0x25B6, vf_mdev=a2, subsystem=(NV, 0x157E)),
        Fn("0000:02:00.0", ASPEED, 0x2000, VGA, 0, ("0000:00:1c.0", "0000:01:00.0"), driver="ast"),
    ]
    for bdf in A16_GPUS:  # one board: a PCIe switch (upstream c2, downstream c3) in front of four GPUs
        fns.append(Fn(bdf, NV, 0x25B6, D3, 1, ("0000:c0:01.1", "0000:c2:00.0", f"0000:c3:{int(bdf[5:7], 16) - 0xC4:02x}.0"),
                      driver="nvidia", total_vfs=16, num_vfs=16, vf_offset=4, vf_device=0x25B6, vf_mdev=a16,
                      subsystem=(NV, 0x14A9)))
    return fns


# --- GA107 with a subsystem the tables do not know, and one whose subsystem files cannot be read ------
def ga107_unknown_board() -> list[Fn]:
    return [
        Fn("0000:3b:00.0", NV, 0x25B6, D3, 0, ("0000:3a:00.0",), driver="nvidia", subsystem=(0x1028, 0x0001)),
        Fn("0000:5e:00.0", NV, 0x25B6, D3, 0, ("0000:5d:00.0",), driver="nvidia", subsystem=(NV, 0x157E)),
    ]
