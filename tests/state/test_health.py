"""Device health model: fault files in the fake sysfs tree -> UNHEALTHY with a message."""

from __future__ import annotations


import pytest

from driver.discovery import set_fault
from driver.errors import InputError
from driver.state.health import HealthModel, check_bdf, read_fault


def _model(sysfs, pool, clock=lambda: 1000.0):
    return HealthModel(sysfs, lambda: (pool.name, pool.devices()), "fake-dra.example.com", clock=clock)


def test_all_healthy_full_list(sysfs, demo_pool):
    snap = _model(sysfs, demo_pool).snapshot()
    assert {d.device for d in snap} == set(demo_pool.devices())
    assert {d.health for d in snap} == {"HEALTHY"}
    assert all(d.last_updated == 1000 and d.pool == "n1" for d in snap)


def test_gpu_fault_marks_gpu_and_its_partitions(sysfs, demo_pool):
    set_fault(sysfs, "0000:07:00.0", "XID 79: GPU has fallen off the bus")
    snap = {d.device: d for d in _model(sysfs, demo_pool).snapshot()}
    for name in ("gpu-0", "gpu-0-mig-1g5gb-0", "gpu-0-timeslicing"):
        assert snap[name].health == "UNHEALTHY"
        assert snap[name].message == "0000:07:00.0: XID 79: GPU has fallen off the bus"
    assert snap["gpu-1"].health == "HEALTHY"
    set_fault(sysfs, "0000:07:00.0", None)
    assert {d.health for d in _model(sysfs, demo_pool).snapshot()} == {"HEALTHY"}


def test_pf_fault_marks_its_vfs(sysfs, demo_pool):
    set_fault(sysfs, "0000:0c:00.0", "link down")
    snap = {d.device: d for d in _model(sysfs, demo_pool).snapshot()}
    assert snap["nic-0-vf-0"].health == "UNHEALTHY" and "link down" in snap["nic-0-vf-0"].message


def test_long_message_is_capped(sysfs, demo_pool):
    (sysfs / "bus/pci/devices/0000:0f:00.0/fake-dra-fault").write_text("x" * 5000)
    snap = {d.device: d for d in _model(sysfs, demo_pool).snapshot()}
    assert len(snap["gpu-1"].message) == 1024


def test_vanished_device_and_discovery_failure_are_unknown(sysfs, demo_pool):
    state = {"pool": demo_pool, "fail": False}

    class Shrunk:
        name = "n1"

        def devices(self):
            return {k: v for k, v in demo_pool.devices().items() if k != "gpu-1"}

    def devices():
        if state["fail"]:
            raise RuntimeError("sysfs root vanished")
        return state["pool"].name, state["pool"].devices()

    model = HealthModel(sysfs, devices, "fake-dra.example.com")
    model.snapshot()
    state["pool"] = Shrunk()
    snap = {d.device: d for d in model.snapshot()}
    assert snap["gpu-1"].health == "UNKNOWN" and "no longer discovered" in snap["gpu-1"].message
    state["fail"] = True
    snap = model.snapshot()
    assert {d.health for d in snap} == {"UNKNOWN"} and "sysfs root vanished" in snap[0].message


def test_bdf_validation_blocks_path_tricks(sysfs):
    with pytest.raises(InputError, match="invalid PCI address"):
        check_bdf("../../etc")
    assert read_fault(sysfs, "../../etc") is None
    with pytest.raises(InputError, match="invalid PCI address"):
        check_bdf("0000:07:00.0\n")  # re.match with "$" would accept the trailing newline
