"""Every fake profile discovers to exactly the hardware it describes (counts, models, speeds, NUMA, roots)."""

from __future__ import annotations

from collections import Counter

import pytest

from driver.discovery import PROFILES, discover

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
    "dgx-a100": {
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
    "no-gpu": {
        "gpus": [],
        "gpu_numa": [],
        "gpu_roots": [],
        "mdev_types": [],
        "nics": [("0000:31:00.0", "ens2f0", 100000, 128, 8)],
        "nic_numa": [0],
        "nic_roots": ["pci0000:30"],
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
    # Stable order by PCI address.
    assert [g.pci.address for g in inv.gpus] == sorted(g.pci.address for g in inv.gpus)
    assert [n.pci.address for n in inv.nics] == sorted(n.pci.address for n in inv.nics)
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
    assert [t.profile for t in gpu.mdev_types] == ["A100-40C", "A100-20C", "A100-10C", "A100-8C", "A100-5C", "A100-4C"]
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
        want = {0x15B3: ("mlx5_core", "mlx5_core"), 0x8086: ("ice", "iavf")}[nic.pci.vendor_id]
        assert nic.pci.driver == want[0] and all(vf.pci.driver == want[1] for vf in nic.vfs)


def test_unbound_device_has_no_driver_and_no_warning(tree, catalog) -> None:
    root = tree()
    dev = (root / "bus/pci/devices/0000:07:00.0").resolve()
    (dev / "driver").unlink()
    (dev / "iommu_group").unlink()
    inv = discover(root, catalog)
    assert (inv.gpus[0].pci.driver, inv.gpus[0].pci.iommu_group) == (None, None) and inv.warnings == ()
