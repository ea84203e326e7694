"""Fleets of personalities: `personality:` in node groups, read strictly; an nvidia node's two drivers
each published and owned by the Node as `run --personality nvidia` publishes them; removal,
idempotency and personality changes per driver; DeviceClasses, dry-run sizes and `fleet run`."""

from __future__ import annotations

import json

import pytest

from driver.cli import main
from driver.store import ObjectStore
from driver.errors import InputError
from driver.features import Features
from driver.fleet.apply import delete_fleet
from driver.fleet.loop import FleetLoop
from driver.fleet.nodes import PERSONALITY_LABEL
from driver.fleet.spec import load_fleet, parse_fleet
from driver.fleet.template import Templates
from driver.slices import slice_name
from driver.store.codec import json_text
from fleet.conftest import DRIVER, fleet_doc, group

SLICES = "resourceslices"
GPU, SRIOV = "gpu.nvidia.com", "sriovnetwork.k8snetworkplumbingwg.io"
DYNAMIC = {"nvidia": {"featureGates": {"DynamicMIG": True}}}


def by_driver(store, node):
    out: dict[str, list[str]] = {}
    for s in sorted(store.list(SLICES), key=lambda s: s["metadata"]["name"]):
        if s["spec"]["nodeName"] == node:
            out.setdefault(s["spec"]["driver"], []).append(s["metadata"]["name"])
    return out


# ---- the fleet file ---------------------------------------------------------------------------

def test_a_group_names_its_personality_and_its_sections():
    fleet = parse_fleet(fleet_doc(group("a", 1, "dgx-a100"), group("n", 2, "h100", personality="nvidia",
                                                                   driverConfig={**DYNAMIC, "sriov": {"eswitchMode": "switchdev"}}),
                                  group("s", 1, "no-gpu", personality="sriov", fidelity="whole")))
    assert [g.personality for g in fleet.groups] == ["fake-dra", "nvidia", "sriov"]
    assert fleet.personalities() == ["fake-dra", "nvidia", "sriov"]
    assert fleet.groups[1].config() == {**DYNAMIC, "sriov": {"eswitchMode": "switchdev"}}


@pytest.mark.parametrize("extra, message", [
    ({"personality": "nvida"}, "spec.nodeGroups[0].personality: unknown personality 'nvida'; did you mean 'nvidia'? "
                               "known: fake-dra, nvidia, sriov"),
    ({"personality": "amd"}, "spec.nodeGroups[0].personality: unknown personality 'amd'; known: fake-dra, nvidia, sriov"),
    ({"personality": 3}, "spec.nodeGroups[0].personality: expected a string, one of fake-dra, nvidia, sriov, example; got 3"),
    ({"personality": ""}, "spec.nodeGroups[0].personality: required (one of fake-dra, nvidia, sriov, example)"),
    ({"driverConfig": {"nvidia": {}}}, "spec.nodeGroups[0].driverConfig.nvidia: unknown field (personality fake-dra "
                                       "reads hardware, slices)"),
    ({"personality": "nvidia", "driverConfig": {"slices": {}}},
     "spec.nodeGroups[0].driverConfig.slices: unknown field (personality nvidia reads hardware, nvidia, sriov)"),
    ({"personality": "nvidia", "driverConfig": {"nvidai": {}}},
     "spec.nodeGroups[0].driverConfig.nvidai: unknown field; did you mean 'nvidia'? (personality nvidia reads "
     "hardware, nvidia, sriov)"),
    ({"personality": "sriov", "driverConfig": {"nvidia": {}}},
     "spec.nodeGroups[0].driverConfig.nvidia: unknown field (personality sriov reads hardware, sriov)"),
    ({"personality": "nvidia", "driverConfig": {"nvidia": {"featureGates": {"DynamicMIG": "yes"}}}},
     "spec.nodeGroups[0].driverConfig.nvidia.featureGates.DynamicMIG: expected true or false, got 'yes'"),
    ({"personality": "nvidia", "driverConfig": {"nvidia": {"featureGates": {"DynamicMIG": True, "MPSSupport": True}}}},
     "spec.nodeGroups[0].driverConfig.nvidia.featureGates: feature gate DynamicMIG is currently mutually exclusive "
     "with MPSSupport"),
    ({"personality": "nvidia", "driverConfig": {"nvidia": {"migDevices": {0: ["1g.5gb"]}}}},
     "spec.nodeGroups[0].driverConfig.nvidia.migDevices[0][0]: expected \"<profile>@<start memory slice>\""),
    ({"personality": "nvidia", "driverConfig": {"nvidia": {"colour": "green"}}},
     "spec.nodeGroups[0].driverConfig.nvidia: unknown key(s) colour"),
    ({"personality": "sriov", "driverConfig": {"sriov": {"eswitchMode": "fast"}}},
     "spec.nodeGroups[0].driverConfig.sriov.eswitchMode: expected legacy or switchdev, got 'fast'"),
    # fidelity whole: whole GPUs and VFs only; NVIDIA's plugin publishes what its knobs say, so a knob
    # that partitions or shares GPUs contradicts it.
    ({"personality": "nvidia", "fidelity": "whole", "driverConfig": DYNAMIC},
     "spec.nodeGroups[0].driverConfig.nvidia.featureGates.DynamicMIG: fidelity whole publishes whole GPUs and VFs "
     "only, and this asks the nvidia personality for every MIG placement on counters; use fidelity: full, or drop "
     "nvidia.featureGates.DynamicMIG"),
    ({"personality": "nvidia", "fidelity": "whole", "driverConfig": {"nvidia": {"migDevices": {0: ["1g.5gb@0"]}}}},
     "spec.nodeGroups[0].driverConfig.nvidia.migDevices: fidelity whole publishes whole GPUs and VFs only, and this "
     "asks the nvidia personality for MIG devices instead of whole GPUs"),
    ({"personality": "nvidia", "fidelity": "whole", "driverConfig": {"nvidia": {"migEnabled": [1]}}},
     "spec.nodeGroups[0].driverConfig.nvidia.migEnabled: fidelity whole"),
    ({"personality": "nvidia", "fidelity": "whole", "driverConfig": {"nvidia": {
        "featureGates": {"ConsumableShares": True}, "consumableShares": "memory"}}},
     "spec.nodeGroups[0].driverConfig.nvidia.consumableShares: fidelity whole publishes whole GPUs and VFs only, and "
     "this asks the nvidia personality for GPUs shared by consumable capacity"),
    ({"labels": {"fake-dra.example.com/personality": "nvidia"}},
     "spec.nodeGroups[0].labels.fake-dra.example.com/personality: set by the fleet itself"),
])
def test_personality_mistakes_name_their_path(extra, message):
    with pytest.raises(InputError) as info:
        parse_fleet(fleet_doc(group("a", 1, "dgx-a100", **extra)), "lab.yaml")
    assert str(info.value).startswith("lab.yaml: " + message), str(info.value)


def test_whole_fidelity_accepts_nvidias_whole_devices():
    """MIG off (the default) and passthrough (a GPU's VFIO function is the whole GPU) stay whole."""
    for config in ({}, {"nvidia": {"featureGates": {"PassthroughSupport": True}}},
                   {"nvidia": {"featureGates": {"ConsumableShares": True}}}):  # the gate alone shares nothing
        assert parse_fleet(fleet_doc(group("a", 1, "h100", personality="nvidia", fidelity="whole",
                                           driverConfig=config))).groups[0].fidelity == "whole"


def test_a_fleet_file_with_a_personality_typo_through_the_cli(tmp_path, capsys):
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("a", 1, "dgx-a100", personality="nvdia"))))
    assert main(["fleet", "apply", "-f", str(path), "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert f"-f {path}: spec.nodeGroups[0].personality: unknown personality 'nvdia'; did you mean 'nvidia'?" in err
    assert "Traceback" not in err and not (tmp_path / "s").exists()


# ---- apply --------------------------------------------------------------------------------------

def test_an_nvidia_node_publishes_both_drivers_owned_by_its_node(store, apply):
    stats = apply(fleet_doc(group("a", 1, "dgx-a100"), group("nv", 2, "dgx-a100", personality="nvidia")))
    assert (stats.nodes_created, stats.slices_created) == (3, 6 + 2 * 2)
    for node in ("nv-0000", "nv-0001"):
        assert by_driver(store, node) == {GPU: [slice_name(0, 1, GPU, node)], SRIOV: [slice_name(0, 1, SRIOV, node)]}
        meta = store.get("nodes", None, node)["metadata"]
        assert meta["labels"][PERSONALITY_LABEL] == "nvidia"
        for s in store.list(SLICES):
            if s["spec"]["nodeName"] == node:
                assert s["metadata"]["ownerReferences"] == [
                    {"apiVersion": "v1", "kind": "Node", "name": node, "uid": meta["uid"], "controller": True}]
                assert s["spec"]["pool"] == {"name": node, "generation": 1, "resourceSliceCount": 1}
    assert store.get("nodes", None, "a-0000")["metadata"]["labels"][PERSONALITY_LABEL] == "fake-dra"
    assert set(by_driver(store, "a-0000")) == {DRIVER}
    gpus = {d["name"]: d for s in store.list(SLICES) if s["spec"]["driver"] == GPU for d in s["spec"]["devices"]}
    assert len({d["attributes"]["uuid"]["string"] for d in gpus.values()}) == len(gpus) // 2 * 2  # unique per node


def test_each_nvidia_node_is_what_run_publishes_for_it(tmp_path, store, apply, capsys):
    """The acceptance check of issue 20 per driver: `fake-dra publish --once --personality nvidia`
    (what `run` runs) for a fleet node, on its profile's tree, with its group's config, writes nothing."""
    apply(fleet_doc(group("dyn", 2, "h100", personality="nvidia", driverConfig=DYNAMIC),
                    group("mig", 1, "dgx-a100", personality="nvidia",
                          driverConfig={"nvidia": {"migDevices": {"all": ["3g.20gb@0", "3g.20gb@4"]}}}),
                    group("vf", 1, "no-gpu", personality="sriov", fidelity="whole")))
    for profile, node, config, personality in (
            ("h100", "dyn-0001", DYNAMIC, "nvidia"),
            ("dgx-a100", "mig-0000", {"nvidia": {"migDevices": {"all": ["3g.20gb@0", "3g.20gb@4"]}}}, "nvidia"),
            ("no-gpu", "vf-0000", {}, "sriov")):
        tree = tmp_path / profile
        assert main(["make-sysfs", "--profile", profile, "--out", str(tree)]) == 0
        (tmp_path / "config.yaml").write_text(json.dumps(config))
        before = store.current_resource_version()
        assert main(["publish", "--once", "--node-name", node, "--sysfs-root", str(tree), "--store", str(store.root),
                     "--personality", personality, "--driver-config", str(tmp_path / "config.yaml"), "-o", "json"]) == 0
        out = capsys.readouterr().out
        assert out.count('"writes": 0') == (2 if personality == "nvidia" else 1), (node, out)
        assert store.current_resource_version() == before


def test_a_second_apply_of_a_mixed_fleet_writes_nothing(store, apply):
    doc = fleet_doc(group("a", 2, "dgx-a100"), group("nv", 2, "dgx-a100", personality="nvidia", driverConfig=DYNAMIC),
                    group("s", 1, "no-gpu", personality="sriov"))
    first = apply(doc)
    before = store.current_resource_version()
    again = apply(doc)
    assert again.writes == 0 and store.current_resource_version() == before
    assert (again.slices, again.devices) == (first.slices, first.devices) == (2 * 6 + 2 * (1 + 8 + 1) + 1, again.devices)


def test_a_group_changing_personality_swaps_its_drivers_slices(store, apply):
    apply(fleet_doc(group("a", 2, "demo")))
    stats = apply(fleet_doc(group("a", 2, "demo", personality="nvidia")))
    assert stats.nodes_updated == 2 and stats.slices_deleted == 2 * 3 and stats.slices_created == 2 * 2
    assert set(by_driver(store, "a-0001")) == {GPU, SRIOV}
    stats = apply(fleet_doc(group("a", 2, "demo", personality="sriov")))
    assert stats.slices_deleted == 2 and set(by_driver(store, "a-0001")) == {SRIOV}
    apply(fleet_doc(group("a", 2, "demo")))
    assert set(by_driver(store, "a-0000")) == {DRIVER}
    assert store.get("nodes", None, "a-0000")["metadata"]["labels"][PERSONALITY_LABEL] == "fake-dra"


def test_a_stale_driver_slice_left_by_a_cut_short_change_is_removed(store, apply):
    """A pass cut short after the Node's update, before the old driver's slices went: the next pass
    still finds and removes them, whatever the Node's personality label says now."""
    doc = fleet_doc(group("a", 1, "demo", personality="nvidia"))
    apply(doc)
    node = store.get("nodes", None, "a-0000")
    store.create(SLICES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                          "metadata": {"name": "left-over", "ownerReferences": [
                              {"apiVersion": "v1", "kind": "Node", "name": "a-0000", "uid": node["metadata"]["uid"],
                               "controller": True}]},
                          "spec": {"driver": DRIVER, "nodeName": "a-0000", "pool": {"name": "a-0000", "generation": 1,
                                                                                     "resourceSliceCount": 1}}})
    stats = apply(doc)
    assert stats.slices_deleted == 1 and stats.writes == 1 and set(by_driver(store, "a-0000")) == {GPU, SRIOV}


def test_removal_and_delete_take_every_driver_and_nothing_else(store, target, apply):
    apply(fleet_doc(group("nv", 3, "demo", personality="nvidia"), group("a", 1, "demo")))
    store.create(SLICES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "real"},
                          "spec": {"driver": GPU, "nodeName": "real-node", "pool": {"name": "real-node", "generation": 1,
                                                                                  "resourceSliceCount": 1}}})
    stats = apply(fleet_doc(group("nv", 1, "demo", personality="nvidia"), group("a", 1, "demo")))
    assert (stats.nodes_deleted, stats.slices_deleted) == (2, 2 * 2)
    stats = delete_fleet(target, "lab", driver_name=DRIVER)
    assert (stats.nodes_deleted, stats.slices_deleted) == (2, 2 + 3)
    assert [s["metadata"]["name"] for s in store.list(SLICES)] == ["real"]


def test_a_group_its_personality_cannot_render_is_refused_before_any_write(store, apply):
    """A static MIG layout the GPU model does not offer is found when the group is rendered: the
    error names the group and nothing of any group is written."""
    doc = fleet_doc(group("ok", 1, "demo"), group("bad", 1, "dgx-a100", personality="nvidia",
                                                  driverConfig={"nvidia": {"migDevices": {0: ["7g.80gb@0"]}}}))
    with pytest.raises(InputError, match=r"^spec\.nodeGroups\[1\] \(bad: profile dgx-a100, personality nvidia\): "
                                         r"nvidia\.migDevices\[0\]\[0\]: NVIDIA A100-SXM4-40GB has no MIG profile '7g\.80gb'"):
        apply(doc)
    assert store.list("nodes") == [] and store.list(SLICES) == []


def test_the_fake_dra_driver_name_may_not_be_another_personalitys(apply, tmp_path, capsys):
    from driver.fleet.apply import apply_fleet
    from driver.fleet.targets import StoreFleetTarget
    from driver.store import ObjectStore

    with Templates(GPU) as templates, pytest.raises(InputError, match="--driver-name 'gpu.nvidia.com': in a fleet it "
                                                                      "names the fake-dra personality's driver, and "
                                                                      "personality nvidia publishes gpu.nvidia.com"):
        apply_fleet(StoreFleetTarget(ObjectStore(tmp_path / "s")), parse_fleet(fleet_doc(group("a", 1))),
                    driver_name=GPU, features=Features(), templates=templates)
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("a", 1))))
    for action in ("apply", "delete"):
        assert main(["fleet", action, "-f", str(path), "--store", str(tmp_path / "s"), "--driver-name", SRIOV]) == 2
        assert f"--driver-name '{SRIOV}': in a fleet it names the fake-dra personality's driver, and personalities " \
               f"nvidia and sriov publish {SRIOV}" in capsys.readouterr().err


# ---- the command: classes, dry run, run --------------------------------------------------------

def _file(tmp_path, *groups):
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(*groups)))
    return str(path)


def test_apply_seeds_the_classes_of_every_personality_used(tmp_path, capsys):
    store = str(tmp_path / "s")
    assert main(["fleet", "apply", "-f", _file(tmp_path, group("nv", 1, "demo", personality="nvidia")), "--store", store,
                 "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodesCreated"] == 1
    assert main(["get", "deviceclasses", "-o", "name", "--store", store]) == 0
    assert capsys.readouterr().out.split() == [f"deviceclass.resource.k8s.io/{n}" for n in (
        "gpu.nvidia.com", "mig.nvidia.com", SRIOV, "vfio.gpu.nvidia.com")]
    assert main(["fleet", "apply", "-f", _file(tmp_path, group("nv", 1, "demo", personality="nvidia"),
                                               group("a", 1, "demo")), "--store", store]) == 0
    capsys.readouterr()
    assert main(["get", "deviceclasses", "-o", "name", "--store", store]) == 0
    assert "deviceclass.resource.k8s.io/mig.fake-dra.example.com" in capsys.readouterr().out.split()


def test_dry_run_sizes_each_group_with_its_personality(tmp_path, capsys, store, apply):
    doc = (group("a", 2, "dgx-a100"), group("nv", 3, "dgx-a100", personality="nvidia", driverConfig=DYNAMIC),
           group("s", 1, "no-gpu", personality="sriov", fidelity="whole"))
    assert main(["fleet", "apply", "-f", _file(tmp_path, *doc), "--dry-run", "--store", str(tmp_path / "s"),
                 "-o", "json"]) == 0
    sizes = {g["name"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    assert [(g["personality"], g["fidelity"], g["nodes"], g["slices"], g["devices"]) for g in sizes.values()] == [
        ("fake-dra", "full", 2, 12, 2 * 256), ("nvidia", "full", 3, 3 * 10, 3 * (8 + 32)),  # A100, MIG off: whole GPUs
        ("sriov", "whole", 1, 1, 8)]
    # The bytes are those of the objects a publisher sends: here, of what apply stored, metadata trimmed.
    apply(fleet_doc(*doc))
    for name, node in (("nv", "nv-0002"), ("s", "s-0000")):
        sent = 0
        for s in store.list(SLICES):
            if s["spec"]["nodeName"] == node:
                owner = {**s["metadata"]["ownerReferences"][0], "uid": "00000000-0000-0000-0000-000000000000"}
                sent += len(json_text({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                       "metadata": {"name": s["metadata"]["name"], "ownerReferences": [owner]},
                                       "spec": s["spec"]}).encode())
        assert sizes[name]["bytesPerNode"] == sent, name
    assert main(["fleet", "apply", "-f", _file(tmp_path, *doc), "--dry-run", "--store", str(tmp_path / "s")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split() == ["GROUP", "PROFILE", "PERSONALITY", "FIDELITY", "NODES", "SLICES", "DEVICES", "SLICE",
                                "JSON", "PER", "NODE"]
    assert table[3].split()[:7] == ["nv", "dgx-a100", "nvidia", "full", "3", "30", "120"]


def test_dry_run_refuses_a_group_that_cannot_be_rendered(tmp_path, capsys):
    path = _file(tmp_path, group("bad", 1, "h100", personality="nvidia",
                                 driverConfig={"nvidia": {"migDevices": {9: ["1g.10gb@0"]}}}))  # 8 GPUs: 0-7
    for extra in (["--dry-run"], []):
        assert main(["fleet", "apply", "-f", path, "--store", str(tmp_path / "s"), *extra]) == 2
        err = capsys.readouterr().err
        assert "spec.nodeGroups[0] (bad: profile h100, personality nvidia): " in err and "Traceback" not in err
    assert ObjectStore(tmp_path / "s").count("nodes") == 0


def test_fleet_run_seeds_classes_and_keeps_the_last_good_fleet(store, target, tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("nv", 1, "demo", personality="nvidia"))))
    seen = []
    loop = FleetLoop(target, lambda: load_fleet(path.read_text(), str(path)), driver_name=DRIVER, features=Features(),
                     on_fleet=lambda fleet: seen.append(fleet.personalities()))
    try:
        assert loop.run_once().slices_created == 2 and seen == [["nvidia"]]
        path.write_text(json.dumps(fleet_doc(group("nv", 1, "demo", personality="nvidia",
                                                   driverConfig={"nvidia": {"migDevices": {0: ["9g.99gb@0"]}}}))))
        stats = loop.run_once()  # renders nothing new: the last good fleet is kept, nothing is written
        assert stats.writes == 0 and seen == [["nvidia"]] and set(by_driver(store, "nv-0000")) == {GPU, SRIOV}
        path.write_text(json.dumps(fleet_doc(group("nv", 1, "demo"))))
        assert loop.run_once().slices_deleted == 2 and seen == [["nvidia"], ["fake-dra"]]
        assert set(by_driver(store, "nv-0000")) == {DRIVER}
    finally:
        loop.close()
