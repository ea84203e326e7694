"""GPU-instance layouts for MIG-backed vGPUs of several types on one GPU (driver.slices.miginstances): which layouts
each instance belongs to, how they are named, and when a GPU cannot be described exactly and keeps one time-sliced
MIG-backed type per GPU instead.
"""

from __future__ import annotations

import dataclasses

from builders import pci
from conftest import groups_of

from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Gpu, Inventory, MdevType
from driver.slices import check_pool, render_pool
from driver.slices.miginstances import instance_layout

CATALOG = load_catalog()
A100 = 0x20F1  # A100 PCIe 40GB: eight memory slices, seven compute slices


def _lab(rows: list[dict]):
    """The A100 PCIe 40GB with lab-made MIG-backed rows (names `Lab-...`), from a driver config."""
    catalog = load_catalog({"gpus": {"a100-40gb-pcie": {"vgpu": {"profiles": [], "mig_backed": rows}}}})
    return catalog, catalog.gpu(A100)


ONE_SHARED = {"name": "Lab-1-2C", "mig": "1g.5gb", "framebuffer_mib": 2048, "max_instances": 14, "per_instance": 2}
THREE = {"name": "Lab-3-20C", "mig": "3g.20gb", "framebuffer_mib": 20480, "max_instances": 2}
TWO = {"name": "Lab-2-10C", "mig": "2g.10gb", "framebuffer_mib": 10240, "max_instances": 3}


def test_a_four_slice_gpu_has_five_layouts_and_each_instance_lies_in_one_or_two():
    model = CATALOG.gpu(0x2BB5)
    layout = instance_layout(model, list(model.vgpu_profiles))
    assert layout is not None
    assert layout.groups == {
        (0, 1): ("mig-vgpu-1111", "mig-vgpu-112"), (1, 1): ("mig-vgpu-1111", "mig-vgpu-112"),
        (2, 1): ("mig-vgpu-1111", "mig-vgpu-211"), (3, 1): ("mig-vgpu-1111", "mig-vgpu-211"),
        (0, 2): ("mig-vgpu-211", "mig-vgpu-22"), (2, 2): ("mig-vgpu-112", "mig-vgpu-22"),
        (0, 4): ("mig-vgpu-4",),
    }
    # lcm(1, 2, 3, 4) units per instance; the most vGPUs at once: three DC-1-8C on each of four 1g instances.
    assert (layout.units, layout.most_vgpus, layout.starts()) == (12, 12, [0, 1, 2, 3])


def test_a_free_memory_slice_is_a_zero_in_the_layout_name():
    """Seven 1g.5gb instances leave the eighth memory slice free; two 3g.20gb take four slices each."""
    _, model = _lab([ONE_SHARED, THREE])
    layout = instance_layout(model, list(model.vgpu_profiles))
    assert layout is not None
    assert layout.groups[(0, 1)] == ("mig-vgpu-11111110", "mig-vgpu-11114")
    assert layout.groups[(4, 1)] == ("mig-vgpu-11111110", "mig-vgpu-41110")
    assert layout.groups[(0, 4)] == ("mig-vgpu-41110", "mig-vgpu-44")
    assert layout.groups[(4, 4)] == ("mig-vgpu-11114", "mig-vgpu-44")
    assert (layout.units, layout.most_vgpus) == (2, 14)


def test_classic_types_alone_need_no_layout():
    _, model = _lab([THREE, TWO])
    assert instance_layout(model, list(model.vgpu_profiles)) is None
    rtx = CATALOG.gpu(0x2BB5)
    assert instance_layout(rtx, [p for p in rtx.vgpu_profiles if not p.time_sliced_mig_backed]) is None


def _host(catalog, model, names: list[str]) -> Inventory:
    parents = tuple(f"0000:07:00.{k + 1}" for k in range(7))
    types = tuple(MdevType(f"nvidia-{700 + k}", f"NVIDIA {n}", 1, "vfio-pci", parents=parents)
                  for k, n in enumerate(names))
    return Inventory(gpus=(Gpu(index=0, pci=dataclasses.replace(pci("0000:07:00.0"), device_id=A100),
                               model=model, mdev_types=types),))


def test_an_instance_in_more_than_two_layouts_keeps_one_time_sliced_type_per_gpu():
    """1g.5gb instances beside 2g.10gb ones: the 1g instance at slice 6 lies in four layouts, more groups than a
    device may have, so the GPU falls back to one time-sliced MIG-backed type per GPU (never a mix it cannot
    run) and its classic types keep `mig-vgpu`."""
    catalog, model = _lab([ONE_SHARED, TWO])
    assert instance_layout(model, list(model.vgpu_profiles)) is None
    pool = render_pool(_host(catalog, model, ["Lab-1-2C", "Lab-2-10C"]), Features(), node_name="n1",
                       driver_name="fake-dra.example.com")
    devices = pool.devices()
    assert groups_of(devices["gpu-0-vgpu-lab-1-2c-6-1"]) == [["mig-vgpu-lab-1-2c"]]
    assert groups_of(devices["gpu-0-vgpu-lab-2-10c-0"]) == [["mig-vgpu"]]
    assert list(pool.counter_sets()) == ["gpu-0-counters"]
    assert check_pool(pool) == []


def test_layouts_on_a_gpu_that_can_say_them_exactly():
    """1g.5gb and 3g.20gb: every instance lies in at most two layouts, so the types mix, one per instance."""
    catalog, model = _lab([ONE_SHARED, THREE])
    pool = render_pool(_host(catalog, model, ["Lab-1-2C", "Lab-3-20C"]), Features(), node_name="n1",
                       driver_name="fake-dra.example.com")
    devices = pool.devices()
    assert groups_of(devices["gpu-0-vgpu-lab-1-2c-6-1"]) == [["mig-vgpu-11111110", "mig-vgpu-41110"], ["lab-1-2c"]]
    assert groups_of(devices["gpu-0-vgpu-lab-3-20c-4"]) == [["mig-vgpu-11114", "mig-vgpu-44"], ["lab-3-20c"]]
    assert sorted(pool.counter_sets()) == ["gpu-0-counters"] + [f"gpu-0-gi-{s}-counters" for s in range(7)]
    assert check_pool(pool) == []
