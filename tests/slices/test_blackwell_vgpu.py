"""vGPU rules that Blackwell RTX PRO hosts brought: the type is the last word of the host's name, `DC-*` types are
matched by the board (PCI device ID), the C series includes the MIG attributes (CGFX, CME, CNOME, CMEALL), and
time-sliced MIG-backed types publish every vGPU of every GPU instance, alone on their GPU.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from conftest import fits, groups_of, of_type, placed

from driver.allocator.rules import validate_combination
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Gpu, Inventory, MdevType
from driver.slices import SliceConfig, check_pool, render_pool
from driver.slices.gpucounters import instance_share
from driver.slices.vgpu import is_graphics_type

DRIVER = "fake-dra.example.com"
CATALOG = load_catalog()
RTX = 0x2BB5
LONG = "NVIDIA RTX Pro 6000 Blackwell "


def host(names, device=RTX, vfs=16) -> Inventory:
    from builders import pci

    parents = tuple(f"0000:07:{4 + k // 8:02x}.{k % 8}" for k in range(vfs))
    types = tuple(MdevType(f"nvidia-{1600 + k}", n, 1, "vfio-pci", parents=parents) for k, n in enumerate(names))
    return Inventory(gpus=(Gpu(index=0, pci=dataclasses.replace(pci("0000:07:00.0"), device_id=device),
                               model=CATALOG.gpu(device), mdev_types=types),))


def render(inv, features=Features(), config=None):
    kwargs = {"config": config} if config is not None else {}
    return render_pool(inv, features, node_name="n1", driver_name=DRIVER, **kwargs)


def profiles(pool) -> Counter:
    return Counter(d["attributes"]["profile"]["string"] for d in of_type(pool, "vgpu").values())


@pytest.mark.parametrize(("name", "profile"), [
    ("NVIDIA RTX Pro 6000 Blackwell DC-48C", "DC-48C"), ("GRID A100X-4C", "A100X-4C"), ("NVIDIA A100X-4C", "A100X-4C"),
    ("DC-48C", "DC-48C"), ("  NVIDIA\tRTX Pro 6000\tDC-1-12C \n", "DC-1-12C"), ("", ""), ("   ", ""),
])
def test_the_vgpu_type_is_the_last_word_of_the_name(name, profile):
    assert MdevType("nvidia-1", name, 1, "vfio-pci").profile == profile


def test_long_host_names_are_matched_against_the_boards_table():
    pool = render(host([f"{LONG}DC-48C", f"{LONG}DC-1-24C", f"{LONG}DC-1-24CGFX", f"{LONG}DC-48Q",
                        f"{LONG}DC-1-24QGFX"]))
    assert profiles(pool) == {"DC-48C": 2, "DC-1-24C": 4, "DC-1-24CGFX": 4}
    assert pool.warnings == () and check_pool(pool) == []


def test_dc_names_are_per_board_not_per_prefix():
    """DC-2-32C is an RTX PRO 4500 Server Edition type; on a 6000 it is warned about, on the 4500 it is one."""
    on_6000 = render(host([f"{LONG}DC-2-32C", f"{LONG}DC-96C"]))
    assert profiles(on_6000) == {"DC-96C": 1}
    (warning,) = on_6000.warnings
    assert "'NVIDIA RTX Pro 6000 Blackwell DC-2-32C' is not a vGPU type of rtx-pro-6000-bse" in warning
    assert "(not in the vGPU table of 10de:2bb5)" in warning
    on_4500 = render(host(["NVIDIA RTX Pro 4500 Blackwell DC-2-32C", "NVIDIA RTX Pro 4500 Blackwell DC-8C"],
                          device=0x2C3A))
    assert profiles(on_4500) == {"DC-2-32C": 1, "DC-8C": 4} and on_4500.warnings == ()


def test_a_board_without_a_vgpu_table_says_so():
    pool = render(host([f"{LONG}DC-48C"], device=0x2BB1))  # the Workstation Edition: no vGPU table
    assert profiles(pool) == {}
    (warning,) = pool.warnings
    assert "is not a vGPU type of rtx-pro-6000-ws (10de:2bb1 has no vGPU table)" in warning


@pytest.mark.parametrize(("name", "graphics"), [
    ("DC-1-24CGFX", False), ("DC-1-24QGFX", True), ("DC-48C", False), ("DC-48Q", True), ("A30-1-6CME", False),
    ("A30-1-6CNOME", False), ("DC-1-24CMEALL", False), ("DC-4-96QMEALL", True),
])
def test_the_compute_series_includes_the_mig_attributes(name, graphics):
    assert is_graphics_type(name, {"DC", "A30"}) is graphics


def test_time_sliced_mig_backed_types_publish_every_vgpu_of_every_instance():
    pool = render(host([f"{LONG}DC-1-12C", f"{LONG}DC-1-8C", f"{LONG}DC-2-12C", f"{LONG}DC-4-24C", f"{LONG}DC-1-24C"]))
    assert profiles(pool) == {"DC-1-12C": 8, "DC-1-8C": 12, "DC-2-12C": 8, "DC-4-24C": 4, "DC-1-24C": 4}
    devices = pool.devices()
    twelve = sorted(n for n in devices if n.startswith("gpu-0-vgpu-dc-1-12c-"))
    assert twelve == [f"gpu-0-vgpu-dc-1-12c-{s}-{k}" for s in range(4) for k in range(2)]
    first = devices[twelve[0]]
    assert {k: next(iter(v.values())) for k, v in first["attributes"].items()
            if k in ("migProfile", "memorySliceStart", "memorySlices", "vgpusPerInstance")} == {
        "migProfile": "1g.24gb", "memorySliceStart": 0, "memorySlices": 1, "vgpusPerInstance": 2}
    # Its instance's layouts (all four 1g, or two 1g beside a 2g) on the GPU; its type on the instance's own set.
    assert groups_of(first) == [["mig-vgpu-1111", "mig-vgpu-112"], ["dc-1-12c"]]
    assert [e["counterSet"] for e in first["consumesCounters"]] == ["gpu-0-counters", "gpu-0-gi-0-counters"]
    assert first["consumesCounters"][1]["counters"] == {"vgpus": {"value": "6"}}  # half of lcm(1, 2, 3, 4)
    assert pool.counter_sets()["gpu-0-gi-0-counters"]["counters"] == {"vgpus": {"value": "12"}}
    # Each takes half the instance and no memory slice: all 8 fit, and nothing else beside them.
    assert not [c for c in first["consumesCounters"][0]["counters"] if c.startswith("memory-slice-")]
    assert fits(pool, twelve) and fits(pool, [n for n in devices if n.startswith("gpu-0-vgpu-dc-1-8c-")])

    def kinds(names):
        return {v.kind for v in validate_combination(list(pool.slices), placed(pool, names), Features())}

    # Another type on another instance, classic or time-sliced: fine (NVIDIA's mixed configurations).
    assert kinds([twelve[0], "gpu-0-vgpu-dc-1-24c-1"]) == set()
    assert kinds([twelve[0], "gpu-0-vgpu-dc-1-8c-1-0", "gpu-0-vgpu-dc-2-12c-2-0"]) == set()
    # Another type on the same instance, or an instance overlapping a used one: refused by groups.
    assert kinds([twelve[0], "gpu-0-vgpu-dc-1-8c-0-0"]) == {"groups"}
    assert kinds([twelve[0], "gpu-0-vgpu-dc-1-24c-0"]) == {"groups", "counters"}  # a classic type takes it all
    assert kinds([twelve[0], "gpu-0-vgpu-dc-2-12c-0-0"]) == {"groups"}
    assert kinds([twelve[0], "gpu-0-vgpu-dc-4-24c-0-0"]) == {"groups"}
    assert "counters" in kinds(["gpu-0", twelve[0]]) and "groups" in kinds(["gpu-0", twelve[0]])
    assert kinds(["gpu-0-vgpu-dc-1-24c-0", "gpu-0-vgpu-dc-1-24c-3"]) == set()
    assert check_pool(pool) == [] and pool.warnings == ()


def test_single_mode_can_choose_a_time_sliced_mig_backed_type():
    pool = render(host([f"{LONG}DC-1-12C", f"{LONG}DC-48C"]), Features(compatibility_groups=False),
                  SliceConfig.from_dict({"singleMode": "vgpu:DC-1-12C"}))
    assert profiles(pool) == {"DC-1-12C": 8}
    eight = sorted(of_type(pool, "vgpu"))
    assert fits(pool, eight) and not fits(pool, ["gpu-0", eight[0]])  # counters alone keep the full GPU out
    assert all(groups_of(d) == [[]] for d in pool.devices().values())


def test_vgpus_of_a_shared_instance_never_outnumber_the_vfs():
    """Only 8 VFs enabled: the 12 DC-1-8C are published, any 8 of them fit, a 9th does not."""
    pool = render(host([f"{LONG}DC-1-8C"], vfs=8))
    assert pool.counter_sets()["gpu-0-counters"]["counters"]["vgpu-vfs"] == {"value": "8"}
    twelve = sorted(of_type(pool, "vgpu"))
    assert len(twelve) == 12 and fits(pool, twelve[:8]) and not fits(pool, twelve[:9])


def test_an_instance_share_never_takes_more_than_the_instance():
    one = CATALOG.gpu(RTX).mig_profile("1g.24gb")
    assert instance_share(one, 3) == {"memory": "8064Mi", "multiprocessors": "15"}  # 24192 MiB, 46 SMs; 1 NVDEC / 3
    assert instance_share(one, 1) == {"memory": "24192Mi", "multiprocessors": "46", "decoders": "1",
                                      "encoders": "1", "jpeg-engines": "1", "copy-engines": "1"}
