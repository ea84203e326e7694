"""The allocator on real rendered node pools (fake sysfs -> discovery -> driver.slices.render_pool).

Only tests import the slices/discovery areas; the allocator itself sees plain ResourceSlice dicts.
"""

from __future__ import annotations

import pytest

from driver.allocator import Allocator, PlacedDevice, validate_combination
from driver.discovery import discover
from driver.discovery.fakesysfs import make_sysfs
from driver.errors import AllocationError
from driver.features import Features
from driver.hardware import load_catalog
from driver.slices import render_pool, to_resource_slices

DRIVER = "fake-dra.example.com"
CLASS = {"metadata": {"name": "fake"}, "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}


@pytest.fixture(scope="module")
def dgx_slices(tmp_path_factory):
    root = tmp_path_factory.mktemp("dgx")
    make_sysfs("dgx-a100", root)
    pool = render_pool(discover(root, load_catalog()), Features.all_on(), node_name="n1", driver_name=DRIVER)
    return to_resource_slices(pool)


def claim(name, selector, **exact):
    return {"metadata": {"name": name, "namespace": "t"}, "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "fake", "selectors": [{"cel": {"expression": selector}}], **exact}}]}}}


def attr(name):
    return f"device.attributes['{DRIVER}'].{name}"


def placed(allocations):
    return [PlacedDevice(f"c{i}", r["request"], r["driver"], r["pool"], r["device"], tuple(r.get("consumedCounters") or ()) or None, r.get("shareID"))
            for i, a in enumerate(allocations) for r in a["devices"]["results"]]


def test_pack_dgx_with_1g_mig_to_exhaustion(dgx_slices):
    alloc = Allocator(slices=dgx_slices, classes=[CLASS], node="n1")
    allocations = []
    selector = f"{attr('type')} == 'mig' && {attr('profile')} == '1g.5gb'"
    with pytest.raises(AllocationError, match="56 match the selectors, 0 usable \\(56 in use\\)"):
        for i in range(100):
            allocations.extend(alloc.allocate([claim(f"c{i}", selector)]))
    assert len(allocations) == 8 * 7  # seven 1g.5gb instances per A100-40GB
    assert validate_combination(dgx_slices, placed(allocations), Features.all_on()) == []


def test_mig_then_timeshare_on_one_gpu_is_blocked_by_groups(dgx_slices):
    alloc = Allocator(slices=dgx_slices, classes=[CLASS], node="n1")
    (mig,) = alloc.allocate([claim("m", f"{attr('type')} == 'mig' && {attr('index')} == 0")])
    gpu0 = mig["devices"]["results"][0]["device"].split("-mig-")[0]
    with pytest.raises(AllocationError, match=f"groups incompatible on counter set {gpu0}-counters"):
        alloc.allocate([claim("t", f"{attr('type')} == 'timeshare' && device.attributes['{DRIVER}'].index == 0")])


def test_vf_bandwidth_exhausts_the_pf_budget(dgx_slices):
    alloc = Allocator(slices=dgx_slices, classes=[CLASS], node="n1", features=Features.all_on())
    selector = f"{attr('type')} == 'vf' && {attr('pfInterface')} == 'enp12s0np0'"
    results = [alloc.allocate([claim(f"v{i}", selector, capacity={"requests": {"bandwidth": "60G"}})])[0] for i in range(3)]
    assert {r["devices"]["results"][0]["consumedCounters"][0]["counters"]["bandwidth"]["value"] for r in results} == {"60G"}
    with pytest.raises(AllocationError, match="counters exhausted on counter set nic-0-counters"):
        alloc.allocate([claim("v3", selector, capacity={"requests": {"bandwidth": "60G"}})])
    assert validate_combination(dgx_slices, placed(results), Features.all_on()) == []


@pytest.fixture(scope="module")
def rtx_vgpu_slices(tmp_path_factory):
    root = tmp_path_factory.mktemp("rtx")
    make_sysfs("rtxpro6000-vgpu", root)
    pool = render_pool(discover(root, load_catalog()), Features.all_on(), node_name="n1", driver_name=DRIVER)
    return to_resource_slices(pool)


def test_time_sliced_mig_backed_vgpus_fill_every_instance_then_stop(rtx_vgpu_slices):
    """RTX PRO 6000 (2 GPUs): DC-1-12C runs two vGPUs on each of four 1g.24gb instances, 8 per GPU."""
    alloc = Allocator(slices=rtx_vgpu_slices, classes=[CLASS], node="n1")
    allocations = []
    selector = f"{attr('type')} == 'vgpu' && {attr('profile')} == 'DC-1-12C'"
    with pytest.raises(AllocationError, match="0 usable"):
        for i in range(20):
            allocations.extend(alloc.allocate([claim(f"c{i}", selector)]))
    assert len(allocations) == 16
    assert validate_combination(rtx_vgpu_slices, placed(allocations), Features.all_on()) == []


def test_mig_backed_types_share_a_gpu_one_type_per_instance(rtx_vgpu_slices):
    """NVIDIA's mixed MIG-backed configurations: DC-1-12C on one 1g instance, a classic DC-1-24C on another of
    the same GPU; a DC-1-8C on the DC-1-12C's instance is refused there, a second DC-1-12C is not."""
    alloc = Allocator(slices=rtx_vgpu_slices, classes=[CLASS], node="n1")
    on_gpu0 = f"{attr('type')} == 'vgpu' && {attr('index')} == 0"
    (first,) = alloc.allocate([claim("a", f"{on_gpu0} && {attr('profile')} == 'DC-1-12C'")])
    name = first["devices"]["results"][0]["device"]
    assert name.startswith("gpu-0-vgpu-dc-1-12c-")
    start = int(name.split("-")[-2])
    (second,) = alloc.allocate([claim("b", f"{on_gpu0} && {attr('profile')} == 'DC-1-24C'")])
    assert second["devices"]["results"][0]["device"].startswith("gpu-0-vgpu-dc-1-24c-")
    assert second["devices"]["results"][0]["device"] != f"gpu-0-vgpu-dc-1-24c-{start}"
    same_instance = f"{on_gpu0} && {attr('memorySliceStart')} == {start}"
    with pytest.raises(AllocationError, match=f"groups incompatible on counter set gpu-0-gi-{start}-counters"):
        alloc.allocate([claim("c", f"{same_instance} && {attr('profile')} == 'DC-1-8C'")])
    (third,) = alloc.allocate([claim("d", f"{same_instance} && {attr('profile')} == 'DC-1-12C'")])
    assert third["devices"]["results"][0]["device"].startswith(f"gpu-0-vgpu-dc-1-12c-{start}-")
