"""Feature gates and the `slices:` config change what is published, never into something unsafe."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from builders import T4, demo_like, gpu, nic
from conftest import groups_of, of_type

from driver.errors import ConfigError
from driver.features import Features
from driver.model.inventory import Inventory
from driver.slices import SliceConfig, check_pool, render_pool

DRIVER = "fake-dra.example.com"
NO_GROUPS = Features(compatibility_groups=False)


def render(features=Features.all_on(), inventory=None, config=None):
    cfg = SliceConfig.from_dict(config)
    return render_pool(inventory or demo_like(), features, node_name="node-1", driver_name=DRIVER, config=cfg)


def types(pool, prefix=""):
    return sorted({d["attributes"]["type"]["string"] for n, d in pool.devices().items() if n.startswith(prefix)})


def test_groups_off_publishes_full_gpu_plus_one_mode_without_groups():
    pool = render(NO_GROUPS)
    assert types(pool, "gpu-0") == ["gpu", "mig"] and types(pool, "gpu-1") == ["gpu", "mig"]
    assert all(g == [] for d in pool.devices().values() for g in groups_of(d))
    assert check_pool(pool) == []


def test_groups_off_per_gpu_vgpu_mode():
    pool = render(NO_GROUPS, config={"perGpu": {"1": "vgpu:A100-4C"}})
    assert types(pool, "gpu-1") == ["gpu", "vgpu"]
    assert sorted(of_type(pool, "vgpu")) == sorted(f"gpu-1-vgpu-a100-4c-{k}" for k in range(10))
    assert types(pool, "gpu-0") == ["gpu", "mig"]


def test_groups_off_per_model_and_single_mode():
    assert types(render(NO_GROUPS, config={"perModel": {"a100-40gb": "timeshare"}}), "gpu-") == ["gpu", "timeshare"]
    assert types(render(NO_GROUPS, config={"singleMode": "full"}), "gpu-") == ["gpu"]
    # perGpu wins over perModel.
    pool = render(NO_GROUPS, config={"perModel": {"a100-40gb": "full"}, "perGpu": {"0": "mig"}})
    assert types(pool, "gpu-0") == ["gpu", "mig"] and types(pool, "gpu-1") == ["gpu"]


def test_groups_off_auto_mode_is_full_for_non_mig_gpus():
    inv = Inventory(gpus=(gpu(0, model=T4, mdev=("T4-4C",)),))
    assert types(render(NO_GROUPS, inv)) == ["gpu"]
    assert types(render(Features(), inv)) == ["gpu", "timeshare", "vgpu"]


def test_groups_off_timeshare_without_consumable_capacity_falls_back_with_a_warning():
    pool = render(replace(NO_GROUPS, consumable_capacity=False), config={"singleMode": "timeshare"})
    assert types(pool, "gpu-") == ["gpu"]
    assert any("DRAConsumableCapacity" in w for w in pool.warnings)


@pytest.mark.parametrize(
    ("config", "inventory", "needle"),
    [
        ({"singleMode": "mig"}, Inventory(gpus=(gpu(0, model=T4),)), r"slices.singleMode: mode 'mig' for gpu-0 \(t4\)"),
        ({"perGpu": {"1": "vgpu:A100-2C"}}, None, r"slices.perGpu\[1\].*available: A100-4C, A100-8C, A100-40C"),
        ({"perModel": {"a100-40gb": "vgpu:A100-4C"}}, None, r"slices.perModel\[a100-40gb\].*gpu-0.*available: none"),
    ],
)
def test_single_mode_the_hardware_cannot_honour_is_a_config_error(config, inventory, needle):
    with pytest.raises(ConfigError, match=needle):
        render(NO_GROUPS, inventory, config)


def test_config_errors_are_not_raised_while_groups_are_on():
    # The single mode only matters when groups are off; a node with groups on still renders.
    assert render(Features(), Inventory(gpus=(gpu(0, model=T4),)), {"singleMode": "mig"}).devices()


def test_partitionable_off_publishes_whole_devices_without_counters():
    pool = render(Features(partitionable_devices=False))
    assert types(pool) == ["gpu", "vf"]
    assert pool.counter_sets() == {}
    assert not any("consumesCounters" in d for d in pool.devices().values())
    assert pool.devices()["nic-0-vf-0"]["capacity"] == {"bandwidth": {"value": "12500M"}}
    assert len(pool.slices) == 1  # no counters: up to 128 devices per slice
    assert check_pool(pool) == []


def test_consumable_capacity_off_drops_multi_allocatable_devices():
    pool = render(Features(consumable_capacity=False))
    assert types(pool) == ["gpu", "mig", "vf", "vgpu"]
    assert not any(d.get("allowMultipleAllocations") for d in pool.devices().values())


def test_value_from_on_vfs_draw_requested_bandwidth():
    pool = render()
    counter = pool.counter_sets()["nic-0-counters"]["counters"]["bandwidth"]
    assert counter == {
        "value": "100G",
        "requestPolicy": {"default": "12500M", "validRange": {"min": "100M", "max": "100G", "step": "100M"}},
    }
    vf = pool.devices()["nic-0-vf-5"]
    assert vf["consumesCounters"] == [
        {"counterSet": "nic-0-counters", "counters": {"bandwidth": {"valueFrom": {"capacityName": f"{DRIVER}/bandwidth"}}}}
    ]
    assert vf["capacity"] == {"bandwidth": {"value": "100G"}}  # up to the whole link on request


def test_value_from_off_vfs_consume_an_equal_static_share():
    pool = render(Features(shared_consumable_capacity=False))
    assert pool.counter_sets()["nic-0-counters"]["counters"]["bandwidth"] == {"value": "100G"}
    vf = pool.devices()["nic-0-vf-5"]
    assert vf["consumesCounters"][0]["counters"] == {"bandwidth": {"value": "12500M"}}
    assert vf["capacity"] == {"bandwidth": {"value": "12500M"}}


def test_bandwidth_step_config_shapes_the_policy():
    pool = render(inventory=Inventory(nics=(nic(0, vfs=3, speed=25000),)), config={"bandwidthStep": "1G"})
    policy = pool.counter_sets()["nic-0-counters"]["counters"]["bandwidth"]["requestPolicy"]
    assert policy == {"default": "8G", "validRange": {"min": "1G", "max": "25G", "step": "1G"}}


def test_pf_without_vfs_is_the_hosts_port_unless_opted_in_and_unknown_speed_warns():
    inv = Inventory(nics=(nic(0, vfs=0), nic(1, vfs=2, speed=None)))
    pool = render(inventory=inv)
    assert "nic-0" not in pool.devices()  # a storage/management port: the host's
    for entry in ("0000:40:00.0", "0000:40:00.0".upper(), "00000000:40:00.0", "ens0f0"):
        opted = render(inventory=inv, config={"publishPFs": [entry]})
        assert opted.devices()["nic-0"]["attributes"]["type"] == {"string": "nic"}, entry
        assert opted.devices()["nic-0"]["capacity"] == {"bandwidth": {"value": "100G"}}
    assert "nic-1-counters" not in pool.counter_sets()
    assert "consumesCounters" not in pool.devices()["nic-1-vf-0"]
    assert any("nic-1" in w and "link speed unknown" in w for w in pool.warnings)


def test_vgpu_homogeneity_can_be_relaxed():
    pool = render(config={"vgpuHomogeneous": False})
    assert {tuple(groups_of(d)[0]) for d in of_type(pool, "vgpu").values()} == {("vgpu",)}


def test_timeshare_modes_config():
    pool = render(config={"timeshareModes": ["mps"]})
    assert sorted(of_type(pool, "timeshare")) == ["gpu-0-mps", "gpu-1-mps"]
    assert pool.devices()["gpu-0-mps"]["consumesCounters"][0]["counters"] == {
        "memory": {"valueFrom": {"capacityName": f"{DRIVER}/memory"}}, "multiprocessors": {"value": "108"}}


@pytest.mark.parametrize("gates", list(itertools.product([True, False], repeat=4)))
def test_every_gate_combination_is_valid_and_safe(gates):
    features = Features(partitionable_devices=gates[0], compatibility_groups=gates[1],
                        consumable_capacity=gates[2], shared_consumable_capacity=gates[3])
    pool = render(features)
    assert check_pool(pool) == []
    devices = pool.devices().values()
    has_groups = any(any(g) for d in devices for g in groups_of(d))
    assert has_groups == (features.partitionable_devices and features.compatibility_groups)
    if not features.partitionable_devices:
        assert pool.counter_sets() == {}
    if not features.consumable_capacity:
        assert not any(d.get("allowMultipleAllocations") for d in devices)
    if not (features.partitionable_devices and features.shared_consumable_capacity):
        assert "valueFrom" not in str(pool.slices) and "requestPolicy" not in str(pool.counter_sets())
    if not (features.partitionable_devices and features.compatibility_groups):
        # Safe single mode: never two partitioning modes on one GPU.
        for index in (0, 1):
            kinds = set(types(pool, f"gpu-{index}")) - {"gpu"}
            assert len(kinds) <= 1, kinds


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ([], "slices: expected a mapping"),
        ({"singelMode": "mig"}, "unknown key.*singelMode"),
        ({"singleMode": "exclusive"}, "slices.singleMode: unknown mode 'exclusive'"),
        ({"singleMode": 3}, "slices.singleMode: expected a string"),
        ({"perGpu": {"x": "mig"}}, r"slices.perGpu: invalid key 'x'"),
        ({"perGpu": {"-1": "mig"}}, r"slices.perGpu: invalid key '-1'"),
        ({"perModel": ["a100"]}, "slices.perModel: expected a mapping"),
        ({"perModel": {"a100-40gb": "vgpu:"}}, r"slices.perModel\[a100-40gb\]: unknown mode"),
        ({"timeshareModes": ["mig"]}, "slices.timeshareModes"),
        ({"timeshareMemoryStep": "0.5"}, "slices.timeshareMemoryStep: expected a whole-number quantity"),
        ({"timeshareMemoryStep": "1000k"}, "slices.timeshareMemoryStep: must be a positive whole number of Mi"),
        ({"bandwidthStep": "1k"}, "slices.bandwidthStep: must be a positive whole number of M"),
        ({"bandwidthStep": True}, "slices.bandwidthStep"),
        ({"vgpuHomogeneous": "yes"}, "slices.vgpuHomogeneous"),
    ],
)
def test_slice_config_errors_name_the_key(data, needle):
    with pytest.raises(ConfigError, match=needle):
        SliceConfig.from_dict(data)


def test_slice_config_defaults_and_parsing():
    assert SliceConfig.from_dict(None) == SliceConfig() == SliceConfig.from_dict({})
    cfg = SliceConfig.from_dict({"perGpu": {3: "vgpu:A100-4C"}, "timeshareMemoryStep": "512Mi", "bandwidthStep": "1G"})
    assert cfg.mode_for(3, "a100-40gb") == ("vgpu:A100-4C", "slices.perGpu[3]")
    assert cfg.mode_for(2, "a100-40gb") == ("auto", "slices.singleMode")
    assert SliceConfig.from_dict({"perModel": {"t4": "full"}}).mode_for(0, "t4") == ("full", "slices.perModel[t4]")
    assert (cfg.timeshare_memory_step_mib, cfg.bandwidth_step_mbps) == (512, 1000)
    hash(cfg)
