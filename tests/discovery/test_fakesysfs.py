"""make_sysfs writes the kernel's layout, deterministically; set_fault round-trips through the health model's reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driver.discovery import FAULT_FILE, PROFILES, make_sysfs, set_fault
from driver.errors import InputError
from driver.state.health import read_fault


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = p.read_text()
    return out


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_deterministic(profile, tmp_path, pristine) -> None:
    make_sysfs(profile, tmp_path / "again")
    assert snapshot(tmp_path / "again") == snapshot(pristine(profile))


def test_kernel_layout(pristine) -> None:
    root = pristine("demo")
    link = root / "bus/pci/devices/0000:0f:00.0"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert os.readlink(link) == "../../../devices/pci0000:00/0000:00:01.0/0000:0d:00.0/0000:0e:00.0/0000:0f:00.0"
    dev = link.resolve()
    assert (dev / "vendor").read_text() == "0x10de\n"
    assert (dev / "device").read_text() == "0x20b0\n"
    assert (dev / "class").read_text() == "0x030200\n"
    assert (dev / "numa_node").read_text() == "0\n"
    assert (dev / "sriov_numvfs").read_text() == "16\n"
    # VF Device ID and First VF Offset are read from the SR-IOV capability at enumeration
    # (drivers/pci/iov.c sriov_init): the same whether or not VFs are enabled.
    idle = (root / "bus/pci/devices/0000:07:00.0").resolve()
    assert (idle / "sriov_numvfs").read_text() == "0\n"
    for gpu in (dev, idle):
        assert (gpu / "sriov_vf_device").read_text() == "20b0\n" and (gpu / "sriov_offset").read_text() == "4\n"
    vf = (dev / "virtfn0").resolve()
    assert vf.name == "0000:0f:00.4" and vf.parent == dev.parent
    assert (vf / "physfn").resolve() == dev
    assert (vf / "mdev_supported_types/nvidia-457/name").read_text() == "NVIDIA A100X-4C\n"
    # The kernel's mdev type directory: create, name, available_instances, device_api, description,
    # devices/ (Documentation/driver-api/vfio-mediated-device.rst).
    assert sorted(p.name for p in (vf / "mdev_supported_types/nvidia-457").iterdir()) == [
        "available_instances", "create", "description", "device_api", "devices", "name"]
    net = root / "class/net/ens3f0"
    assert net.is_symlink() and (net / "speed").read_text() == "100000\n"
    assert (net / "device").resolve() == (root / "bus/pci/devices/0000:0c:00.0").resolve()
    # Every readable regular file ends with a newline, like sysfs attributes (`create` is write-only).
    assert all(v.endswith("\n") for k, v in snapshot(root).items()
               if not v.startswith("-> ") and not k.endswith("/create"))


def test_unknown_profile_lists_the_known_ones(tmp_path) -> None:
    with pytest.raises(InputError) as info:
        make_sysfs("dgx-b300", tmp_path / "x")
    assert "unknown sysfs profile 'dgx-b300'" in str(info.value)
    for name in PROFILES:
        assert name in str(info.value)


def test_refuses_non_empty_output(tmp_path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not an empty directory"):
        make_sysfs("demo", tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_empty_existing_directory_is_fine(tmp_path) -> None:
    make_sysfs("no-gpu", tmp_path)
    assert (tmp_path / "bus/pci/devices").is_dir()


def test_fault_round_trip(tree) -> None:
    root = tree()
    assert read_fault(root, "0000:07:00.0") is None
    set_fault(root, "0000:07:00.0", "XID 79: GPU has fallen off the bus\nsecond line")
    assert read_fault(root, "0000:07:00.0") == "XID 79: GPU has fallen off the bus second line"
    assert (root / "bus/pci/devices/0000:07:00.0" / FAULT_FILE).resolve().parent.name == "0000:07:00.0"
    assert read_fault(root, "0000:0f:00.0") is None
    set_fault(root, "0000:07:00.0", None)
    assert read_fault(root, "0000:07:00.0") is None
    set_fault(root, "0000:07:00.0", None)  # clearing twice is fine


def test_fault_on_unknown_device(tree) -> None:
    root = tree()
    with pytest.raises(InputError, match="no PCI device 0000:99:00.0"):
        set_fault(root, "0000:99:00.0", "boom")
    assert read_fault(root, "0000:99:00.0") is None


def test_unreadable_fault_file_still_reports_a_fault(tree) -> None:
    root = tree()
    (root / "bus/pci/devices/0000:07:00.0" / FAULT_FILE).mkdir()
    assert read_fault(root, "0000:07:00.0").startswith("cannot read fault file")
    set_fault(root, "0000:0f:00.0", "")
    assert read_fault(root, "0000:0f:00.0") == "fault injected"
