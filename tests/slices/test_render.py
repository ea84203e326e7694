"""render_pool on hand-built hardware: device sets, counters, groups, naming, attributes, chunking."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from builders import A100_40GB, demo_like, gpu, nic
from conftest import fits, groups_of, memory_slices, of_type

from driver.errors import InputError
from driver.features import Features
from driver.model.inventory import Inventory
from driver.slices import check_pool, render_pool, to_resource_slices

DRIVER = "fake-dra.example.com"


def render(inventory=None, features=Features(), **kw):
    return render_pool(inventory or demo_like(), features, node_name="node-1", driver_name=DRIVER, **kw)


def test_demo_like_device_counts_per_type():
    pool = render()
    types = Counter(d["attributes"]["type"]["string"] for d in pool.devices().values())
    # Per A100-40GB: 7+7 1g.5gb(+me), 4 1g.10gb, 3 2g, 2 3g, 1 4g, 1 7g = 25 MIG placements;
    # gpu-1 offers A100-4C (10), A100-8C (5), A100-40C (1); 2 shared devices per GPU; 8 VFs.
    assert types == {"gpu": 2, "mig": 50, "vgpu": 16, "timeshare": 4, "vf": 8}
    assert pool.warnings == ()
    assert check_pool(pool) == []


def test_counter_sets_describe_each_gpu_and_pf():
    sets = render().counter_sets()
    assert list(sets) == ["gpu-0-counters", "gpu-1-counters", "nic-0-counters"]
    gpu0 = {k: v["value"] for k, v in sets["gpu-0-counters"]["counters"].items()}
    assert gpu0 == {
        "memory": "40Gi", "multiprocessors": "108", "copy-engines": "7", "decoders": "5",
        "jpeg-engines": "1", "ofa-engines": "1", **{f"memory-slice-{k}": "1" for k in range(8)},
    }
    assert sets["nic-0-counters"]["counters"]["bandwidth"]["value"] == "100G"


def test_groups_per_device_type():
    pool = render()
    expected = {"gpu": [["full"]], "mig": [["mig"]], "vf": [[]]}
    for kind, groups in expected.items():
        for name, dev in of_type(pool, kind).items():
            assert groups_of(dev) == groups, name
    # MPS runs the GPU in EXCLUSIVE_PROCESS mode: never in the same group as time-slicing.
    assert groups_of(pool.devices()["gpu-0-timeslicing"]) == [["timeslicing"]]
    assert groups_of(pool.devices()["gpu-0-mps"]) == [["mps"]]
    for name, dev in of_type(pool, "vgpu").items():
        profile = dev["attributes"]["profile"]["string"].lower()
        assert groups_of(dev) == [[f"vgpu-{profile}"]], name


def test_mig_naming_and_consumption_follow_the_placement():
    devices = render().devices()
    dev = devices["gpu-0-mig-1g5gb-3"]
    assert dev["attributes"]["profile"] == {"string": "1g.5gb"}
    assert dev["attributes"]["memorySliceStart"] == {"int": 3}
    assert dev["consumesCounters"][0]["counters"] == {
        "memory": {"value": "4864Mi"}, "multiprocessors": {"value": "14"}, "copy-engines": {"value": "1"},
        "memory-slice-3": {"value": "1"},
    }
    assert memory_slices(devices["gpu-0-mig-3g20gb-4"]) == {f"memory-slice-{k}" for k in (4, 5, 6, 7)}
    assert "gpu-0-mig-1g5gbme-6" in devices and "gpu-0-mig-1g5gb-7" not in devices  # 'X' in the KEP diagram
    assert "gpu-0-mig-4g20gb-4" not in devices


def test_full_gpu_consumes_every_counter_fully():
    pool = render()
    full = pool.devices()["gpu-0"]
    assert full["consumesCounters"][0]["counters"] == pool.counter_sets()["gpu-0-counters"]["counters"]
    assert not fits(pool, ["gpu-0", "gpu-0-mig-1g5gb-0"])
    assert not fits(pool, ["gpu-0", "gpu-0-timeslicing"])
    assert fits(pool, ["gpu-0", "gpu-1-mig-7g40gb-0"])  # another GPU's budget


def test_overlapping_mig_placements_never_fit_together():
    pool = render()
    migs = [n for n in of_type(pool, "mig") if n.startswith("gpu-0-")]
    devices = pool.devices()
    for a in migs:
        for b in migs:
            if a < b and memory_slices(devices[a]) & memory_slices(devices[b]):
                assert not fits(pool, [a, b]), (a, b)


def test_valid_nvidia_layouts_fit():
    pool = render()
    layouts = [
        [f"gpu-0-mig-1g5gb-{k}" for k in range(7)],
        ["gpu-0-mig-4g20gb-0", "gpu-0-mig-2g10gb-4", "gpu-0-mig-1g5gb-6"],
        ["gpu-0-mig-3g20gb-0", "gpu-0-mig-3g20gb-4"],
        [f"gpu-0-mig-1g10gb-{k}" for k in (0, 2, 4, 6)],
        ["gpu-0-mig-1g5gbme-0", *(f"gpu-0-mig-1g5gb-{k}" for k in range(1, 7))],
        [f"gpu-1-vgpu-a100-4c-{k}" for k in range(10)],
    ]
    for layout in layouts:
        assert fits(pool, layout), layout
    assert not fits(pool, ["gpu-0-mig-1g5gbme-0", "gpu-0-mig-1g5gbme-1"])  # one JPEG/OFA engine
    assert not fits(pool, ["gpu-0-timeslicing", "gpu-0-mps"])  # each owns the GPU's memory and SMs


def test_attributes_follow_the_contract():
    pool = render()
    devices = pool.devices()
    full = devices["gpu-0"]["attributes"]
    assert full["type"] == {"string": "gpu"}
    assert full["uuid"]["string"].startswith("GPU-")
    assert full["productName"] == {"string": "NVIDIA A100-SXM4-40GB"}
    assert full["pciBusID"] == {"string": "0000:07:00.0"}
    assert full["numaNode"] == {"int": 0}
    assert full["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:00"}
    mig = devices["gpu-0-mig-2g10gb-2"]["attributes"]
    assert mig["uuid"]["string"].startswith("MIG-")
    assert mig["parentUUID"] == full["uuid"]
    vgpu = devices["gpu-1-vgpu-a100-8c-4"]["attributes"]
    assert vgpu["profile"] == {"string": "A100-8C"} and vgpu["mdevType"] == {"string": "nvidia-471"}
    assert devices["gpu-1-vgpu-a100-8c-4"]["capacity"] == {"memory": {"value": "8Gi"}}
    vf = devices["nic-0-vf-3"]["attributes"]
    assert vf["type"] == {"string": "vf"} and vf["vfIndex"] == {"int": 3}
    assert vf["parentUUID"]["string"] == pool.devices()["nic-0-vf-0"]["attributes"]["parentUUID"]["string"]
    assert devices["gpu-0-mps"]["attributes"]["sharing"] == {"string": "mps"}
    assert devices["gpu-0-timeslicing"]["attributes"]["sharing"] == {"string": "time-slicing"}
    uuids = [d["attributes"]["uuid"]["string"] for d in devices.values()]
    assert len(set(uuids)) == len(uuids)


def test_numa_node_only_when_known():
    pool = render(Inventory(gpus=(gpu(0, numa=None),)))
    assert "numaNode" not in pool.devices()["gpu-0"]["attributes"]


def test_uuids_are_stable_and_node_specific():
    a, b = render(), render(demo_like())
    other = render_pool(demo_like(), Features(), node_name="node-2", driver_name=DRIVER)
    uuid = lambda p: p.devices()["gpu-0-mig-1g5gb-0"]["attributes"]["uuid"]  # noqa: E731
    assert uuid(a) == uuid(b) != uuid(other)


def test_render_is_byte_identical():
    first = json.dumps(to_resource_slices(render()))
    second = json.dumps(to_resource_slices(render(demo_like())))
    assert first == second


def test_timeshare_devices_are_multi_allocatable_with_a_memory_policy():
    dev = render().devices()["gpu-0-timeslicing"]
    assert dev["allowMultipleAllocations"] is True
    assert dev["capacity"]["memory"] == {
        "value": "40Gi",
        "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "max": "40Gi", "step": "1Gi"}},
    }


def test_slices_never_mix_devices_and_counters_and_chunk_at_64():
    pool = render()
    kinds = [("devices" in s, "sharedCounters" in s) for s in pool.slices]
    assert kinds == [(False, True), (True, False), (True, False)]
    assert [len(s["devices"]) for s in pool.slices[1:]] == [64, 16]
    for spec in pool.slices:
        assert spec["nodeName"] == "node-1" and spec["pool"] == {"name": "node-1"}
        assert "generation" not in spec["pool"]


def test_to_resource_slices_stamps_generation_and_count():
    objects = to_resource_slices(render(), generation=7)
    # The publisher's names, so `fake-dra slices` previews exactly what `publish`/`run` write.
    assert [o["metadata"]["name"] for o in objects] == [f"0000{k}-fake-dra.example.com-node-1" for k in range(3)]
    assert {(o["spec"]["pool"]["generation"], o["spec"]["pool"]["resourceSliceCount"]) for o in objects} == {(7, 3)}


def test_many_gpus_and_vfs_respect_every_limit():
    inv = Inventory(
        gpus=tuple(gpu(k, mdev=("A100-4C", "A100-8C")) for k in range(16)),
        nics=tuple(nic(k, vfs=64, total=64) for k in range(4)),
    )
    pool = render(inv)
    assert check_pool(pool) == []
    counter_slices = [s for s in pool.slices if "sharedCounters" in s]
    assert [len(s["sharedCounters"]) for s in counter_slices] == [8, 8, 4]
    assert all(len(s["devices"]) <= 64 for s in pool.slices if "devices" in s)
    assert len(pool.devices()) == 16 * (1 + 25 + 15 + 2) + 4 * 64


def test_empty_inventory_publishes_one_empty_slice():
    pool = render(Inventory())
    assert pool.slices == ({"driver": DRIVER, "pool": {"name": "node-1"}, "nodeName": "node-1"},)
    assert pool.devices() == {} and pool.counter_sets() == {}


@pytest.mark.parametrize(
    ("node", "driver", "needle"),
    [("Node_1", DRIVER, "node name 'Node_1'"), ("", DRIVER, "node name ''"),
     ("node-1", "x" * 64 + ".com", "driver name"), ("node-1", "Fake.Example", "driver name")],
)
def test_bad_names_are_input_errors(node, driver, needle):
    with pytest.raises(InputError, match=needle):
        render_pool(demo_like(), Features(), node_name=node, driver_name=driver)


def test_duplicate_gpu_index_is_reported():
    with pytest.raises(InputError, match="gpu-0"):
        render(Inventory(gpus=(gpu(0), gpu(0))))


def test_model_data_that_does_not_fit_is_skipped_with_a_warning():
    from dataclasses import replace

    bad = replace(A100_40GB, mig_profiles=(replace(A100_40GB.mig_profiles[0], placements=(0, 8)),))
    pool = render(Inventory(gpus=(gpu(0, model=bad),)))
    assert "gpu-0-mig-1g5gb-0" in pool.devices() and "gpu-0-mig-1g5gb-8" not in pool.devices()
    assert any("placement 8" in w for w in pool.warnings)


def test_unknown_mdev_type_is_a_warning_not_a_device():
    # A C-series type the table lacks is reported; a Q-series (graphics) type is left out quietly.
    pool = render(Inventory(gpus=(gpu(0, mdev=("A100-4C", "A100-3C", "A100-3Q")),)))
    assert len(of_type(pool, "vgpu")) == 10
    assert any("A100-3C" in w and "gpu-0" in w for w in pool.warnings)
    assert not any("A100-3Q" in w for w in pool.warnings)


def test_over_long_strings_are_cut_with_a_warning():
    from dataclasses import replace

    long_model = replace(A100_40GB, product_name="NVIDIA " + "X" * 80)
    pool = render(Inventory(gpus=(gpu(0, model=long_model),)))
    assert len(pool.devices()["gpu-0"]["attributes"]["productName"]["string"]) == 64
    assert any("gpu-0: attribute productName cut to 64" in w for w in pool.warnings)
    assert check_pool(pool) == []


def test_tiny_gpus_get_no_shared_devices_and_slow_links_no_policy():
    from dataclasses import replace

    tiny = replace(A100_40GB, memory_mib=1536, mig_memory_slices=0, mig_profiles=(), vgpu_profiles=())
    pool = render(Inventory(gpus=(gpu(0, model=tiny),), nics=(nic(0, vfs=1, speed=150),)))
    assert of_type(pool, "timeshare") == {}
    assert pool.counter_sets()["nic-0-counters"]["counters"]["bandwidth"] == {"value": "150M"}
    assert check_pool(pool) == []


def test_profiles_too_long_for_a_dns_label_are_left_out_with_a_warning():
    from dataclasses import replace

    from driver.model.hardware import VgpuProfile

    odd = replace(A100_40GB, vgpu_profiles=(VgpuProfile("A100-" + "X" * 60 + "-4C", 4096, 2),
                                             VgpuProfile("A100-4C", 4096, 10)))
    pool = render(Inventory(gpus=(gpu(0, model=odd, mdev=("A100-" + "X" * 60 + "-4C", "A100-4C")),)))
    assert len(of_type(pool, "vgpu")) == 10
    assert sum("is not a DNS label" in w for w in pool.warnings) == 2
    assert check_pool(pool) == []


def test_vgpu_profile_without_framebuffer_is_skipped_with_a_warning():
    from dataclasses import replace

    from driver.model.hardware import VgpuProfile

    odd = replace(A100_40GB, vgpu_profiles=(VgpuProfile("A100-0C", 0, 1), VgpuProfile("A100-4C", 4096, 10)))
    pool = render(Inventory(gpus=(gpu(0, model=odd, mdev=("A100-0C", "A100-4C")),)))
    assert sorted({d["attributes"]["profile"]["string"] for d in of_type(pool, "vgpu").values()}) == ["A100-4C"]
    assert any("gpu-0: vGPU profile A100-0C has no framebuffer size" in w for w in pool.warnings)
    assert check_pool(pool) == []
    none = replace(A100_40GB, vgpu_profiles=(VgpuProfile("A100-4C", 4096, 0),))
    pool = render(Inventory(gpus=(gpu(0, model=none, mdev=("A100-4C",)),)))
    assert of_type(pool, "vgpu") == {} and any("no instances" in w for w in pool.warnings)
    assert check_pool(pool) == []
