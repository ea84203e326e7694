"""The fleet file: read strictly, with the path of every mistake and the field that was meant."""

from __future__ import annotations

import pytest

from driver.errors import InputError
from driver.fleet.spec import load_fleet, parse_fleet
from fleet.conftest import fleet_doc, group


def test_a_valid_fleet_and_its_node_names():
    fleet = parse_fleet(fleet_doc(group("a100", 3, "dgx-a100", labels={"rack": "r1"}),
                                  group("nics", 2, "no-gpu", fidelity="whole", driverConfig={"slices": {"singleMode": "full"}})))
    assert fleet.name == "lab" and fleet.size == 5
    assert [n for n, _ in fleet.nodes()] == ["a100-0000", "a100-0001", "a100-0002", "nics-0000", "nics-0001"]
    a100, nics = fleet.groups
    assert a100.fidelity == "full" and a100.labels == (("rack", "r1"),)
    assert nics.fidelity == "whole" and nics.config() == {"slices": {"singleMode": "full"}}


def test_names_stay_when_the_count_changes_and_grow_past_four_digits():
    small = parse_fleet(fleet_doc(group("g", 2))).groups[0].node_names()
    big = parse_fleet(fleet_doc(group("g", 10_001))).groups[0].node_names()
    assert big[:2] == small and big[-1] == "g-10000"


@pytest.mark.parametrize("doc, message", [
    ({**fleet_doc(), "spec": {"nodeGroups": [], "nodegroups": []}}, "spec.nodegroups: unknown field; did you mean 'nodeGroups'?"),
    (fleet_doc(group("a", 1, lables={"x": "y"})), "spec.nodeGroups[0].lables: unknown field; did you mean 'labels'?"),
    (fleet_doc(group("a", 1), group("b", 1, profle="demo")), "spec.nodeGroups[1].profle: unknown field; did you mean 'profile'?"),
    ({**fleet_doc(), "status": {}}, "status: unknown field"),
    ({**fleet_doc(), "metadata": {"name": "lab", "labels": {}}}, "metadata.labels: unknown field"),
    ({**fleet_doc(), "apiVersion": "v1"}, "apiVersion: expected fake-dra.example.com/v1alpha1, got 'v1'"),
    ({**fleet_doc(), "kind": "Fleets"}, "kind: expected Fleet"),
    ({**fleet_doc(), "metadata": {}}, "metadata.name: required"),
    ({**fleet_doc(), "metadata": {"name": "Lab"}}, "metadata.name: 'Lab' is not a DNS label"),
    ({**fleet_doc(), "spec": {}}, "spec.nodeGroups: required"),
    ({**fleet_doc(), "spec": {"nodeGroups": {"a": 1}}}, "spec.nodeGroups: must be a list"),
    (fleet_doc(group("a", -1)), "spec.nodeGroups[0].count: must be between 0 and 100000, got -1"),
    (fleet_doc(group("a", "3")), "spec.nodeGroups[0].count: expected a whole number, got '3'"),
    (fleet_doc(group("a", True)), "spec.nodeGroups[0].count: expected a whole number"),
    (fleet_doc({"name": "a", "profile": "demo"}), "spec.nodeGroups[0].count: required"),
    (fleet_doc({"name": "a", "count": 1}), "spec.nodeGroups[0].profile: required"),
    (fleet_doc(group("a", 1, "dgx-a10")), "spec.nodeGroups[0].profile: unknown profile 'dgx-a10'; did you mean 'dgx-a100'?"),
    (fleet_doc(group("a", 1, fidelity="partial")), "spec.nodeGroups[0].fidelity: expected one of full, whole"),
    (fleet_doc(group("A_1", 1)), "spec.nodeGroups[0].name: 'A_1' is not a DNS label"),
    (fleet_doc(group("a" * 58, 1)), "is not a DNS label of at most 57 characters"),
    (fleet_doc(group("a", 1), group("a", 2)), "spec.nodeGroups[1].name: 'a' already names spec.nodeGroups[0]"),
    (fleet_doc(group("a", 1, labels={"type": "gpu"})), "spec.nodeGroups[0].labels.type: set by the fleet itself"),
    (fleet_doc(group("a", 1, labels={"bad key!": "x"})), "spec.nodeGroups[0].labels: 'bad key!' is not a valid label key"),
    (fleet_doc(group("a", 1, labels={f"l{i}": "x" for i in range(60_000)})),
     "spec.nodeGroups[0].labels: 60,000 labels; their keys alone are 408,890 bytes of the Node's annotations, and "
     "kube-apiserver takes at most 262,144 bytes of annotations per object"),
    (fleet_doc(group("a", 1, labels={"rack": 3})), "spec.nodeGroups[0].labels.rack: 3 is not a valid label value"),
    (fleet_doc(group("a", 1, driverConfig={"slice": {}})), "spec.nodeGroups[0].driverConfig.slice: unknown field; did you mean 'slices'?"),
    (fleet_doc(group("a", 1, driverConfig={"slices": {"singleMode": "maybe"}})), "spec.nodeGroups[0].driverConfig.slices.singleMode"),
    (fleet_doc(group("a", 1, driverConfig={"hardware": {"gpu": {}}})), "spec.nodeGroups[0].driverConfig.hardware: unknown section"),
    (fleet_doc(group("a", 60_000), group("b", 60_000)), "spec.nodeGroups: 120000 nodes in all; at most 100000"),
    ("a string", "expected a Fleet object"),
])
def test_mistakes_name_their_path(doc, message):
    with pytest.raises(InputError) as info:
        parse_fleet(doc, "lab.yaml")
    assert str(info.value).startswith("lab.yaml: ")
    assert message in str(info.value)


def test_the_file_holds_exactly_one_fleet():
    with pytest.raises(InputError, match="lab.yaml: expected one Fleet document, found 2"):
        load_fleet("apiVersion: x\n---\napiVersion: y\n", "lab.yaml")
    with pytest.raises(InputError, match="lab.yaml: expected one Fleet document, found 0"):
        load_fleet("", "lab.yaml")
    with pytest.raises(InputError, match="lab.yaml: invalid YAML"):
        load_fleet("spec: [", "lab.yaml")
