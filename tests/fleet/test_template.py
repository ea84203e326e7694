"""A group's pool is rendered once and stamped per node; a stamped node is what its own render is."""

from __future__ import annotations

import itertools
import json

import pytest

from driver.discovery import PROFILES
from driver.features import Features
from driver.fleet.template import TEMPLATE_NODE, Templates, features_for
from driver.slices import SliceConfig, render_pool
from fleet.conftest import DRIVER

GATE_SETS = [Features(), Features().with_gates({"DRADeviceCompatibilityGroups": False}),
             Features().with_gates({"DRASharedConsumableCapacity": True}),
             Features().with_gates({"DRAConsumableCapacity": False})]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_stamped_pools_equal_a_render_for_that_node(templates, profile):
    for fidelity, features in itertools.product(("full", "whole"), GATE_SETS):
        template = templates.get(profile, "{}", fidelity, features)
        inventory = templates._inventory(profile, {})
        for node in ("a100-0000", "rack-7-0123", "x"):
            want = render_pool(inventory, features_for(fidelity, features), node_name=node, driver_name=DRIVER)
            got = template.stamp(node)
            assert got.slices == want.slices, (profile, fidelity, features, node)
            assert got.name == node and got.warnings == want.warnings


def test_a_driver_config_reaches_the_template(templates):
    config = json.dumps({"slices": {"singleMode": "full"}}, sort_keys=True, separators=(",", ":"))
    features = Features().with_gates({"DRADeviceCompatibilityGroups": False})
    template = templates.get("dgx-a100", config, "full", features)
    want = render_pool(templates._inventory("dgx-a100", {}), features, node_name="n-0001", driver_name=DRIVER,
                       config=SliceConfig.from_dict({"singleMode": "full"}))
    assert template.stamp("n-0001").slices == want.slices
    assert {d["attributes"]["type"]["string"] for d in want.devices().values()} == {"gpu", "vf"}


def test_one_render_per_key_however_many_nodes(templates):
    template = templates.get("dgx-a100", "{}", "full", Features())
    for i in range(50):
        template.stamp(f"a100-{i:04d}")
    assert templates.get("dgx-a100", "{}", "full", Features()) is template
    templates.get("dgx-a100", "{}", "whole", Features())
    assert templates.rendered == 2


def test_identities_are_stable_and_unique_across_a_fleet(templates):
    template = templates.get("dgx-a100", "{}", "full", Features())
    seen: dict[str, str] = {}
    for i in range(200):
        node = f"a100-{i:04d}"
        for dev in template.stamp(node).devices().values():
            uuid = dev["attributes"]["uuid"]["string"]
            assert seen.setdefault(uuid, node) == node, f"{uuid} on {seen[uuid]} and {node}"
    again = Templates(DRIVER)
    try:
        assert again.get("dgx-a100", "{}", "full", Features()).stamp("a100-0042").slices == template.stamp("a100-0042").slices
    finally:
        again.close()


def test_a_node_derived_value_stamping_cannot_reach_is_refused(templates, monkeypatch):
    """Were the renderer to put the node name where stamping does not look (here: a product name),
    the template refuses to exist rather than publish the stand-in's name on every node."""
    import driver.slices.gpu as gpu

    real = gpu.location_attributes

    def leaky(pci):
        return {**real(pci), "host": {"string": TEMPLATE_NODE}}

    monkeypatch.setattr(gpu, "location_attributes", leaky)
    with pytest.raises(RuntimeError, match="node name occurs"):
        templates.get("demo", "{}", "full", Features())


def test_an_identity_outside_device_attributes_is_refused(templates, monkeypatch):
    import driver.fleet.template as tpl

    real = tpl._holes_of
    monkeypatch.setattr(tpl, "_holes_of", lambda spec: real(spec)[1:])  # loses one device's holes
    with pytest.raises(RuntimeError, match="identity is outside"):
        templates.get("demo", "{}", "full", Features())
