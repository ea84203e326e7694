"""NVIDIA's vendor-specific VFIO vGPU framework (R580+, Linux >= 6.8): types in <VF>/nvidia/creatable_vgpu_types."""

from __future__ import annotations

from pathlib import Path

import pytest

from driver.discovery import discover
from driver.discovery.fakesysfs import FakeFunction, FakeMdev, SysfsProfile, write_profile
from driver.discovery.fakespec import CLASS_3D, NVIDIA

H200 = FakeFunction(
    "0000:41:00.0", NVIDIA, 0x2335, CLASS_3D, 0, "0000:40", ("0000:40:01.0",), total_vfs=16, num_vfs=4,
    vf_device=0x2335, vf_offset=4, mdev_on_vfs=True, vgpu_framework="vendor-vfio",
    mdev=(FakeMdev("1428", "NVIDIA H200X-141C", 1, 143360, 1), FakeMdev("1414", "NVIDIA H200X-1-18C", 1, 16384, 7)),
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_profile(SysfsProfile("h200-vfio", "one H200 with vendor-VFIO vGPU", (H200,)), tmp_path / "sys")
    return tmp_path / "sys"


def vf(root: Path, n: int) -> Path:
    return (root / "bus/pci/devices/0000:41:00.0" / f"virtfn{n}").resolve()


def test_layout_matches_the_driver(root) -> None:
    assert (vf(root, 0) / "nvidia/creatable_vgpu_types").read_text() == (
        "ID    : vGPU Name\n1428  : NVIDIA H200X-141C\n1414  : NVIDIA H200X-1-18C\n"
    )
    assert (vf(root, 0) / "nvidia/current_vgpu_type").read_text() == "0\n"
    assert not (vf(root, 0) / "mdev_supported_types").exists()


def test_types_are_collected_per_vf(root, catalog) -> None:
    inv = discover(root, catalog)
    assert inv.warnings == ()
    gpu = inv.gpus[0]
    assert gpu.model.name == "h200-141gb"
    assert [(t.type_id, t.profile, t.available_instances, t.framework) for t in gpu.mdev_types] == [
        ("1414", "H200X-1-18C", 4, "vendor-vfio"), ("1428", "H200X-141C", 4, "vendor-vfio"),
    ]
    assert gpu.mdev_types[0].parents == ("0000:41:00.4", "0000:41:00.5", "0000:41:00.6", "0000:41:00.7")
    assert gpu.mdev_types[1].profile in {p.name for p in gpu.model.vgpu_profiles}


def test_assigned_vf_offers_no_instance(root, catalog) -> None:
    (vf(root, 1) / "nvidia/current_vgpu_type").write_text("1414\n")
    types = {t.type_id: t for t in discover(root, catalog).gpus[0].mdev_types}
    assert types["1414"].available_instances == 3 and len(types["1414"].parents) == 4


def test_garbled_files_warn_with_the_path(root, catalog) -> None:
    (vf(root, 0) / "nvidia/creatable_vgpu_types").write_text("ID : vGPU Name\n1428 : NVIDIA H200X-141C\nbogus\n")
    (vf(root, 2) / "nvidia/current_vgpu_type").write_text("busy\n")
    (vf(root, 3) / "nvidia/creatable_vgpu_types").write_text("1428 : NVIDIA H200X-70C\n")
    inv = discover(root, catalog)
    types = {t.type_id: t for t in inv.gpus[0].mdev_types}
    assert types["1428"].parents == ("0000:41:00.4", "0000:41:00.5")  # VF 2 skipped, VF 3 conflicts
    assert types["1414"].parents == ("0000:41:00.5",)
    text = "\n".join(inv.warnings)
    assert f"{vf(root, 0)}/nvidia/creatable_vgpu_types: line 3 'bogus' is not '<id> : <name>' or '<id> <name>'" in text
    assert f"{vf(root, 2)}/nvidia/current_vgpu_type: garbled value 'busy'" in text
    assert f"{vf(root, 3)}/nvidia/creatable_vgpu_types: name 'NVIDIA H200X-70C' differs from" in text
    assert len(inv.warnings) == 3


def test_lines_without_colon_are_read_like_nvidias_parser(root, catalog) -> None:
    # NVIDIA's vgpu-device-manager (pkg/vgpu/vfio/types.go) reads "ID Name" as well as "ID : Name", with
    # tabs and blank lines; a line with an id and no name is not a type.
    (vf(root, 0) / "nvidia/creatable_vgpu_types").write_text("1428\tNVIDIA H200X-141C\n\n1414 NVIDIA H200X-1-18C\n")
    (vf(root, 1) / "nvidia/creatable_vgpu_types").write_text("ID : vGPU type\n1414 :\n1428  :  NVIDIA H200X-141C\n")
    inv = discover(root, catalog)
    types = {t.type_id: t for t in inv.gpus[0].mdev_types}
    assert types["1428"].name == "NVIDIA H200X-141C" and len(types["1428"].parents) == 4
    assert types["1414"].name == "NVIDIA H200X-1-18C" and types["1414"].parents == (
        "0000:41:00.4", "0000:41:00.6", "0000:41:00.7")
    assert [w for w in inv.warnings if "line 2 '1414 :'" in w]  # an id without a name is reported
