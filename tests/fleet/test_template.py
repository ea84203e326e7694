"""A group's pools are rendered once and stamped per node; a stamped node is what its own render is,
byte for byte, for every personality, profile, fidelity and gate set."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest

from driver.discovery import PROFILES
from driver.errors import ConfigError
from driver.features import Features
from driver.fleet.template import TEMPLATE_NODE, Templates, features_for
from driver.personality import PERSONALITIES, personality_named
from driver.slices import SliceConfig, render_pool
from driver.store.codec import json_text
from fleet.conftest import DRIVER

GATE_SETS = [Features(), Features().with_gates({"DRADeviceCompatibilityGroups": False}),
             Features().with_gates({"DRASharedConsumableCapacity": True}),
             Features().with_gates({"DRAConsumableCapacity": False})]
NODES = ("a100-0000", "rack-7-0123", "x")


def static_mig(inventory) -> dict[str, Any]:
    """mig-parted's work as the nvidia personality is told it: one MIG device of the smallest profile
    on every MIG-capable GPU (each then has a `MIG-` UUID of its own and no whole device)."""
    devices = {g.index: [f"{g.model.mig_profiles[0].name}@{g.model.mig_profiles[0].placements[-1]}"]
               for g in inventory.gpus if g.model.mig_capable}
    return {"nvidia": {"migDevices": devices}} if devices else {"nvidia": {"migEnabled": []}}


def configs(personality: str, inventory) -> list[dict[str, Any]]:
    """The driver configs worth stamping per personality: each mode that changes which devices, and
    so which node-derived values, a node has."""
    if personality == "nvidia":
        gates = [{"DynamicMIG": True}, {"PassthroughSupport": True}, {"ConsumableShares": True}]
        return [{}, static_mig(inventory), {"nvidia": {"featureGates": gates[0], "migEnabled": "all"}},
                *({"nvidia": {"featureGates": g}} for g in gates),
                {"nvidia": {"featureGates": gates[2], "consumableShares": "4"}}]
    if personality == "sriov":
        return [{}, {"sriov": {"eswitchMode": "switchdev"}}]
    return [{}]


def canonical(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def assert_stamps_equal_renders(templates, personality, profile, config, fidelity, features):
    drivers = personality_named(personality).drivers(config, None if personality != "fake-dra" else DRIVER)
    inventory = templates.inventory(profile, config)
    try:
        fresh = {node: [d.render(inventory, features_for(fidelity, features), node_name=node) for d in drivers]
                 for node in NODES}
    except ConfigError as exc:  # e.g. a GPU model NVML facts are missing for: the template refuses alike
        with pytest.raises(ConfigError, match="^" + re.escape(str(exc)) + "$"):
            templates.get(profile, canonical(config), fidelity, features, personality)
        return 0
    template = templates.get(profile, canonical(config), fidelity, features, personality)
    assert template.driver_names == tuple(d.name for d in drivers)
    for node, pools in fresh.items():
        for driver, want in zip(template.drivers, pools):
            got = driver.stamp(node)
            where = (personality, profile, config, fidelity, features, node, driver.driver_name)
            assert [json_text(s) for s in got.slices] == [json_text(s) for s in want.slices], where
            assert got.name == want.name == node and got.warnings == want.warnings, where
    return 1


@pytest.mark.parametrize("personality", list(PERSONALITIES))
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_stamped_pools_equal_a_render_for_that_node(templates, personality, profile):
    compared = 0
    for config in configs(personality, templates.inventory(profile, {})):
        partitioned = personality_named(personality).partitioned_by(config) is not None
        for fidelity, features in itertools.product(("full", "whole"), GATE_SETS):
            if fidelity == "whole" and partitioned:
                continue  # the fleet file refuses it (test_spec)
            compared += assert_stamps_equal_renders(templates, personality, profile, config, fidelity, features)
    if personality != "nvidia" or profile in ("demo", "dgx-a100", "dgx-a100-vgpu", "h100", "h200-vgpu", "no-gpu", "vgpu-host"):
        assert compared, "nothing was compared"


def test_a_driver_config_reaches_the_template(templates):
    config = json.dumps({"slices": {"singleMode": "full"}}, sort_keys=True, separators=(",", ":"))
    features = Features().with_gates({"DRADeviceCompatibilityGroups": False})
    template = templates.get("dgx-a100", config, "full", features)
    want = render_pool(templates.inventory("dgx-a100", {}), features, node_name="n-0001", driver_name=DRIVER,
                       config=SliceConfig.from_dict({"singleMode": "full"}))
    assert template.drivers[0].stamp("n-0001").slices == want.slices
    assert {d["attributes"]["type"]["string"] for d in want.devices().values()} == {"gpu", "vf"}


def test_one_render_per_key_however_many_nodes(templates):
    template = templates.get("dgx-a100", "{}", "full", Features())
    for i in range(50):
        template.drivers[0].stamp(f"a100-{i:04d}")
    assert templates.get("dgx-a100", "{}", "full", Features()) is template
    templates.get("dgx-a100", "{}", "whole", Features())
    nvidia = templates.get("dgx-a100", "{}", "full", Features(), "nvidia")
    assert templates.get("dgx-a100", "{}", "full", Features(), "nvidia") is nvidia
    assert templates.rendered == 3 and len(nvidia.drivers) == 2


def test_identities_are_stable_and_unique_across_a_fleet(templates):
    template = templates.get("dgx-a100", "{}", "full", Features()).drivers[0]
    seen: dict[str, str] = {}
    for i in range(200):
        node = f"a100-{i:04d}"
        for dev in template.stamp(node).devices().values():
            uuid = dev["attributes"]["uuid"]["string"]
            assert seen.setdefault(uuid, node) == node, f"{uuid} on {seen[uuid]} and {node}"
    again = Templates(DRIVER)
    try:
        assert (again.get("dgx-a100", "{}", "full", Features()).drivers[0].stamp("a100-0042").slices
                == template.stamp("a100-0042").slices)
    finally:
        again.close()


def test_nvidia_uuids_are_the_nodes_own_and_mig_devices_name_their_parent(templates):
    """NVIDIA's `GPU-` and static MIG `MIG-` UUIDs differ on every node of a group and stay the same
    for a node; a MIG device's parentUUID is its GPU's UUID on the same node."""
    config = {"nvidia": {"migDevices": {0: ["1g.5gb@0", "3g.20gb@4"]}}}
    gpus = templates.get("dgx-a100", canonical(config), "full", Features(), "nvidia").drivers[0]
    seen: dict[str, str] = {}
    for i in range(100):
        node = f"a100-{i:04d}"
        devices = gpus.stamp(node).devices()
        for name, dev in devices.items():
            uuid = dev["attributes"]["uuid"]["string"]
            assert uuid.startswith("MIG-" if "-mig-" in name else "GPU-")
            assert seen.setdefault(uuid, node) == node, f"{uuid} on {seen[uuid]} and {node}"
        parent = devices["gpu-0-mig-1g5gb-19-0"]["attributes"]["parentUUID"]["string"]
        assert parent.startswith("GPU-") and parent not in seen  # GPU 0 is in MIG mode: no gpu-0 device
        assert devices["gpu-0-mig-3g20gb-9-4"]["attributes"]["parentUUID"]["string"] == parent
    assert len(seen) == 100 * (7 + 2)


def test_a_renderer_deriving_identities_itself_breaks_the_equality(templates, monkeypatch):
    """The equality test can fail: were NVIDIA's renderer to derive GPU UUIDs from the node name
    directly (as before fleets learnt personalities), a stamped node would carry the stand-in's."""
    import driver.personality.nvidia.devices as nv
    from driver.slices.names import stable_uuid

    monkeypatch.setattr(nv.GpuInfo, "uuid", property(
        lambda self: "GPU-" + stable_uuid(self.node_name, self.gpu.pci.address, self.name)))
    with pytest.raises(AssertionError):
        assert_stamps_equal_renders(templates, "nvidia", "demo", {}, "full", Features())


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


def test_a_node_name_in_an_nvidia_attribute_is_refused(templates, monkeypatch):
    import driver.personality.nvidia.devices as nv

    real = nv.location
    monkeypatch.setattr(nv, "location", lambda pci, settings: {**real(pci, settings), "host": {"string": TEMPLATE_NODE}})
    with pytest.raises(RuntimeError, match="node name occurs"):
        templates.get("demo", "{}", "full", Features(), "nvidia")


def test_an_identity_outside_device_attributes_is_refused(templates, monkeypatch):
    import driver.fleet.template as tpl

    real = tpl._holes_of
    monkeypatch.setattr(tpl, "_holes_of", lambda spec: real(spec)[1:])  # loses one device's holes
    with pytest.raises(RuntimeError, match="identity is outside"):
        templates.get("demo", "{}", "full", Features())
