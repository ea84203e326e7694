"""`fake-dra fault` across a fleet: DeviceTaintRules for a device, a GPU with its partitions, a node, a
node group or a seeded fraction; `--clear` removes what a target made; the scheduler honours them."""

from __future__ import annotations

import pytest

from driver.cli import main
from driver.fleet.faults import FAULT_LABEL, is_fault_rule

from .conftest import add, mig_template, pod


def fault(store, *argv) -> int:
    return main(["fault", "--store", str(store.root), *argv])


def rules(store):
    return {r["metadata"]["name"]: r for r in store.list("devicetaintrules")}


def test_a_gpu_fails_with_every_partition_and_the_scheduler_avoids_them(store, fleet, schedule, capsys):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    assert fault(store, "--node", "a100-0000", "--gpu", "gpu-0") == 0
    made = rules(store)
    slices = store.list("resourceslices")
    family = {d["name"] for s in slices for d in s["spec"].get("devices") or ()
              if d["name"] == "gpu-0" or (d.get("attributes") or {}).get("parentUUID", {}).get("string") ==
              next(x for s2 in slices for x in s2["spec"].get("devices") or () if x["name"] == "gpu-0")["attributes"]["uuid"]["string"]}
    assert {r["spec"]["deviceSelector"]["device"] for r in made.values()} == family and len(family) > 1
    assert all(r["spec"]["taint"]["effect"] == "NoExecute" and is_fault_rule(r) for r in made.values())
    add(store, mig_template(), *(pod(f"p{i}") for i in range(3)))
    report = schedule()
    assert len(report.scheduled) == 3
    used = {r["device"] for c in store.list("resourceclaims", all_namespaces=True)
            for r in c["status"]["allocation"]["devices"]["results"]}
    assert not used & family
    assert fault(store, "--node", "a100-0000", "--gpu", "gpu-0", "--clear") == 0
    assert rules(store) == {}


def test_node_group_and_all_clear(store, fleet, capsys):
    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"}, {"name": "h100", "count": 1, "profile": "h100"})
    assert fault(store, "--node-group", "a100", "--effect", "NoSchedule") == 0
    made = rules(store)
    assert {r["metadata"]["labels"]["fake-dra.example.com/fault-node"] for r in made.values()} == {"a100-0000", "a100-0001"}
    assert all("device" not in r["spec"]["deviceSelector"] for r in made.values())  # whole pools
    assert fault(store, "--clear", "--all") == 0
    assert rules(store) == {}


def test_fraction_is_seeded(store, fleet, capsys):
    fleet({"name": "a100", "count": 4, "profile": "dgx-a100"})
    assert fault(store, "--fraction", "0.1", "--seed", "7") == 0
    first = set(rules(store))
    assert fault(store, "--clear", "--all") == 0
    assert fault(store, "--fraction", "0.1", "--seed", "7") == 0
    assert set(rules(store)) == first and first
    assert all(r["metadata"]["labels"][FAULT_LABEL] == "true" for r in rules(store).values())


@pytest.mark.parametrize("argv, message", [
    (["--node", "nope"], "node nope: no ResourceSlice names this node"),
    (["--node-group", "nope"], "--node-group nope: no Node carries"),
    (["--fraction", "0"], "--fraction: must be in (0, 1]"),
    (["--node", "a100-0000", "--device", "no-such-device"], "no ResourceSlice of the node publishes a device named"),
    (["--node", "a100-0000", "--node-group", "a100"], "--node-group: not with --node"),
    (["--all"], "--all: only with --clear"),
])
def test_bad_targets_are_named(store, fleet, capsys, argv, message):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    assert fault(store, *argv) == 2
    assert message in capsys.readouterr().err
    assert rules(store) == {}
