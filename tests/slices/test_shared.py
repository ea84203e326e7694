"""Shared GPUs (time-slicing, MPS) cannot promise more memory than the GPU has, and never share a GPU.

Checked with the reference allocator (driver.allocator) on rendered pools of one 80 GB GPU, with
KEP-5941 valueFrom on (memory drawn from the GPU's counter set per share) and off (a static
consumption of the whole memory counter, charged for the first share only, as upstream).
"""

from __future__ import annotations

import pytest
from builders import pci
from conftest import groups_of, of_type

from driver.allocator import Allocator
from driver.errors import AllocationError, ConfigError
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Gpu, Inventory
from driver.slices import SliceConfig, check_pool, render_pool, to_resource_slices

DRIVER = "fake-dra.example.com"
A100_80GB = load_catalog().gpu(0x20B2)
ONE_GPU = Inventory(gpus=(Gpu(index=0, pci=pci("0000:07:00.0", device_id=0x20B2), model=A100_80GB),))
CLASS = {"metadata": {"name": "shared"}, "spec": {"selectors": [{"cel": {
    "expression": f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'timeshare'"}}]}}
GATE_SETS = {
    "valueFrom-off": Features(),
    "valueFrom-on": Features.all_on(),
    "groups-off": Features(compatibility_groups=False),
}


def render(features, config=None, inventory=ONE_GPU):
    return render_pool(inventory, features, node_name="n1", driver_name=DRIVER, config=SliceConfig.from_dict(config))


def claim(name, sharing, memory):
    return {"metadata": {"name": name, "namespace": "t"}, "spec": {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": "shared",
        "selectors": [{"cel": {"expression": f"device.attributes['{DRIVER}'].sharing == '{sharing}'"}}],
        "capacity": {"requests": {"memory": memory}}}}]}}}


def allocator(pool, features):
    return Allocator(slices=to_resource_slices(pool), classes=[CLASS], node="n1", features=features)


@pytest.mark.parametrize("gates", ["valueFrom-off", "valueFrom-on"])
def test_time_slicing_80gi_and_mps_80gi_no_longer_both_fit_on_one_80gb_gpu(gates):
    features = GATE_SETS[gates]
    alloc = allocator(render(features), features)
    (first,) = alloc.allocate([claim("ts", "time-slicing", "80Gi")])
    assert first["devices"]["results"][0]["device"] == "gpu-0-timeslicing"
    with pytest.raises(AllocationError, match="gpu-0-counters"):
        alloc.allocate([claim("mps", "mps", "80Gi")])
    # Not even a small MPS share: MPS (EXCLUSIVE_PROCESS) and time-slicing never share a GPU.
    with pytest.raises(AllocationError):
        alloc.allocate([claim("mps-small", "mps", "1Gi")])


@pytest.mark.parametrize("gates", ["valueFrom-off", "valueFrom-on"])
def test_shares_of_one_device_sum_to_at_most_the_gpus_memory(gates):
    features = GATE_SETS[gates]
    alloc = allocator(render(features), features)
    for k in range(2):
        alloc.allocate([claim(f"a{k}", "time-slicing", "40Gi")])
    with pytest.raises(AllocationError):
        alloc.allocate([claim("a2", "time-slicing", "1Gi")])


def test_value_from_draws_each_share_from_the_gpu_counter():
    features = Features.all_on()
    pool = render(features)
    memory = pool.counter_sets()["gpu-0-counters"]["counters"]["memory"]
    assert memory == {"value": "80Gi", "requestPolicy": {
        "default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}}
    dev = pool.devices()["gpu-0-mps"]
    assert dev["consumesCounters"][0]["counters"] == {
        "memory": {"valueFrom": {"capacityName": f"{DRIVER}/memory"}}, "multiprocessors": {"value": "108"}}
    (result,) = allocator(pool, features).allocate([claim("m", "mps", "10Gi")])
    consumed = result["devices"]["results"][0]["consumedCounters"]
    assert consumed == [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "10Gi"}}}]


def test_without_value_from_a_shared_device_statically_owns_the_gpu_memory():
    pool = render(Features())
    for name in ("gpu-0-timeslicing", "gpu-0-mps"):
        dev = pool.devices()[name]
        assert dev["allowMultipleAllocations"] is True
        assert dev["consumesCounters"][0]["counters"] == {"memory": {"value": "80Gi"},
                                                           "multiprocessors": {"value": "108"}}
        assert dev["capacity"]["memory"]["value"] == "80Gi"
    assert "requestPolicy" not in pool.counter_sets()["gpu-0-counters"]["counters"]["memory"]
    assert groups_of(pool.devices()["gpu-0-timeslicing"]) == [["timeslicing"]]
    assert groups_of(pool.devices()["gpu-0-mps"]) == [["mps"]]
    assert check_pool(pool) == []


@pytest.mark.parametrize(("mode", "published"), [("time-slicing", ["gpu-0-timeslicing"]), ("mps", ["gpu-0-mps"]),
                                                 ("timeshare", ["gpu-0-timeslicing"])])
def test_groups_off_single_modes_keep_mps_and_time_slicing_apart(mode, published):
    features = GATE_SETS["groups-off"]
    pool = render(features, {"singleMode": mode})
    assert sorted(of_type(pool, "timeshare")) == published
    other = "mps" if published == ["gpu-0-timeslicing"] else "time-slicing"
    alloc = allocator(pool, features)
    alloc.allocate([claim("mine", "mps" if other == "time-slicing" else "time-slicing", "8Gi")])
    with pytest.raises(AllocationError):
        alloc.allocate([claim("other", other, "8Gi")])


def test_shared_memory_is_what_nvidia_smi_reports():
    h100 = load_catalog().gpu(0x2330)
    inv = Inventory(gpus=(Gpu(index=0, pci=pci("0000:07:00.0", device_id=0x2330), model=h100),))
    dev = render(Features(), inventory=inv).devices()["gpu-0-timeslicing"]
    assert dev["capacity"]["memory"] == {"value": "81559Mi", "requestPolicy": {
        "default": "1Gi", "validRange": {"min": "1Gi", "max": "79Gi", "step": "1Gi"}}}
    # 80Gi is more than an H100 80GB has: no shared device can promise it.
    with pytest.raises(AllocationError):
        allocator(render(Features(), inventory=inv), Features()).allocate([claim("x", "time-slicing", "80Gi")])


def test_old_mode_names_and_bad_modes():
    assert SliceConfig.from_dict({"singleMode": "timeshare"}).single_mode == "time-slicing"
    with pytest.raises(ConfigError, match="expected auto, full, mig, time-slicing, mps or vgpu:<profile>"):
        SliceConfig.from_dict({"perGpu": {"0": "shared"}})
