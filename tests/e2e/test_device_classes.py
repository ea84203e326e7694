"""A DeviceClass for every device type the driver publishes, and each class selects exactly that type.

Without a class for a type, no claim can ever ask for those devices; a selector that also matched
another type would let a `vf` request take a whole NIC. The published types are gathered by
rendering every bundled node profile under the gate combinations that change what is published.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.celexpr import compile_selector, device_variable
from driver.discovery import discover, make_sysfs
from driver.discovery.fakeprofiles import PROFILES
from driver.personality.fakedra.classes import CLASSES, device_classes
from driver.features import Features
from driver.hardware import load_catalog
from driver.slices import SliceConfig, render_pool

GATE_VARIANTS = {
    "defaults": Features(),
    "all-on": Features.all_on(),
    "groups-off": Features().with_gates({"DRADeviceCompatibilityGroups": False}),
    "partitionable-off": Features().with_gates({"DRAPartitionableDevices": False}),
}


def _published(tmp_path: Path, profile: str) -> dict[str, list[dict]]:
    """Device type -> devices, over every gate variant, for one profile, with and without every
    NIC port opted in as a whole NIC (slices.publishPFs)."""
    sysfs = tmp_path / profile
    make_sysfs(profile, sysfs)
    inventory = discover(sysfs, load_catalog())
    all_ports = [n.pci.address for n in inventory.nics] + [p.pci.address for p in getattr(inventory, "ports", ())]
    configs = [SliceConfig.from_dict(None), SliceConfig.from_dict({"publishPFs": all_ports})]
    by_type: dict[str, list[dict]] = {}
    for features in GATE_VARIANTS.values():
        for config in configs:
            pool = render_pool(inventory, features, node_name="n1", driver_name=DEFAULT_DRIVER_NAME, config=config)
            for dev in pool.devices().values():
                by_type.setdefault(next(iter(dev["attributes"]["type"].values())), []).append(dev)
    return by_type


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_published_type_has_a_class_that_selects_only_it(tmp_path: Path, profile: str) -> None:
    by_type = _published(tmp_path, profile)
    assert by_type, f"profile {profile} publishes nothing"
    missing = sorted(set(by_type) - set(CLASSES.values()))
    assert not missing, f"profile {profile} publishes device types without a DeviceClass: {missing}"
    classes = {dc["metadata"]["name"]: dc for dc in device_classes()}
    for short, type_value in CLASSES.items():
        dc = classes[f"{short}.{DEFAULT_DRIVER_NAME}"]
        (selector,) = [compile_selector(s["cel"]["expression"], dc["metadata"]["name"]) for s in dc["spec"]["selectors"]]
        for published_type, devices in by_type.items():
            for dev in devices[:3]:
                selected = selector.matches(device_variable(DEFAULT_DRIVER_NAME, dev))
                assert selected == (published_type == type_value), (
                    f"class {dc['metadata']['name']} on {published_type} device {dev['name']}: selected={selected}")


def test_every_class_is_exercised(tmp_path: Path) -> None:
    # Guard for the test above: across the profiles every class meets devices of its type.
    seen: set[str] = set()
    for profile in sorted(PROFILES):
        seen |= set(_published(tmp_path, profile))
    assert seen == set(CLASSES.values())
