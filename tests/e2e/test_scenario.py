"""Scenario files: the bundled ones load, and every malformed input is rejected with a clear message."""

from __future__ import annotations

import pytest
import yaml

from driver.e2e.scenario import load_file, load_scenarios, parse_scenario
from driver.errors import InputError

REQUIRED = {
    "mig-then-vgpu", "vgpu-then-mig", "two-mig-share-gpu", "mig-packing", "full-gpu-vs-partition",
    "timeshare-co-allocated", "gate-off-single-mode", "skewed-scheduler", "vf-bandwidth",
    "podgroup-shared-claim", "plugin-restart", "device-fault",
}


def _base(**over) -> dict:
    doc = {
        "name": "s1",
        "reason": "one line",
        "steps": [
            {"action": "claim", "name": "c1", "requests": [{"name": "gpu", "class": "mig"}]},
            {"action": "pod", "name": "p1", "claims": ["c1"], "expect": {"scheduled": True}},
        ],
    }
    doc.update(over)
    return doc


def test_bundled_scenarios_cover_the_issue_list() -> None:
    scenarios = load_scenarios()
    assert REQUIRED <= {s.name for s in scenarios}
    for s in scenarios:
        assert s.reason and "\n" not in s.reason
        assert any(step.expect for step in s.steps), f"{s.name} checks nothing"


def test_gate_off_scenario_turns_the_gate_off() -> None:
    (s,) = load_scenarios(names=["gate-off-single-mode"])
    assert s.features.compatibility_groups is False


def test_valid_minimal_scenario() -> None:
    s = parse_scenario(_base())
    assert [st.label for st in s.steps] == ["1. claim c1", "2. pod p1"]
    assert s.profile == "demo" and s.kind is True


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_base(reason=""), "one-line `reason`"),
        (_base(reason="two\nlines"), "one-line `reason`"),
        (_base(name="Bad_Name"), "must be a DNS label"),
        (_base(name="a" * 64), "must be a DNS label"),
        (_base(steps=[]), "non-empty list of steps"),
        (_base(extra=1), "unknown field extra"),
        (_base(features={"NoSuchGate": True}), "unknown feature gate 'NoSuchGate'"),
        (_base(steps=[{"action": "explode"}]), "unknown action 'explode'"),
        (_base(steps=[{"action": "claim", "name": "c"}]), "needs requests"),
        (_base(steps=[{"action": "delete-pod", "name": "p", "bogus": 1}]), "does not take bogus"),
        (_base(steps=[{"action": "claim", "name": "c", "requests": [{"name": "g"}]}]), "needs a class"),
        (_base(steps=[{"action": "pod", "name": "p", "claims": ["nope"]}]), "no earlier step creates"),
        (_base(steps=[{"action": "pod", "name": "p"}]), "needs claims or a podgroup"),
        (_base(steps=[{"action": "observe", "expect": {"schedueld": True}}]), "unknown expectation schedueld"),
        (_base(steps=[{"action": "restart-plugin", "signal": "HUP"}]), "signal must be one of"),
        (_base(steps=[{"action": "observe", "expect": {"devices": {"colour": "red"}}}]), "expect.devices takes only"),
        (_base(steps=[{"action": "observe", "expect": {"metadata": {"file": 1}}}]), "expect.metadata takes only"),
        (_base(steps=[{"action": "observe", "expect": {"metadata": 1}}]), "expect.metadata takes only"),
        (_base(gpus=-1), "s1 (x.yaml): gpus must be a non-negative integer (the profile's first N GPUs), got -1"),
        (_base(gpus=True), "s1 (x.yaml): gpus must be a non-negative integer (the profile's first N GPUs), got True"),
        (_base(gpus="2"), "s1 (x.yaml): gpus must be a non-negative integer (the profile's first N GPUs), got '2'"),
        (_base(driverConfig=["nvidia"]), "s1 (x.yaml): driverConfig must be a mapping"),
        (_base(nodes=[{"name": "a"}], gpus=1), "s1 (x.yaml): personality, driverConfig and gpus are for single-node"),
        (_base(nodes=[{"name": "a"}], personality="nvidia"), "personality, driverConfig and gpus are for single-node"),
        (_base(nodes=[{"name": "a"}], driverConfig={"nvidia": {}}), "driverConfig and gpus are for single-node"),
        (_base(nodes=[{"name": "a"}, "b"]), "s1 (x.yaml) nodes[1]: must be a mapping with name, profile, plugin"),
    ],
)
def test_bad_scenarios_are_rejected_with_the_field_named(doc: dict, message: str) -> None:
    with pytest.raises(InputError, match="scenario") as err:
        parse_scenario(doc, "x.yaml")
    assert message in str(err.value)


def test_bad_yaml_file_names_the_path(tmp_path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(InputError, match="broken.yaml: invalid YAML"):
        load_file(bad)


def test_duplicate_names_and_unknown_selection(tmp_path) -> None:
    for n in ("a", "b"):
        (tmp_path / f"{n}.yaml").write_text(yaml.safe_dump(_base()))
    with pytest.raises(InputError, match="is used by both"):
        load_scenarios(tmp_path)
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(_base(name="s2")))
    assert [s.name for s in load_scenarios(tmp_path, ["s2"])] == ["s2"]
    with pytest.raises(InputError, match="unknown scenario nope"):
        load_scenarios(tmp_path, ["nope"])
    with pytest.raises(InputError, match="does not exist"):
        load_scenarios(tmp_path / "missing")


def _nodes_doc(nodes, steps=None) -> dict:
    return {"name": "multi", "reason": "two nodes", "nodes": nodes, "steps": steps or [
        {"action": "claim", "name": "c", "requests": [{"name": "r", "class": "gpu"}]},
        {"action": "pod", "name": "p", "claims": ["c"], "expect": {"node": "a"}}]}


def test_a_multi_node_scenario_reads_its_nodes() -> None:
    s = parse_scenario(_nodes_doc([{"name": "a", "profile": "dgx-a100"}, {"name": "b", "plugin": False}]))
    assert [(n.name, n.profile, n.plugin) for n in s.nodes] == [("a", "dgx-a100", True), ("b", "demo", False)]


@pytest.mark.parametrize("nodes, steps, message", [
    ("a", None, "nodes must be a non-empty list"),
    ([{"name": "a", "gpus": 2}], None, "nodes[0]: does not take gpus"),
    ([{"name": "a"}, {"name": "a"}], None, "node 'a' is listed twice"),
    ([{"name": "a", "profile": "dgx-a10"}], None, "unknown sysfs profile 'dgx-a10'"),
    ([{"name": "a", "plugin": "no"}], None, "plugin must be true or false"),
    ([{"name": "a"}], [{"action": "delete-node", "name": "z"}], "node 'z' is not one of the scenario's nodes"),
    ([{"name": "b"}], None, "node 'a' is not one of the scenario's nodes"),
    ([{"name": "a"}], [{"action": "restart-plugin"}], "action restart-plugin is for single-node scenarios"),
])
def test_bad_nodes_are_rejected(nodes, steps, message) -> None:
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(_nodes_doc(nodes, steps))


def test_node_expectations_need_nodes() -> None:
    doc = _nodes_doc([{"name": "a"}])
    del doc["nodes"]
    with pytest.raises(InputError, match="delete-node and the node expectations need `nodes:`"):
        parse_scenario(doc)
