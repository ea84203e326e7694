"""Every fake sysfs profile, discovered and rendered: exact counts, groups, limits, 1.37 schema.

Expectations live in fixture_expectations.yaml (one `reason` per profile).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import fits, groups_of, memory_slices, of_type, validate_all

from driver.discovery import PROFILES, discover, make_sysfs
from driver.features import Features
from driver.hardware import load_catalog
from driver.slices import check_pool, render_pool, to_resource_slices

EXPECTED = yaml.safe_load((Path(__file__).parent / "fixture_expectations.yaml").read_text())
GATES = {
    "default": Features(),
    "no-groups": Features(compatibility_groups=False),
    "no-partitionable": Features(partitionable_devices=False),
}
DRIVER = "fake-dra.example.com"


@pytest.fixture(scope="module")
def inventories(tmp_path_factory):
    catalog = load_catalog(None)
    out = {}
    for profile in PROFILES:
        root = tmp_path_factory.mktemp(profile)
        make_sysfs(profile, root)
        out[profile] = discover(root, catalog)
    return out


def render(inventory, features=Features()):
    return render_pool(inventory, features, node_name="node-1", driver_name=DRIVER)


def test_every_profile_has_expectations():
    assert sorted(EXPECTED) == sorted(PROFILES)


@pytest.mark.parametrize("profile", sorted(EXPECTED))
@pytest.mark.parametrize("gates", sorted(GATES))
def test_exact_counts_and_slice_layout(inventories, profile, gates):
    pool = render(inventories[profile], GATES[gates])
    want = EXPECTED[profile][gates]
    counts = Counter(d["attributes"]["type"]["string"] for d in pool.devices().values())
    assert dict(counts) == want["counts"]
    assert [len(s.get("devices", s.get("sharedCounters", ()))) for s in pool.slices] == want["slices"]
    if gates != "no-partitionable":
        assert len(pool.counter_sets()) == want.get("counter_sets", EXPECTED[profile]["counter_sets"])
    assert check_pool(pool) == []
    assert pool.warnings == ()


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_groups_per_device_type(inventories, profile):
    pool = render(inventories[profile])
    # GPUs with time-sliced MIG-backed vGPUs: every MIG-backed vGPU there is held to one type per GPU
    # instance (driver.slices.miginstances): its instance's layouts on the GPU's counter set, its type on
    # the instance's own counter set.
    per_instance = {d["attributes"]["parentUUID"]["string"] for d in pool.devices().values()
                    if "vgpusPerInstance" in d["attributes"]}
    for name, dev in pool.devices().items():
        kind = dev["attributes"]["type"]["string"]
        groups = groups_of(dev)
        if kind == "vgpu" and dev["attributes"]["parentUUID"]["string"] in per_instance and "migProfile" in dev["attributes"]:
            layouts, of_type = groups
            assert 1 <= len(layouts) <= 2 and all(re.fullmatch(r"mig-vgpu-[0-9]+", g) for g in layouts), name
            assert of_type == [dev["attributes"]["profile"]["string"].lower()], name
            start = dev["attributes"]["memorySliceStart"]["int"]
            assert [e["counterSet"] for e in dev["consumesCounters"]][1].endswith(f"-gi-{start}-counters"), name
        elif kind == "vgpu" and "migProfile" in dev["attributes"]:
            assert groups == [["mig-vgpu"]], name
        elif kind == "vgpu":
            assert groups == [["vgpu-" + dev["attributes"]["profile"]["string"].lower()]], name
        elif kind == "timeshare":
            assert groups == [[{"time-slicing": "timeslicing", "mps": "mps"}[dev["attributes"]["sharing"]["string"]]]]
        elif kind in ("vf", "nic"):
            assert all(g == [] for g in groups), name
        else:
            assert groups == [{"gpu": ["full"], "mig": ["mig"]}[kind]], name


@pytest.mark.parametrize("profile", ["dgx-a100", "h100", "vgpu-host"])
def test_overlapping_mig_placements_never_fit(inventories, profile):
    pool = render(inventories[profile])
    devices = pool.devices()
    migs = [n for n in of_type(pool, "mig") if n.startswith("gpu-0-")]
    assert migs
    for a, b in itertools.combinations(migs, 2):
        if memory_slices(devices[a]) & memory_slices(devices[b]):
            assert not fits(pool, [a, b]), (a, b)


@pytest.mark.parametrize("profile", sorted(EXPECTED))
@pytest.mark.parametrize("gates", list(itertools.product([True, False], repeat=3)))
def test_every_slice_validates_against_137_strict(inventories, profile, gates):
    features = Features(partitionable_devices=gates[0], compatibility_groups=gates[1],
                        consumable_capacity=gates[2], shared_consumable_capacity=False)
    validate_all(to_resource_slices(render(inventories[profile], features)))


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_render_is_byte_identical_across_discoveries(tmp_path, inventories, profile):
    make_sysfs(profile, tmp_path / "again")
    again = discover(tmp_path / "again", load_catalog(None))
    first = json.dumps(to_resource_slices(render(inventories[profile])))
    assert first == json.dumps(to_resource_slices(render(again)))
