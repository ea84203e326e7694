"""Every fake profile discovers to exactly the hardware it describes (counts, models, speeds, NUMA, roots)."""

from __future__ import annotations

from collections import Counter

import pytest

from driver.discovery import PROFILES, discover

DGX_A100 = {
    "gpus": ["a100-40gb"] * 8,
    "gpu_numa": [0, 0, 0, 0, 1, 1, 1, 1],
    "gpu_roots": ["pci0000:00", "pci0000:00", "pci0000:40", "pci0000:40",
                  "pci0000:80", "pci0000:80", "pci0000:c0", "pci0000:c0"],
    "mdev_types": [0] * 8,
    "nics": [(a, f"enp{int(a[5:7], 16)}s0np0", 200000, 16, 4) for a in
             ["0000:0c:00.0", "0000:12:00.0", "0000:54:00.0", "0000:5a:00.0",
              "0000:8d:00.0", "0000:94:00.0", "0000:ba:00.0", "0000:cc:00.0"]]
    + [("0000:e1:00.0", "enp225s0f0", 100000, 8, 0), ("0000:e1:00.1", "enp225s0f1", 100000, 8, 0)],
    "nic_numa": [0, 0, 0, 0, 1, 1, 1, 1, 1, 1],
    "nic_roots": ["pci0000:00", "pci0000:00", "pci0000:40", "pci0000:40",
                  "pci0000:80", "pci0000:80", "pci0000:c0", "pci0000:c0", "pci0000:e0", "pci0000:e0"],
}

EXPECTED = {
    "demo": {
        "gpus": ["a100-40gb", "a100-40gb"],
        "gpu_numa": [0, 0],
        "gpu_roots": ["pci0000:00", "pci0000:00"],
        "mdev_types": [0, 6],
        "nics": [("0000:0c:00.0", "ens3f0", 100000, 16, 8)],
        "nic_numa": [0],
        "nic_roots": ["pci0000:00"],
    },
    "dgx-a100": DGX_A100,
    # the same host as a vGPU host: 12 mdev types (A100X-*) on the VFs of each GPU
    "dgx-a100-vgpu": {**DGX_A100, "mdev_types": [12] * 8},
    "h200-vgpu": {
        "gpus": ["h200-141gb"] * 8,
        "gpu_numa": [0, 0, 0, 0, 1, 1, 1, 1],
        "gpu_roots": ["pci0000:15", "pci0000:37", "pci0000:48", "pci0000:59",
                      "pci0000:97", "pci0000:b7", "pci0000:c7", "pci0000:d7"],
        "mdev_types": [9] * 8,
        "nics": [("0000:02:00.0", "eno1", 1000, 7, 0),
                 ("0000:1d:00.0", "ens1np0", 400000, 16, 8), ("0000:45:00.0", "ens2np0", 400000, 16, 8),
                 ("0000:9f:00.0", "ens3np0", 400000, 16, 8), ("0000:c5:00.0", "ens4np0", 400000, 16, 8),
                 ("0000:e1:00.0", "ens9np0", 200000, 16, 0)],
        "nic_numa": [0, 0, 0, 1, 1, 1],
        "nic_roots": ["pci0000:00", "pci0000:15", "pci0000:37", "pci0000:97", "pci0000:b7", "pci0000:e0"],
    },
    "h100": {
        "gpus": ["h100-80gb-sxm5"] * 8,
        "gpu_numa": [0, 0, 0, 0, 1, 1, 1, 1],
        "gpu_roots": ["pci0000:15", "pci0000:37", "pci0000:48", "pci0000:59",
                      "pci0000:97", "pci0000:b7", "pci0000:c7", "pci0000:d7"],
        "mdev_types": [0] * 8,
        "nics": [("0000:1d:00.0", "ens1np0", 400000, 16, 8), ("0000:45:00.0", "ens2np0", 400000, 16, 8),
                 ("0000:9f:00.0", "ens3np0", 400000, 16, 8), ("0000:c5:00.0", "ens4np0", 400000, 16, 8)],
        "nic_numa": [0, 0, 1, 1],
        "nic_roots": ["pci0000:15", "pci0000:37", "pci0000:97", "pci0000:b7"],
    },
    "vgpu-host": {
        "gpus": ["a100-80gb-pcie", "t4", "l4", "a100-80gb-pcie", "t4"],
        "gpu_numa": [0, 0, 1, 1, 1],
        "gpu_roots": ["pci0000:3a", "pci0000:5d", "pci0000:85", "pci0000:ae", "pci0000:d7"],
        "mdev_types": [7, 3, 0, 7, 3],
        "nics": [("0000:18:00.0", "ens1f0", 25000, 64, 4), ("0000:18:00.1", "ens1f1", None, 64, 0)],
        "nic_numa": [0, 0],
        "nic_roots": ["pci0000:17", "pci0000:17"],
    },
    # HGX B200: each GPU shares its root complex (and PCIe switch) with an InfiniBand compute NIC without VFs;
    # the four NVSwitch-management functions have no SR-IOV: plain ports, numbered last.
    "hgx-b200": {
        "gpus": ["b200"] * 8,
        "gpu_numa": [0, 0, 0, 0, 1, 1, 1, 1],
        "gpu_roots": ["pci0000:15", "pci0000:3d", "pci0000:4c", "pci0000:5b",
                      "pci0000:97", "pci0000:bd", "pci0000:cb", "pci0000:d9"],
        "mdev_types": [0] * 8,
        "nics": [(f"0000:{b - 3:02x}:00.0", f"ibp{b - 3}s0", 400000, 16, 0) for b in (0x1B, 0x43, 0x52, 0x61, 0x9D)]
        + [("0000:aa:00.0", "enp170s0f0np0", 200000, 16, 8), ("0000:aa:00.1", "enp170s0f1np1", 200000, 16, 0)]
        + [(f"0000:{b - 3:02x}:00.0", f"ibp{b - 3}s0", 400000, 16, 0) for b in (0xC3, 0xD1, 0xDF)]
        + [(f"0000:0{b}:00.{f}", f"ibp{b}s0f{f}", 200000, 0, 0) for b in (5, 6) for f in (0, 1)],
        "nic_numa": [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0],
        "nic_roots": ["pci0000:15", "pci0000:3d", "pci0000:4c", "pci0000:5b", "pci0000:97", "pci0000:a0",
                      "pci0000:a0", "pci0000:bd", "pci0000:cb", "pci0000:d9"] + ["pci0000:00"] * 4,
    },
    "rtxpro6000": {
        "gpus": ["rtx-pro-6000-bse"] * 8,
        "gpu_numa": [0, 0, 0, 0, 1, 1, 1, 1],
        "gpu_roots": ["pci0000:16", "pci0000:29", "pci0000:3c", "pci0000:62",
                      "pci0000:97", "pci0000:aa", "pci0000:bc", "pci0000:e0"],
        "mdev_types": [0] * 8,
        "nics": [("0000:31:00.0", "ens5f0np0", 400000, 16, 8), ("0000:b1:00.0", "ens13f0np0", 400000, 16, 8)],
        "nic_numa": [0, 1],
        "nic_roots": ["pci0000:30", "pci0000:b0"],
    },
    # the board's 29 C and 29 Q DC types on each VF
    "rtxpro6000-vgpu": {
        "gpus": ["rtx-pro-6000-bse"] * 2,
        "gpu_numa": [0, 1],
        "gpu_roots": ["pci0000:16", "pci0000:97"],
        "mdev_types": [58, 58],
        "nics": [("0000:31:00.0", "ens5f0np0", 400000, 16, 8), ("0000:b1:00.0", "ens13f0np0", 400000, 16, 8)],
        "nic_numa": [0, 1],
        "nic_roots": ["pci0000:30", "pci0000:b0"],
    },
    # Grace: each superchip's GPU in its own PCI domain (0009, 0019), the CPU's NUMA node.
    "gh200": {
        "gpus": ["gh200", "gh200"],
        "gpu_numa": [0, 1],
        "gpu_roots": ["pci0009:00", "pci0019:00"],
        "mdev_types": [0, 0],
        "nics": [("0000:01:00.0", "enP1p1s0f0np0", 400000, 16, 4), ("0000:01:00.1", "enP1p1s0f1np1", 400000, 16, 0),
                 ("0010:01:00.0", "enP16p1s0f0np0", 400000, 16, 0)],
        "nic_numa": [0, 0, 1],
        "nic_roots": ["pci0000:00", "pci0000:00", "pci0010:00"],
    },
    "no-gpu": {
        "gpus": [],
        "gpu_numa": [],
        "gpu_roots": [],
        "mdev_types": [],
        # The on-board Realtek has no SR-IOV: a plain port, numbered after the SR-IOV PFs.
        "nics": [("0000:31:00.0", "ens2f0", 100000, 128, 8), ("0000:02:00.0", "eno1", 1000, 0, 0)],
        "nic_numa": [0, 0],
        "nic_roots": ["pci0000:30", "pci0000:00"],
    },
}


def test_every_profile_has_expectations() -> None:
    assert set(EXPECTED) == set(PROFILES)


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_profile_discovers_exactly(profile, pristine, catalog) -> None:
    inv = discover(pristine(profile), catalog)
    want = EXPECTED[profile]
    assert inv.warnings == ()
    assert [g.model.name for g in inv.gpus] == want["gpus"]
    assert [g.index for g in inv.gpus] == list(range(len(inv.gpus)))
    assert [g.pci.numa_node for g in inv.gpus] == want["gpu_numa"]
    assert [g.pci.pcie_root for g in inv.gpus] == want["gpu_roots"]
    assert [len(g.mdev_types) for g in inv.gpus] == want["mdev_types"]
    assert [(n.pci.address, n.interface, n.speed_mbps, n.total_vfs, len(n.vfs)) for n in inv.nics] == want["nics"]
    assert [n.num_vfs for n in inv.nics] == [len(n.vfs) for n in inv.nics]
    assert [n.pci.numa_node for n in inv.nics] == want["nic_numa"]
    assert [n.pci.pcie_root for n in inv.nics] == want["nic_roots"]
    # Stable order by PCI address (SR-IOV PFs first, then plain ports).
    assert [g.pci.address for g in inv.gpus] == sorted(g.pci.address for g in inv.gpus)
    assert [n.pci.address for n in inv.nics] == sorted(n.pci.address for n in inv.nics if n.sriov) + sorted(
        n.pci.address for n in inv.nics if not n.sriov)
    assert [n.index for n in inv.nics] == list(range(len(inv.nics)))
    for nic in inv.nics:
        assert [vf.index for vf in nic.vfs] == list(range(len(nic.vfs)))
        assert all(vf.pci.pcie_root == nic.pci.pcie_root for vf in nic.vfs)
        assert all(vf.interface == f"{nic.interface}v{vf.index}" for vf in nic.vfs)


def test_non_gpus_are_not_gpus(pristine, catalog) -> None:
    """NVSwitch bridges (10de, class 0x0680) and the BMC's VGA (1a03, class 0x0300) are on the bus."""
    root = pristine("dgx-a100")
    classes = Counter((root / "bus/pci/devices" / d / "class").read_text().strip() for d in
                      sorted(p.name for p in (root / "bus/pci/devices").iterdir()))
    assert classes["0x068000"] == 6 and classes["0x030000"] == 1
    assert all(g.pci.class_code == 0x030200 for g in discover(root, catalog).gpus)


def test_sriov_vgpu_types_are_collected_from_the_vfs(pristine, catalog) -> None:
    inv = discover(pristine("demo"), catalog)
    gpu = inv.gpus[1]
    # The SXM4 board's own type names (not the PCIe board's A100-*), ordered by mdev type id.
    assert [t.profile for t in gpu.mdev_types] == ["A100X-4C", "A100X-5C", "A100X-8C", "A100X-10C", "A100X-20C",
                                                   "A100X-40C"]
    for t in gpu.mdev_types:
        assert t.name == f"NVIDIA {t.profile}" and t.device_api == "vfio-pci"
        assert len(t.parents) == 16 and t.available_instances == 16
        assert gpu.pci.address not in t.parents  # on the VFs, not the PF
        assert t.profile in {p.name for p in gpu.model.vgpu_profiles}


def test_pre_ampere_vgpu_types_sit_on_the_pf(pristine, catalog) -> None:
    t4 = discover(pristine("vgpu-host"), catalog).gpus[1]
    assert t4.model.name == "t4"
    assert [(t.profile, t.available_instances, t.parents) for t in t4.mdev_types] == [
        ("T4-16C", 1, ("0000:5e:00.0",)), ("T4-8C", 2, ("0000:5e:00.0",)), ("T4-4C", 4, ("0000:5e:00.0",)),
    ]


def test_dgx_a100_vgpu_host_writes_the_boards_types_on_every_vf(pristine, catalog) -> None:
    """HGX A100 40GB with the R510 vGPU manager: 12 "GRID A100X-*" mdev types on each of 16 VFs;
    MIG is off, so only the time-sliced types have a free instance."""
    inv = discover(pristine("dgx-a100-vgpu"), catalog)
    for gpu in inv.gpus:
        types = {t.profile: t for t in gpu.mdev_types}
        assert set(types) == {f"A100X-{n}" for n in ("4C", "5C", "8C", "10C", "20C", "40C", "1-5C", "2-10C",
                                                     "3-20C", "4-20C", "7-40C", "1-5CME")}
        assert all(t.name == f"GRID {t.profile}" and len(t.parents) == 16 for t in types.values())
        assert gpu.pci.address not in types["A100X-4C"].parents
        assert types["A100X-4C"].type_id == "nvidia-457" and types["A100X-4C"].available_instances == 16
        assert types["A100X-1-5C"].available_instances == 0  # MIG off


def test_h200_vgpu_host_uses_vendor_specific_vfio(pristine, catalog) -> None:
    root = pristine("h200-vgpu")
    vf = (root / "bus/pci/devices/0000:1b:00.0/virtfn0").resolve()
    assert vf.name == "0000:1b:00.4" and not (vf / "mdev_supported_types").exists()
    assert (vf / "nvidia/creatable_vgpu_types").read_text().splitlines()[:2] == ["ID    : vGPU Name", "1428  : NVIDIA H200X-141C"]
    inv = discover(root, catalog)
    for gpu in inv.gpus:
        assert [t.profile for t in gpu.mdev_types] == [
            "H200X-70C", "H200X-35C", "H200X-28C", "H200X-17C", "H200X-14C", "H200X-8C", "H200X-7C", "H200X-4C",
            "H200X-141C"]
        assert all(t.framework == "vendor-vfio" and len(t.parents) == 32 for t in gpu.mdev_types)


def test_rtx_pro_6000_vgpu_host_names_types_as_the_host_writes_them(pristine, catalog) -> None:
    root = pristine("rtxpro6000-vgpu")
    vf = (root / "bus/pci/devices/0000:17:00.0/virtfn0").resolve()
    assert (vf / "mdev_supported_types/nvidia-1560/name").read_text() == "NVIDIA RTX Pro 6000 Blackwell DC-1-12C\n"
    gpu = discover(root, catalog).gpus[0]
    types = {t.profile: t for t in gpu.mdev_types}
    assert types["DC-1-12C"].type_id == "nvidia-1560" and types["DC-4-96Q"].type_id == "nvidia-1585"
    assert {"DC-1-24CGFX", "DC-1-24QGFX", "DC-8C", "DC-96Q"} <= set(types)
    assert types["DC-1-12C"].available_instances == 16 and types["DC-12C"].available_instances == 0  # MIG on


def test_grace_gpus_live_in_their_own_pci_domains(pristine, catalog) -> None:
    root = pristine("gh200")
    link = root / "bus/pci/devices/0009:01:00.0"
    assert link.resolve().relative_to(root.resolve()).parts[:3] == ("devices", "pci0009:00", "0009:00:00.0")
    assert [g.pci.address for g in discover(root, catalog).gpus] == ["0009:01:00.0", "0019:01:00.0"]


def test_gpu_vfs_are_not_separate_gpus(pristine, catalog) -> None:
    root = pristine("vgpu-host")
    nvidia = [p for p in (root / "bus/pci/devices").iterdir() if (p / "vendor").read_text() == "0x10de\n"]
    assert len(nvidia) == 5 + 40  # 5 PFs + 2 x 20 VFs
    assert len(discover(root, catalog).gpus) == 5


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_bound_drivers_and_iommu_groups(profile, pristine, catalog) -> None:
    inv = discover(pristine(profile), catalog)
    assert {g.pci.driver for g in inv.gpus} <= {"nvidia"}
    functions = [g.pci for g in inv.gpus] + [n.pci for n in inv.nics] + [v.pci for n in inv.nics for v in n.vfs]
    groups = [p.iommu_group for p in functions]
    assert None not in groups and len(set(groups)) == len(groups)  # one group per function
    for nic in inv.nics:
        want = {(0x15B3, None): ("mlx5_core", "mlx5_core"), (0x8086, None): ("ice", "iavf"),
                (0x8086, 0x1521): ("igb", "igbvf"), (0x10EC, None): ("r8169", None)}
        pf_driver, vf_driver = want.get((nic.pci.vendor_id, nic.pci.device_id)) or want[(nic.pci.vendor_id, None)]
        assert nic.pci.driver == pf_driver and all(vf.pci.driver == vf_driver for vf in nic.vfs)


def test_unbound_device_has_no_driver_and_no_warning(tree, catalog) -> None:
    root = tree()
    dev = (root / "bus/pci/devices/0000:07:00.0").resolve()
    (dev / "driver").unlink()
    (dev / "iommu_group").unlink()
    inv = discover(root, catalog)
    assert (inv.gpus[0].pci.driver, inv.gpus[0].pci.iommu_group) == (None, None) and inv.warnings == ()
