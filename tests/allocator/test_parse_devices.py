"""parse_devices reads the usual device in one pass and everything else through the full parse:
both must give the same parsed device, and the full parse must still explain bad input."""

from __future__ import annotations

from fractions import Fraction

import pytest

from driver.allocator.devices import parse_device, parse_devices
from driver.errors import InputError


def _spec(*devices: dict) -> dict:
    return {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": list(devices)}


def _facts(dev) -> tuple:
    return (dev.key, dict(dev.capacity), [(c.counter_set, dict(c.static), dict(c.value_from), c.groups) for c in dev.consumes],
            dev.declares_groups, dev.allow_multiple, dev.taints, dev.binding_conditions, dev.binds_to_node)


USUAL = {"name": "a", "attributes": {"x": {"int": 1}}, "capacity": {"memory": {"value": "5Gi"}},
         "consumesCounters": [{"counterSet": "gpu", "counters": {"memory": {"value": "5Gi"}, "slice-0": {"value": "1"}}}]}


def test_usual_device_read_twice_the_same() -> None:
    first = parse_devices(_spec(USUAL), "s")[0]  # texts new to the process: the full parse
    second = parse_devices(_spec(USUAL), "s")[0]  # texts known: the one-pass read
    assert _facts(first) == _facts(second)
    assert second.capacity["memory"].value == 5 * 2**30 and second.capacity["memory"].text == "5Gi"
    assert second.consumes[0].static == {"memory": 5 * 2**30, "slice-0": 1}
    assert not second.declares_groups


@pytest.mark.parametrize("device, check", [
    # non-string names are read as strings, as the full parse reads them
    ({"name": "b", "capacity": {7: {"value": "1"}}}, lambda d: set(d.capacity) == {"7"}),
    ({"name": "b", "consumesCounters": [{"counterSet": "gpu", "counters": {7: {"value": "1"}}}]},
     lambda d: d.consumes[0].static == {"7": 1}),
    ({"name": "b", "consumesCounters": [{"counterSet": "gpu", "compatibilityGroups": [3], "counters": {"m": {"value": "1"}}}]},
     lambda d: d.consumes[0].groups == frozenset({"3"}) and d.declares_groups),
    # policies, valueFrom and fractions take the full parse
    ({"name": "b", "capacity": {"bw": {"value": "10G", "requestPolicy": {"default": "1G"}}}},
     lambda d: d.capacity["bw"].policy is not None and d.capacity["bw"].policy.default == 10**9),
    ({"name": "b", "capacity": {"bw": {"value": "10G"}},
      "consumesCounters": [{"counterSet": "nic", "counters": {"bw": {"valueFrom": {"capacityName": "bw"}}}}]},
     lambda d: d.consumes[0].value_from == {"bw": "bw"} and d.consumes[0].static == {}),
    ({"name": "b", "capacity": {"m": {"value": "500m"}}}, lambda d: d.capacity["m"].value == Fraction(1, 2)),
    # fields beyond the usual four are read
    ({"name": "b", "allowMultipleAllocations": True, "bindsToNode": True, "bindingConditions": ["ready"],
      "taints": [{"key": "k", "effect": "NoSchedule"}]},
     lambda d: d.allow_multiple and d.binds_to_node and d.binding_conditions == ("ready",) and len(d.taints) == 1),
])
def test_other_shapes_read_by_the_full_parse(device: dict, check) -> None:
    for _ in range(2):  # the second time every text is known to the process
        dev = parse_devices(_spec(USUAL, device), "s")[1]
        assert check(dev)
        assert _facts(dev) == _facts(parse_device(_spec(USUAL, device), 1, "s"))


@pytest.mark.parametrize("device, message", [
    ({"name": "b", "capacity": {"m": {"value": "5Gi", "extra": 1}}}, None),  # an unknown field: the full parse decides
    ({"name": "b", "capacity": {"m": {}}}, "spec.devices[1].capacity[m].value: required"),
    ({"name": "b", "capacity": {"m": {"value": "five"}}}, "spec.devices[1].capacity[m].value"),
    ({"name": "b", "consumesCounters": [{"counterSet": "gpu", "counters": {"m": {"value": "5Gi", "valueFrom": {"capacityName": "m"}}}}]},
     "spec.devices[1].consumesCounters[0].counters[m]: set exactly one of value and valueFrom"),
    ({"name": "b", "consumesCounters": [{"counterSet": "", "counters": {"m": {"value": "5Gi"}}}]},
     "spec.devices[1].consumesCounters[0].counterSet: required"),
    ({"name": "b", "consumesCounters": [{"counterSet": "gpu", "counters": {"m": None}}]},
     "spec.devices[1].consumesCounters[0].counters[m]: needs value or valueFrom"),
])
def test_bad_shapes_explained_even_when_the_texts_are_known(device: dict, message: str | None) -> None:
    parse_devices(_spec(USUAL), "s")  # make every text of USUAL known
    if message is None:
        assert parse_devices(_spec(USUAL, device), "s")[1].capacity["m"].value == 5 * 2**30
        return
    with pytest.raises(InputError, match="ResourceSlice s: " + message.replace("[", r"\[").replace("]", r"\]")):
        parse_devices(_spec(USUAL, device), "s")
