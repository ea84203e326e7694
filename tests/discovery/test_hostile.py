"""Damaged sysfs trees: every problem becomes a warning naming the path; other devices survive; no crash."""

from __future__ import annotations

import logging
import os
import random
import shutil
from pathlib import Path

import pytest

from driver.discovery import discover
from driver.errors import DiscoveryError

GPU0, GPU1, NIC = "0000:07:00.0", "0000:0f:00.0", "0000:0c:00.0"


def dev(root: Path, bdf: str) -> Path:
    return (root / "bus/pci/devices" / bdf).resolve()


def gpus(inv) -> list[str]:
    return [g.pci.address for g in inv.gpus]


def one_warning(inv, *needles: str) -> str:
    hits = [w for w in inv.warnings if all(n in w for n in needles)]
    assert len(hits) == 1, (needles, inv.warnings)
    return hits[0]


@pytest.mark.parametrize(
    ("content", "problem"),
    [("nvidia\n", "garbled value 'nvidia'"), ("", "garbled value ''"), ("0x10de0\n", "want a 16-bit hex number")],
)
def test_garbled_vendor_skips_that_device(tree, catalog, content, problem) -> None:
    root = tree()
    (dev(root, GPU0) / "vendor").write_text(content)
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1] and len(inv.nics) == 1
    one_warning(inv, f"{GPU0}/vendor", problem, f"skipping PCI device {GPU0}")
    assert inv.gpus[0].index == 0  # indices stay dense


def test_missing_class_file(tree, catalog) -> None:
    root = tree()
    (dev(root, GPU1) / "class").unlink()
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0]
    one_warning(inv, f"{GPU1}/class: missing")


def test_unreadable_file(tree, catalog) -> None:
    root = tree()
    target = dev(root, GPU0) / "device"
    target.unlink()
    target.mkdir()  # reading a directory fails like an unreadable attribute
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1]
    one_warning(inv, f"{GPU0}/device: unreadable (ValueError: not a regular file)")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of mode bits")
def test_permission_denied(tree, catalog) -> None:  # pragma: no cover - runs only as non-root
    root = tree()
    (dev(root, GPU0) / "device").chmod(0)
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1]
    one_warning(inv, f"{GPU0}/device: unreadable (PermissionError")


def test_binary_garbage(tree, catalog) -> None:
    root = tree()
    (dev(root, GPU0) / "device").write_bytes(b"\xff\xfe\x00garbage")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1]
    one_warning(inv, f"{GPU0}/device: unreadable (UnicodeDecodeError")


def test_unknown_gpu_device_id(tree, catalog) -> None:
    root = tree()
    (dev(root, GPU1) / "device").write_text("0x2bad\n")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0]
    w = one_warning(inv, f"{GPU1}/device", "unknown NVIDIA GPU device ID 0x2bad")
    assert "hardware.gpus" in w  # tells the user how to fix it


def test_broken_symlink(tree, catalog) -> None:
    root = tree()
    link = root / "bus/pci/devices" / GPU0
    link.unlink()
    link.symlink_to("../../../devices/pci0000:00/gone/" + GPU0)
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1]
    one_warning(inv, str(link), "broken symlink (No such file or directory)")


@pytest.mark.parametrize("kind", ["self", "pair"])
def test_symlink_loop(tree, catalog, kind) -> None:
    root = tree()
    link = root / "bus/pci/devices" / GPU0
    link.unlink()
    if kind == "self":
        link.symlink_to(GPU0)
    else:
        (root / "bus/pci/devices/loop-b").symlink_to(GPU0)
        link.symlink_to("loop-b")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1] and len(inv.nics) == 1
    one_warning(inv, str(link), "symlink loop")


def test_link_escaping_the_root(tree, catalog, tmp_path) -> None:
    root = tree()
    outside = tmp_path / "elsewhere" / GPU0
    shutil.copytree(dev(root, GPU0), outside, symlinks=True)
    link = root / "bus/pci/devices" / GPU0
    link.unlink()
    link.symlink_to(outside)
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1]
    one_warning(inv, str(link), "outside")


def test_link_to_wrong_device(tree, catalog) -> None:
    root = tree()
    link = root / "bus/pci/devices" / GPU0
    target = os.readlink(root / "bus/pci/devices" / GPU1)
    link.unlink()
    link.symlink_to(target)
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1]
    one_warning(inv, str(link), f"not a directory named {GPU0}")


def test_bad_names_and_plain_files_in_the_bus_directory(tree, catalog) -> None:
    root = tree()
    (root / "bus/pci/devices/README").write_text("hello\n")
    (root / "bus/pci/devices/0000:aa:00.0").write_text("not a link\n")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0, GPU1]
    one_warning(inv, "bus/pci/devices/README", "not a PCI address")
    one_warning(inv, "bus/pci/devices/0000:aa:00.0", "outside")


def test_empty_device_directory(tree, catalog) -> None:
    root = tree()
    empty = root / "devices/pci0000:00/0000:33:00.0"
    empty.mkdir()
    (root / "bus/pci/devices/0000:33:00.0").symlink_to("../../../devices/pci0000:00/0000:33:00.0")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0, GPU1]
    one_warning(inv, "0000:33:00.0/class: missing")


def test_empty_and_missing_bus(tree, catalog) -> None:
    root = tree()
    shutil.rmtree(root / "bus/pci/devices")
    (root / "bus/pci/devices").mkdir()
    inv = discover(root, catalog)
    assert inv.gpus == () and inv.nics == () and inv.warnings == ()
    shutil.rmtree(root / "bus")
    inv = discover(root, catalog)
    assert inv.gpus == ()
    one_warning(inv, "bus/pci/devices: missing")


def test_empty_root_directory(tmp_path, catalog) -> None:
    inv = discover(tmp_path, catalog)
    assert inv.gpus == () and inv.nics == ()
    one_warning(inv, "bus/pci/devices: missing")


def test_garbled_numa_keeps_the_device(tree, catalog) -> None:
    root = tree()
    (dev(root, GPU0) / "numa_node").write_text("zero\n")
    (dev(root, GPU1) / "numa_node").write_text("-1\n")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0, GPU1]
    assert [g.pci.numa_node for g in inv.gpus] == [None, None]
    one_warning(inv, f"{GPU0}/numa_node", "NUMA node unknown")
    assert len(inv.warnings) == 1  # -1 is the kernel's "unknown", not a problem


def test_speed_garbled_unreadable_and_down(tree, catalog) -> None:
    root = tree()
    speed = root / "class/net/ens3f0/speed"
    speed.write_text("fast\n")
    inv = discover(root, catalog)
    assert inv.nics[0].speed_mbps is None and len(inv.nics[0].vfs) == 8
    one_warning(inv, "class/net/ens3f0/speed", "link speed unknown")
    speed.write_text("-1\n")
    assert discover(root, catalog).nics[0].speed_mbps is None
    assert discover(root, catalog).warnings == ()
    speed.unlink()
    speed.mkdir()  # the kernel answers EINVAL for a down link: unknown, no warning
    inv = discover(root, catalog)
    assert inv.nics[0].speed_mbps is None and inv.warnings == ()


def test_broken_virtfn_link(tree, catalog) -> None:
    root = tree()
    vf_link = dev(root, NIC) / "virtfn3"
    vf_link.unlink()
    vf_link.symlink_to("../0000:0c:09.9")
    inv = discover(root, catalog)
    nic = inv.nics[0]
    assert [vf.index for vf in nic.vfs] == [0, 1, 2, 4, 5, 6, 7]
    one_warning(inv, "virtfn3", "skipping VF virtfn3 of NIC 0000:0c:00.0")
    one_warning(inv, f"{NIC}/sriov_numvfs", "says 8 VFs but 7 usable")


def test_garbled_sriov_counts_skip_the_nic(tree, catalog) -> None:
    root = tree()
    (dev(root, NIC) / "sriov_totalvfs").write_text("many\n")
    inv = discover(root, catalog)
    assert inv.nics == () and gpus(inv) == [GPU0, GPU1]
    one_warning(inv, f"{NIC}/sriov_totalvfs", "want an integer", f"skipping NIC {NIC}")


def test_garbled_mdev_type_skips_only_that_type(tree, catalog) -> None:
    root = tree()
    vf0 = (dev(root, GPU1) / "virtfn0").resolve()
    vf1 = (dev(root, GPU1) / "virtfn1").resolve()
    (vf0 / "mdev_supported_types/nvidia-457/available_instances").write_text("lots\n")
    (vf0 / "mdev_supported_types/nvidia-458/name").unlink()
    (vf1 / "mdev_supported_types/nvidia-458/name").write_text("NVIDIA A100X-3C\n")  # disagrees with nothing left
    inv = discover(root, catalog)
    types = {t.type_id: t for t in inv.gpus[1].mdev_types}
    assert sorted(types) == ["nvidia-457", "nvidia-458"]
    assert types["nvidia-457"].available_instances == 1 and types["nvidia-457"].parents == (vf1.name,)
    assert types["nvidia-458"].parents == (vf1.name,) and types["nvidia-458"].profile == "A100X-3C"
    one_warning(inv, f"{vf0.name}/mdev_supported_types/nvidia-457/available_instances", "want an integer")
    one_warning(inv, f"{vf0.name}/mdev_supported_types/nvidia-458/name: missing")


def test_mdev_type_symlink_loop(tree, catalog) -> None:
    root = tree()
    types = dev(root, GPU0) / "mdev_supported_types"
    types.mkdir()
    (types / "nvidia-1").symlink_to("nvidia-1")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0, GPU1] and inv.gpus[0].mdev_types == ()
    one_warning(inv, "mdev_supported_types/nvidia-1/name", "unreadable")


def test_missing_root_is_an_error(tmp_path, catalog) -> None:
    with pytest.raises(DiscoveryError) as info:
        discover(tmp_path / "nope", catalog)
    assert str(tmp_path / "nope") in str(info.value) and info.value.exit_code == 2
    (tmp_path / "file").write_text("x")
    with pytest.raises(DiscoveryError, match="not a directory"):
        discover(tmp_path / "file", catalog)


def test_warnings_are_logged_with_the_path(tree, catalog, caplog) -> None:
    root = tree()
    (dev(root, GPU0) / "vendor").write_text("junk\n")
    with caplog.at_level(logging.WARNING, logger="fake-dra.discovery"):
        discover(root, catalog)
    records = [r for r in caplog.records if r.name == "fake-dra.discovery"]
    assert len(records) == 1 and records[0].path.endswith(f"{GPU0}/vendor")


@pytest.mark.parametrize("seed", range(8))
def test_random_damage_never_crashes(tree, catalog, seed) -> None:
    """Overwrite, delete or re-link random entries; discovery must finish and only ever shrink."""
    rng = random.Random(seed)
    root = tree("mini")
    entries = sorted(str(p) for p in root.rglob("*"))
    for path in map(Path, rng.sample(entries, 25)):
        if not (path.exists() or path.is_symlink()):
            continue
        action = rng.choice(["garbage", "delete", "loop", "binary"])
        if path.is_dir() and not path.is_symlink():
            if action == "delete":
                shutil.rmtree(path)
            continue
        path.unlink()
        if action == "garbage":
            path.write_text(rng.choice(["", "0x", "-", "999999999999", "0xzz\n", "\n\n"]))
        elif action == "loop":
            path.symlink_to(path.name)
        elif action == "binary":
            path.write_bytes(bytes(rng.randrange(256) for _ in range(8)))
    inv = discover(root, catalog)
    # A VF whose physfn link was destroyed looks like a plain port; plain ports are never published
    # unless the driver config names them, so only the SR-IOV PFs are bounded here.
    assert len(inv.gpus) <= 2 and sum(n.sriov for n in inv.nics) <= 1
    assert all(isinstance(w, str) and w for w in inv.warnings)


def test_conflicting_mdev_type_names_across_vfs(tree, catalog) -> None:
    root = tree()
    vf1 = (dev(root, GPU1) / "virtfn1").resolve()
    (vf1 / "mdev_supported_types/nvidia-457/name").write_text("NVIDIA A100X-5C\n")
    inv = discover(root, catalog)
    t = {t.type_id: t for t in inv.gpus[1].mdev_types}["nvidia-457"]
    assert t.profile == "A100X-4C" and t.available_instances == 1
    one_warning(inv, str(vf1 / "mdev_supported_types/nvidia-457/name"), "differs from 'NVIDIA A100X-4C'")


def test_functions_we_never_publish_are_not_read_beyond_class(tree, catalog) -> None:
    root = tree("no-gpu")
    nvme = dev(root, "0000:01:00.0")
    assert (nvme / "class").read_text() == "0x010802\n"
    (nvme / "vendor").write_text("garbage\n")
    (nvme / "numa_node").unlink()
    inv = discover(root, catalog)
    # The E810 PF and the on-board Realtek port (no SR-IOV); never the NVMe drive.
    assert inv.warnings == () and [(n.pci.address, n.sriov) for n in inv.nics] == [("0000:31:00.0", True),
                                                                                   ("0000:02:00.0", False)]


def test_garbled_vf_is_skipped_with_its_path(tree, catalog) -> None:
    root = tree()
    vf2 = (dev(root, NIC) / "virtfn2").resolve()
    (vf2 / "device").write_text("0xnope\n")
    inv = discover(root, catalog)
    assert [vf.index for vf in inv.nics[0].vfs] == [0, 1, 3, 4, 5, 6, 7]
    one_warning(inv, str(vf2 / "device"), "garbled")


def test_fifo_and_huge_files_do_not_hang_or_exhaust(tree, catalog) -> None:
    root = tree()
    vendor = dev(root, GPU0) / "vendor"
    vendor.unlink()
    os.mkfifo(vendor)  # a blocking open/read would hang discovery forever
    (dev(root, GPU1) / "device").write_text("0x20b0" + " " * 10_000 + "\n")
    inv = discover(root, catalog)
    assert gpus(inv) == [] and len(inv.nics) == 1
    one_warning(inv, f"{GPU0}/vendor: unreadable (ValueError: not a regular file)")
    one_warning(inv, f"{GPU1}/device: unreadable (ValueError: larger than 4096 bytes)")


def test_device_outside_a_root_complex_keeps_an_unknown_pcie_root(tree, catalog) -> None:
    root = tree()
    src = dev(root, GPU0)
    moved = root / "devices" / GPU0  # directly under devices/, not devices/pciDDDD:BB/...
    shutil.copytree(src, moved, symlinks=True)
    link = root / "bus/pci/devices" / GPU0
    link.unlink()
    link.symlink_to(f"../../../devices/{GPU0}")
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0, GPU1]
    assert inv.gpus[0].pci.pcie_root is None and inv.gpus[1].pci.pcie_root == "pci0000:00"
    one_warning(inv, str(link), "not below a devices/pciDDDD:BB root complex; pcieRoot unknown")


def test_missing_pci_bus_directory_is_an_empty_inventory_with_a_warning(tree, catalog) -> None:
    root = tree()
    shutil.rmtree(root / "bus/pci")
    inv = discover(root, catalog)
    assert inv.gpus == () and inv.nics == ()
    one_warning(inv, "bus/pci/devices: missing; no PCI devices discovered")


def test_device_link_to_a_regular_file_skips_that_device(tree, catalog) -> None:
    root = tree()
    link = root / "bus/pci/devices" / GPU0
    target = dev(root, GPU0)
    shutil.rmtree(target)
    target.write_text("not a device directory\n")  # same path inside ROOT/devices, now a file
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU1] and len(inv.nics) == 1
    one_warning(inv, str(link), "which is not a directory", f"skipping PCI device {GPU0}")


def test_gpu_behind_a_vmd_domain_is_discovered(tree, catalog) -> None:
    # Intel VMD puts its child devices in PCI domains from 0x10000 on; the kernel names them with
    # five hex digits (e.g. 10000:e1:00.0) under the VMD controller's own root port.
    root = tree()
    vmd = "10000:e1:00.0"
    parent = root / "devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0"
    shutil.copytree(dev(root, GPU1), parent / vmd, symlinks=True)
    (root / "bus/pci/devices" / GPU1).unlink()
    for link in (parent / vmd).glob("virtfn*"):  # its VFs stay where they were; drop the links
        link.unlink()
    os.symlink(os.path.relpath(parent / vmd, root / "bus/pci/devices"), root / "bus/pci/devices" / vmd)
    inv = discover(root, catalog)
    assert gpus(inv) == [GPU0, vmd]
    assert inv.gpus[1].pci.pcie_root == "pci0000:00"
    assert not [w for w in inv.warnings if vmd in w]
