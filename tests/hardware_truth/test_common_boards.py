"""Hosts with H100 PCIe, H100 NVL, H200 NVL, A10, A40, L40, RTX 6000 Ada, A16 and A2 (truth_boards.py, built
by our own sysfs writer) against what a driver author expects: every GPU published with nvidia-smi's memory
and product name, MIG devices per profile with the board's SMs and sizes, the board's own vGPU types with
the guide's maxima, the A2 and A16 told apart by subsystem, clear warnings for a board the tables cannot
name, and slices the 1.37 apiserver accepts under every gate mix.
"""

from __future__ import annotations

from collections import Counter

import pytest
import truth_boards as boards
from truth import (
    GATE_MIXES, MiB, all_warnings, attr, by_type, fits_together, groups, per_gpu_profiles, qty, render, validate_137,
)

GiB = 1024 * MiB

# 8-slice GH100 placements (MIG guide diagrams; `nvidia-smi mig -lgipp` on an H100 NVL prints the same).
H100_80_MIG = {"1g.10gb": 7, "1g.10gb+me": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}
H100_NVL_MIG = {"1g.12gb": 7, "1g.12gb+me": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1}
H200_MIG = {"1g.18gb": 7, "1g.18gb+me": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1}


def _mig(pool, address: str) -> dict[str, dict]:
    return {attr(d, "profile"): d for d in by_type(pool)["mig"] if attr(d, "pciBusID") == address}


def _cap(dev: dict, name: str):
    return qty(dev["capacity"][name]["value"])


# --- H100 PCIe ---------------------------------------------------------------------------------------

def test_h100_pcie_publishes_its_gpus_and_mig_with_114_sms(tmp_path):
    inventory, pool = render(tmp_path, boards.h100_pcie_host())
    types = by_type(pool)
    assert sorted(attr(d, "pciBusID") for d in types["gpu"]) == sorted(b for b, _ in boards.H100_PCIE)
    for dev in types["gpu"]:
        assert attr(dev, "productName") == "NVIDIA H100 PCIe"
        assert _cap(dev, "memory") == 81559 * MiB  # nvidia-smi, R535-R580
        assert _cap(dev, "multiprocessors") == 114
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == H100_80_MIG, address
    mig = _mig(pool, boards.H100_PCIE[0][0])
    # nvidia-smi mig -lgip on an H100 PCIe: SMs 14/14/14/30/46/62/114, GiB 9.75/19.62/39.50/79.25.
    assert {p: _cap(d, "multiprocessors") for p, d in mig.items()} == {
        "1g.10gb": 14, "1g.10gb+me": 14, "1g.20gb": 14, "2g.20gb": 30, "3g.40gb": 46, "4g.40gb": 62, "7g.80gb": 114}
    assert _cap(mig["1g.10gb"], "memory") == 9.75 * GiB and _cap(mig["7g.80gb"], "memory") == 79.25 * GiB
    assert fits_together(pool, ["gpu-0-mig-4g40gb-0", "gpu-0-mig-3g40gb-4"])
    assert not fits_together(pool, ["gpu-0", "gpu-0-mig-1g10gb-0"])
    assert "vgpu" not in types and "0000:03:00.0" not in {attr(d, "pciBusID") for d in pool.devices().values()}
    assert all_warnings(inventory, pool) == []


# --- H100 NVL ----------------------------------------------------------------------------------------

def test_h100_nvl_mig_and_h100l_vgpu(tmp_path):
    inventory, pool = render(tmp_path, boards.h100_nvl_host())
    types = by_type(pool)
    for dev in types["gpu"]:
        assert (attr(dev, "productName"), _cap(dev, "memory")) == ("NVIDIA H100 NVL", 95830 * MiB)
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == H100_NVL_MIG, address
    mig = _mig(pool, "0000:4e:00.0")
    # -lgip: 10.75 / 21.62 / 46.38 / 93.12 GiB (the MIG devices show 11008 / 22144 / 47488 MiB).
    assert {p: _cap(d, "memory") / MiB for p, d in mig.items()} == {
        "1g.12gb": 11008, "1g.12gb+me": 11008, "1g.24gb": 22144, "2g.24gb": 22144, "3g.47gb": 47488,
        "4g.47gb": 47488, "7g.94gb": 95360}
    assert fits_together(pool, [f"gpu-0-mig-1g12gb-{s}" for s in range(7)])
    vgpus = per_gpu_profiles(types["vgpu"])
    assert "0000:4e:00.0" not in vgpus  # no vGPU manager types offered on the bare-metal GPU
    assert dict(vgpus["0000:ce:00.0"]) == {f"H100L-{t}": n for t, n in boards.H100L_TS}
    devices = pool.devices()
    full = devices["gpu-1-vgpu-h100l-94c-0"]
    assert _cap(full, "memory") == 96256 * MiB  # what a VM with an H100L-94C sees
    assert groups(full) == [["vgpu-h100l-94c"]]
    assert fits_together(pool, [f"gpu-1-vgpu-h100l-4c-{k}" for k in range(23)])
    assert not fits_together(pool, ["gpu-1-vgpu-h100l-94c-0", "gpu-1-vgpu-h100l-4c-0"])
    assert all_warnings(inventory, pool) == []


# --- H200 NVL ----------------------------------------------------------------------------------------

def test_h200_nvl_uses_the_h200_names_not_the_sxm_h200x(tmp_path):
    inventory, pool = render(tmp_path, boards.h200_nvl_host())
    types = by_type(pool)
    assert {(attr(d, "productName"), _cap(d, "memory")) for d in types["gpu"]} == {("NVIDIA H200 NVL", 143771 * MiB)}
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == H200_MIG, address
    for address, got in per_gpu_profiles(types["vgpu"]).items():
        assert dict(got) == {f"H200-{t}": n for t, _, n in boards.H200_TS}, address
    assert _cap(pool.devices()["gpu-0-vgpu-h200-141c-0"], "memory") == 144384 * MiB  # the guide's framebuffer
    assert all_warnings(inventory, pool) == []


def test_h200x_names_on_an_nvl_board_are_not_its_types(tmp_path):
    fns = boards.h200_nvl_host()[:1]
    fns[0].vf_mdev = [boards.Mdev("nvidia-1700", "NVIDIA H200X-4C", 1, "")]
    inventory, pool = render(tmp_path, fns)
    assert "vgpu" not in by_type(pool)
    assert any("'NVIDIA H200X-4C' is not a vGPU type of h200-141gb-nvl" in w and "H200-*" in w
               for w in all_warnings(inventory, pool))


# --- Ampere / Ada PCIe boards, A16 and A2 ------------------------------------------------------------

def test_vdi_host_boards_memory_and_compute_types(tmp_path):
    inventory, pool = render(tmp_path, boards.vdi_host())
    types = by_type(pool)
    gpus = {attr(d, "pciBusID"): (attr(d, "productName"), _cap(d, "memory") / MiB) for d in types["gpu"]}
    assert gpus == {
        "0000:41:00.0": ("NVIDIA A10", 23028), "0000:61:00.0": ("NVIDIA A40", 46068),
        "0000:81:00.0": ("NVIDIA L40", 46068), "0000:a1:00.0": ("NVIDIA RTX 6000 Ada Generation", 49140),
        "0000:e1:00.0": ("NVIDIA A2", 15356), **{b: ("NVIDIA A16", 15356) for b in boards.A16_GPUS},
    }
    got = per_gpu_profiles(types["vgpu"])
    assert dict(got["0000:41:00.0"]) == boards.A10_C
    assert dict(got["0000:61:00.0"]) == boards.A40_C
    assert dict(got["0000:81:00.0"]) == boards.L40_C
    assert dict(got["0000:a1:00.0"]) == boards.RTX6000ADA_C
    assert dict(got["0000:e1:00.0"]) == boards.A2_C
    for address in boards.A16_GPUS:
        assert dict(got[address]) == boards.A16_C, address  # the guide's maxima are per GPU of the board
    assert "mig" not in types  # none of these boards has MIG
    # Their B/Q/A (graphics) types are not this driver's and are no problem: no warning per type.
    assert all_warnings(inventory, pool) == []


def test_a16_vgpus_fill_one_gpu_of_the_board(tmp_path):
    _, pool = render(tmp_path, boards.vdi_host())
    devices = pool.devices()
    index = {attr(d, "pciBusID"): n for n, d in devices.items() if attr(d, "type") == "gpu"}
    first = index[boards.A16_GPUS[0]]
    quarter = [f"{first}-vgpu-a16-4c-{k}" for k in range(4)]
    assert all(n in devices for n in quarter)
    assert _cap(devices[quarter[0]], "memory") == 4096 * MiB
    assert fits_together(pool, quarter)
    assert not fits_together(pool, quarter + [f"{first}-vgpu-a16-16c-0"])
    assert not fits_together(pool, [first, f"{first}-vgpu-a16-8c-0"])
    # Each of the board's four GPUs has its own counter set: a full set on one leaves the next free.
    second = index[boards.A16_GPUS[1]]
    assert fits_together(pool, quarter + [f"{second}-vgpu-a16-16c-0"])


def test_a2_and_a16_share_a_device_id_and_are_told_apart_by_subsystem(tmp_path):
    inventory, pool = render(tmp_path, boards.vdi_host())
    by_address = {g.pci.address: g.model.name for g in inventory.gpus}
    assert by_address["0000:e1:00.0"] == "a2"
    assert {by_address[b] for b in boards.A16_GPUS} == {"a16"}
    a2 = next(d for d in by_type(pool)["vgpu"] if attr(d, "profile") == "A2-16C")
    assert attr(a2, "mdevType") == "nvidia-756"  # the id a real A2 host lists


def test_a_ga107_board_the_tables_cannot_name_is_skipped_with_a_warning(tmp_path):
    inventory, pool = render(tmp_path, boards.ga107_unknown_board())
    assert [g.model.name for g in inventory.gpus] == ["a2"]
    (warning,) = inventory.warnings
    assert "0000:3b:00.0" in warning and "0x25b6 with subsystem 1028:0001" in warning
    assert "NVIDIA A16 (10de:14a9)" in warning and "NVIDIA A2 (10de:157e)" in warning and "subsystem:" in warning


def test_a_ga107_without_readable_subsystem_files_is_skipped_with_a_warning(tmp_path):
    root = tmp_path / "sys"
    fns = boards.ga107_unknown_board()[1:]
    inventory, _ = render(tmp_path, fns)
    assert len(inventory.gpus) == 1
    (root / "devices" / "pci0000:5d" / "0000:5d:00.0" / "0000:5e:00.0" / "subsystem_device").write_text("zz\n")
    from truth import CATALOG

    from driver.discovery import discover

    inventory = discover(root, CATALOG)
    assert inventory.gpus == ()
    (warning,) = inventory.warnings
    assert "subsystem_device" in warning and "garbled" in warning and "0000:5e:00.0" in warning
    assert "told apart by its PCI subsystem" in warning


def test_other_gpus_do_not_read_subsystem_files(tmp_path):
    """Only device IDs shared by several boards need the subsystem: a missing file elsewhere is no problem."""
    root = tmp_path / "sys"
    render(tmp_path, boards.h100_pcie_host()[:1])
    (root / "devices" / "pci0000:16" / "0000:16:01.0" / "0000:17:00.0" / "subsystem_device").unlink()
    from truth import CATALOG

    from driver.discovery import discover

    inventory = discover(root, CATALOG)
    assert [g.model.name for g in inventory.gpus] == ["h100-80gb-pcie"] and inventory.warnings == ()


# --- every new host, every gate combination: valid 1.37 ResourceSlices --------------------------------

HOSTS = ["h100_pcie_host", "h100_nvl_host", "h200_nvl_host", "vdi_host"]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("features", GATE_MIXES)
def test_every_slice_validates_against_the_137_schema(tmp_path, host, features):
    _, pool = render(tmp_path, getattr(boards, host)(), features)
    validate_137(pool)
    assert Counter(attr(d, "type") for d in pool.devices().values())["gpu"] >= 1
