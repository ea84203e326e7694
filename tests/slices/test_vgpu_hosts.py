"""vGPU hosts built from real hardware facts: which vGPU devices each profile publishes, per GPU.

Type names are per board (a DGX A100's 10de:20b0 offers A100X-*), instance counts are the vGPU guide's
maxima (never memory // framebuffer), MIG-backed types pack exactly like MIG, and the groups keep
time-sliced vGPUs, MIG-backed vGPUs, MIG, shared devices and the full GPU apart.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from conftest import fits, groups_of, of_type, placed

from driver.allocator.rules import validate_combination
from driver.discovery import PROFILES, discover, make_sysfs
from driver.discovery.fakesysfs import write_profile
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Gpu, Inventory, MdevType
from driver.slices import check_pool, render_pool

DRIVER = "fake-dra.example.com"
CATALOG = load_catalog()

# Per GPU: vGPU type -> devices published (the guide's equal-size maxima; MIG-backed: placements).
A100X_TIME_SLICED = {"A100X-4C": 10, "A100X-5C": 8, "A100X-8C": 5, "A100X-10C": 4, "A100X-20C": 2, "A100X-40C": 1}
A100X_MIG_BACKED = {"A100X-1-5C": 7, "A100X-2-10C": 3, "A100X-3-20C": 2, "A100X-4-20C": 1, "A100X-7-40C": 1,
                    "A100X-1-5CME": 7}
H200X = {"H200X-141C": 1, "H200X-70C": 2, "H200X-35C": 4, "H200X-28C": 5, "H200X-17C": 8, "H200X-14C": 10,
         "H200X-8C": 16, "H200X-7C": 20, "H200X-4C": 32}
EXPECTED = {
    "dgx-a100-vgpu": {f"gpu-{k}": {**A100X_TIME_SLICED, **A100X_MIG_BACKED} for k in range(8)},
    "h200-vgpu": {f"gpu-{k}": H200X for k in range(8)},
    "demo": {"gpu-0": {}, "gpu-1": A100X_TIME_SLICED},
    "vgpu-host": {
        "gpu-0": {"A100D-80C": 1, "A100D-40C": 2, "A100D-20C": 4, "A100D-16C": 5, "A100D-10C": 8, "A100D-8C": 10,
                  "A100D-4C": 20},
        "gpu-1": {"T4-16C": 1, "T4-8C": 2, "T4-4C": 4}, "gpu-2": {},
        "gpu-3": {"A100D-80C": 1, "A100D-40C": 2, "A100D-20C": 4, "A100D-16C": 5, "A100D-10C": 8, "A100D-8C": 10,
                  "A100D-4C": 20},
        "gpu-4": {"T4-16C": 1, "T4-8C": 2, "T4-4C": 4},
    },
}


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    out = {}
    for profile in EXPECTED:
        root = tmp_path_factory.mktemp(profile)
        make_sysfs(profile, root)
        out[profile] = render_pool(discover(root, CATALOG), Features(), node_name="n1", driver_name=DRIVER)
    return out


def vgpus_per_gpu(pool) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for name, dev in of_type(pool, "vgpu").items():
        out.setdefault(name.split("-vgpu-")[0], Counter())[dev["attributes"]["profile"]["string"]] += 1
    return out


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_vgpu_devices_per_profile_and_gpu(pools, profile):
    pool = pools[profile]
    got = vgpus_per_gpu(pool)
    for gpu, want in EXPECTED[profile].items():
        assert dict(got.get(gpu, {})) == want, gpu
    assert pool.warnings == () and check_pool(pool) == []


def test_a100x_devices_carry_the_boards_facts(pools):
    devices = pools["dgx-a100-vgpu"].devices()
    ts = devices["gpu-3-vgpu-a100x-4c-9"]
    assert ts["attributes"]["profile"] == {"string": "A100X-4C"} and ts["attributes"]["mdevType"] == {"string": "nvidia-457"}
    assert ts["capacity"] == {"memory": {"value": "4Gi"}}
    assert ts["consumesCounters"] == [{"counterSet": "gpu-3-counters", "compatibilityGroups": ["vgpu-a100x-4c"],
                                       "counters": {"memory": {"value": "4Gi"}, "multiprocessors": {"value": "10"}}}]
    mb = devices["gpu-3-vgpu-a100x-1-5c-6"]
    assert mb["attributes"]["migProfile"] == {"string": "1g.5gb"} and mb["attributes"]["memorySliceStart"] == {"int": 6}
    assert mb["capacity"] == {"memory": {"value": "5Gi"}}  # the framebuffer the VM gets
    assert groups_of(mb) == [["mig-vgpu"]]


def test_mig_backed_vgpus_pack_exactly_like_mig(pools):
    pool = pools["dgx-a100-vgpu"]
    devices = pool.devices()
    for name, dev in of_type(pool, "vgpu").items():
        if "migProfile" not in dev["attributes"] or not name.startswith("gpu-0-"):
            continue
        attrs = dev["attributes"]
        label = attrs["migProfile"]["string"].replace(".", "").replace("+", "")
        twin = devices[f"gpu-0-mig-{label}-{attrs['memorySliceStart']['int']}"]
        assert dev["consumesCounters"][0]["counters"] == twin["consumesCounters"][0]["counters"], name
    # Seven 1g.5gb-backed vGPUs fill the GPU; an eighth 1g placement cannot exist, a 2g one no longer fits.
    seven = [f"gpu-0-vgpu-a100x-1-5c-{k}" for k in range(7)]
    assert fits(pool, seven) and not fits(pool, seven + ["gpu-0-vgpu-a100x-2-10c-0"])
    assert fits(pool, ["gpu-0-vgpu-a100x-4-20c-0", "gpu-0-vgpu-a100x-2-10c-4", "gpu-0-vgpu-a100x-1-5c-6"])
    assert not fits(pool, ["gpu-0-vgpu-a100x-1-5cme-0", "gpu-0-vgpu-a100x-1-5cme-1"])  # one OFA engine


def violation_kinds(pool, names):
    return {v.kind for v in validate_combination(list(pool.slices), placed(pool, names), Features())}


def test_groups_keep_vgpu_kinds_apart(pools):
    pool = pools["dgx-a100-vgpu"]
    assert violation_kinds(pool, ["gpu-0-vgpu-a100x-1-5c-0", "gpu-0-vgpu-a100x-2-10c-2"]) == set()  # with each other
    for other in ("gpu-0-vgpu-a100x-4c-0", "gpu-0", "gpu-0-mig-1g5gb-1", "gpu-0-timeslicing", "gpu-0-mps"):
        assert "groups" in violation_kinds(pool, ["gpu-0-vgpu-a100x-1-5c-0", other]), other
    # Time-sliced types are homogeneous per GPU (equal-size mode) and never beside MIG or shares.
    assert "groups" in violation_kinds(pool, ["gpu-0-vgpu-a100x-4c-0", "gpu-0-vgpu-a100x-8c-0"])
    assert "groups" in violation_kinds(pool, ["gpu-0-vgpu-a100x-4c-0", "gpu-0-mig-1g5gb-0"])
    assert violation_kinds(pool, ["gpu-0-vgpu-a100x-4c-0", "gpu-1-mig-1g5gb-0"]) == set()  # another GPU


def test_time_sliced_sets_fill_the_gpu_and_not_more(pools):
    pool = pools["h200-vgpu"]
    for label, count in (("141c", 1), ("70c", 2), ("17c", 8), ("4c", 32)):
        names = [f"gpu-2-vgpu-h200x-{label}-{k}" for k in range(count)]
        assert fits(pool, names), label
        assert not fits(pool, names + ["gpu-2"]), label
    # The full-board type's framebuffer (144384 MiB) is above the 143771 MiB nvidia-smi reports; it is
    # still published, once, holding the whole GPU.
    full = pool.devices()["gpu-2-vgpu-h200x-141c-0"]
    assert full["capacity"] == {"memory": {"value": "141Gi"}}
    assert full["consumesCounters"][0]["counters"]["memory"] == {"value": "143771Mi"}


def test_what_a_vgpu_host_does_not_publish(pools):
    h200 = pools["h200-vgpu"].devices()
    # Storage and management ports (no VFs enabled) stay the host's; so do GPU VFs themselves.
    assert not [n for n, d in h200.items() if d["attributes"]["type"]["string"] == "nic"]
    assert not [d for d in h200.values() if d["attributes"].get("pciBusID", {}).get("string") == "0000:e1:00.0"]
    assert not [n for n in h200 if n.startswith("gpu-8")]
    # No MIG-backed H200X types are offered on this host (MIG off, vendor VFIO lists what is creatable).
    assert not [d for d in of_type(pools["h200-vgpu"], "vgpu").values() if "migProfile" in d["attributes"]]


def gpu_with_types(names, model=0x20B0, parents=("0000:07:00.4", "0000:07:00.5")):
    types = tuple(MdevType(f"nvidia-{900 + k}", n, 1, "vfio-pci", parents=parents) for k, n in enumerate(names))
    pci = dataclasses.replace(_pci(), device_id=model)
    return Inventory(gpus=(Gpu(index=0, pci=pci, model=CATALOG.gpu(model), mdev_types=types),))


def _pci():
    from builders import pci

    return pci("0000:07:00.0")


def test_either_host_driver_prefix_and_any_case_match():
    pool = render_pool(gpu_with_types(("GRID A100X-8C", "NVIDIA A100X-4C", "nvidia a100x-20c ")), Features(),
                       node_name="n1", driver_name=DRIVER)
    assert Counter(d["attributes"]["profile"]["string"] for d in of_type(pool, "vgpu").values()) == {
        "A100X-8C": 2, "A100X-4C": 2, "A100X-20C": 2}  # capped by the two VFs that offer them
    assert pool.warnings == ()


def test_pcie_names_on_the_sxm_board_are_not_published():
    pool = render_pool(gpu_with_types(("NVIDIA A100-4C", "GRID A100X-4C")), Features(), node_name="n1",
                       driver_name=DRIVER)
    assert {d["attributes"]["profile"]["string"] for d in of_type(pool, "vgpu").values()} == {"A100X-4C"}
    assert any("'NVIDIA A100-4C' is not a vGPU type of a100-40gb (this board's types are A100X-*)" in w
               for w in pool.warnings)


def test_graphics_series_types_of_the_board_are_left_out_quietly():
    # Every Turing/Ada vGPU host lists A/B/Q-series types beside the C-series ones (vgpuConfig.xml:
    # GRID T4-1B ... T4-16Q); they are not this driver's and not a problem. A C-series type the table
    # lacks, a MIG-backed one and another board's type are still reported.
    types = ("GRID T4-1B", "GRID T4-2B4", "GRID T4-16Q", "GRID T4-8A", "GRID T4-4C", "GRID T4-2C",
             "GRID T4-1-4CME", "GRID P4-2Q")
    inv = gpu_with_types(types, model=0x1EB8, parents=("0000:07:00.0",))  # Turing: types on the PF
    pool = render_pool(inv, Features(), node_name="n1", driver_name=DRIVER)
    assert Counter(d["attributes"]["profile"]["string"] for d in of_type(pool, "vgpu").values()) == {"T4-4C": 4}
    reported = sorted(w.split("'")[1] for w in pool.warnings)
    assert reported == ["GRID P4-2Q", "GRID T4-1-4CME", "GRID T4-2C"]


def test_instances_are_capped_by_the_vfs_offering_a_type(tmp_path):
    # Only 4 VFs enabled: at most 4 vGPUs, whatever the type's maximum.
    demo = PROFILES["demo"]
    fns = tuple(dataclasses.replace(f, num_vfs=4) if f.mdev else f for f in demo.functions)
    write_profile(dataclasses.replace(demo, functions=fns), tmp_path / "sys")
    pool = render_pool(discover(tmp_path / "sys", CATALOG), Features(), node_name="n1", driver_name=DRIVER)
    assert dict(vgpus_per_gpu(pool)["gpu-1"]) == {"A100X-4C": 4, "A100X-5C": 4, "A100X-8C": 4, "A100X-10C": 4,
                                                  "A100X-20C": 2, "A100X-40C": 1}


def test_single_mode_can_choose_a_mig_backed_type():
    inv = gpu_with_types(("GRID A100X-1-5C", "GRID A100X-4C"))
    pool = render_pool(inv, Features(compatibility_groups=False), node_name="n1", driver_name=DRIVER,
                       config=_config({"singleMode": "vgpu:A100X-1-5C"}))
    assert sorted(of_type(pool, "vgpu")) == [f"gpu-0-vgpu-a100x-1-5c-{k}" for k in range(7)]
    assert all(groups_of(d) == [[]] for d in pool.devices().values())


def test_mig_backed_type_on_a_model_without_that_profile_is_a_warning():
    from driver.model.hardware import VgpuProfile

    t4 = CATALOG.gpu(0x1EB8)
    odd = dataclasses.replace(t4, vgpu_profiles=(VgpuProfile("T4-1-4C", 4096, 1, mig_profile="1g.4gb"),))
    inv = Inventory(gpus=(Gpu(index=0, pci=_pci(), model=odd,
                              mdev_types=(MdevType("nvidia-1", "NVIDIA T4-1-4C", 1, "vfio-pci"),)),))
    pool = render_pool(inv, Features(), node_name="n1", driver_name=DRIVER)
    assert of_type(pool, "vgpu") == {}
    assert any("needs MIG profile 1g.4gb" in w for w in pool.warnings)


def _config(data):
    from driver.slices import SliceConfig

    return SliceConfig.from_dict(data)


def test_mixed_size_mode_publishes_the_guides_mixed_size_maxima(pools, tmp_path):
    # vgpuHomogeneous: false lets time-sliced types of different sizes share a GPU: NVIDIA's mixed-size
    # mode, whose maxima are lower for the small types (vGPU guide, "Maximum vGPUs per GPU in Mixed-Size
    # Mode": A100X-4C 8 not 10, A100X-8C 4 not 5; H200X the same in both modes).
    config = _config({"vgpuHomogeneous": False})
    for profile, gpu, want in (
        ("dgx-a100-vgpu", "gpu-0", {"A100X-4C": 8, "A100X-5C": 8, "A100X-8C": 4, "A100X-10C": 4, "A100X-20C": 2,
                                    "A100X-40C": 1, **A100X_MIG_BACKED}),
        ("h200-vgpu", "gpu-0", H200X),
        ("vgpu-host", "gpu-0", {"A100D-80C": 1, "A100D-40C": 2, "A100D-20C": 4, "A100D-16C": 4, "A100D-10C": 8,
                                "A100D-8C": 8, "A100D-4C": 16}),
        ("vgpu-host", "gpu-1", {"T4-16C": 1, "T4-8C": 2, "T4-4C": 4}),  # no mixed-size mode: equal-size
    ):
        root = tmp_path / profile
        if not root.exists():
            make_sysfs(profile, root)
        pool = render_pool(discover(root, CATALOG), Features(), node_name="n1", driver_name=DRIVER, config=config)
        assert dict(vgpus_per_gpu(pool)[gpu]) == want, (profile, gpu)
        assert pool.warnings == () and check_pool(pool) == []
        if profile == "vgpu-host":
            # The guide: the T4 "does not support mixed-size mode", so its types stay one per GPU.
            devices = pool.devices()
            assert groups_of(devices["gpu-0-vgpu-a100d-4c-0"]) == [["vgpu"]]
            assert groups_of(devices["gpu-1-vgpu-t4-4c-0"]) == [["vgpu-t4-4c"]]
            assert "groups" in violation_kinds(pool, ["gpu-1-vgpu-t4-4c-0", "gpu-1-vgpu-t4-8c-0"])
            assert violation_kinds(pool, ["gpu-0-vgpu-a100d-4c-0", "gpu-0-vgpu-a100d-8c-0"]) == set()


def test_vgpus_never_outnumber_the_vfs_they_run_on():
    # One vGPU per SR-IOV VF. With only 4 VFs enabled, 7 MIG-backed 1g.5gb placements are still
    # published (any 4 of them may be used) but no 5th fits: the VF counter holds them to 4.
    vfs = tuple(f"0000:07:00.{k + 4}" for k in range(4))
    pool = render_pool(gpu_with_types(("GRID A100X-1-5C", "GRID A100X-2-10C", "GRID A100X-4C"), parents=vfs),
                       Features(), node_name="n1", driver_name=DRIVER)
    assert pool.counter_sets()["gpu-0-counters"]["counters"]["vgpu-vfs"] == {"value": "4"}
    assert "vgpu-vfs" not in pool.devices()["gpu-0"]["consumesCounters"][0]["counters"]
    ones = [f"gpu-0-vgpu-a100x-1-5c-{k}" for k in range(7)]
    assert fits(pool, ones[:4]) and not fits(pool, ones[:5])
    assert fits(pool, ones[:3] + ["gpu-0-vgpu-a100x-2-10c-4"])
    assert not fits(pool, ones[:4] + ["gpu-0-vgpu-a100x-2-10c-4"])  # the slices allow it, the 4 VFs do not
    assert dict(vgpus_per_gpu(pool)["gpu-0"]) == {"A100X-4C": 4, "A100X-1-5C": 7, "A100X-2-10C": 3}
    # Mixed-size mode: 4 A100X-4C (10% each) and an A100X-8C (20%) fit the memory but not the 4 VFs.
    mixed = render_pool(gpu_with_types(("GRID A100X-4C", "GRID A100X-8C"), parents=vfs), Features(),
                        node_name="n1", driver_name=DRIVER, config=_config({"vgpuHomogeneous": False}))
    four = [f"gpu-0-vgpu-a100x-4c-{k}" for k in range(4)]
    assert fits(mixed, four) and not fits(mixed, four[:3] + ["gpu-0-vgpu-a100x-8c-0", "gpu-0-vgpu-a100x-8c-1"])
    assert check_pool(pool) == [] and check_pool(mixed) == []


def test_no_vf_counter_where_the_vfs_cannot_run_out(pools):
    # All 16 VFs of an A100 enabled: more than any set of vGPUs the memory and slices allow.
    for profile in ("dgx-a100-vgpu", "h200-vgpu", "demo", "vgpu-host"):
        assert not [cs for cs in pools[profile].counter_sets().values() if "vgpu-vfs" in cs["counters"]], profile
