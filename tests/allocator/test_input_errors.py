"""Every input check of the allocator names the object and field; one test per error path."""

from __future__ import annotations

import copy

import pytest

from driver.allocator import Allocator, allocate_claims
from driver.errors import AllocationError, InputError
from driver.features import Features

CLASS = {"kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {}}


def slice_with(**spec):
    base = {"driver": "d.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "nodeName": "n"}
    base.update(spec)
    return {"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": base}


def claim_with(devices):
    return {"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}}


GOOD_REQUEST = {"name": "r", "exactly": {"deviceClassName": "c"}}

SLICE_ERRORS = [
    (dict(devices=[{"attributes": {}}]), "ResourceSlice s: spec.devices[0].name: required"),
    (dict(devices=[{"name": "x", "capacity": {"m": {}}}]), "spec.devices[0].capacity[m].value: required"),
    (dict(devices=[{"name": "x", "capacity": {"m": {"value": "1", "requestPolicy": {"default": "z"}}}}]),
     "spec.devices[0].capacity[m].requestPolicy.default: invalid quantity"),
    (dict(devices=[{"name": "x", "capacity": {"m": {"value": "1", "requestPolicy": {"validValues": ["1", "?"]}}}}]),
     "requestPolicy.validValues[1]: invalid quantity"),
    (dict(devices=[{"name": "x", "consumesCounters": [{"counters": {}}]}]), "spec.devices[0].consumesCounters[0].counterSet: required"),
    (dict(devices=[{"name": "x", "consumesCounters": [{"counterSet": "cs", "counters": {"u": {}}}]}]),
     "consumesCounters[0].counters[u]: needs value or valueFrom"),
    (dict(devices=[{"name": "x", "consumesCounters": [{"counterSet": "cs", "counters": {"u": {"value": "1", "valueFrom": {"capacityName": "b"}}}}]}]),
     "consumesCounters[0].counters[u]: set exactly one of value and valueFrom"),
    (dict(devices=[{"name": "x", "bindingConditions": "Attached"}]),
     "ResourceSlice s: spec.devices[0].bindingConditions: must be a list of strings"),
    (dict(devices=[{"name": "x", "bindingFailureConditions": [1]}]),
     "ResourceSlice s: spec.devices[0].bindingFailureConditions: must be a list of strings"),
    (dict(devices="nope"), "ResourceSlice s: spec.devices: must be a list"),
    (dict(driver=""), "ResourceSlice s: spec.driver: required"),
    (dict(pool={"name": "p", "generation": -1, "resourceSliceCount": 1}), "spec.pool.generation: must be a non-negative integer"),
    (dict(pool={"name": "p", "generation": 1, "resourceSliceCount": "2"}), "spec.pool.resourceSliceCount: must be a non-negative integer"),
]


@pytest.mark.parametrize("spec,message", SLICE_ERRORS)
def test_slice_errors(spec, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Allocator(slices=[slice_with(**spec)], classes=[CLASS], node="n")


def test_counter_set_errors():
    bad_name = slice_with(sharedCounters=[{"counters": {}}])
    del bad_name["spec"]["nodeName"]
    with pytest.raises(InputError, match=r"ResourceSlice s: spec.sharedCounters\[0\].name: required"):
        Allocator(slices=[bad_name], classes=[CLASS], node="n")
    no_value = slice_with(sharedCounters=[{"name": "cs", "counters": {"u": {"requestPolicy": {}}}}])
    with pytest.raises(InputError, match=r"spec.sharedCounters\[0\].counters\[u\].value: required"):
        Allocator(slices=[no_value], classes=[CLASS], node="n")


def test_slice_without_spec():
    with pytest.raises(InputError, match="ResourceSlice s: spec: required"):
        Allocator(slices=[{"metadata": {"name": "s"}, "spec": None}], classes=[CLASS], node="n")


CLAIM_ERRORS = [
    ({"requests": "x"}, "ResourceClaim ns/c: spec.devices.requests: must be a list"),
    ({"requests": [{"exactly": {"deviceClassName": "c"}}]}, "spec.devices.requests[0].name: required"),
    ({"requests": [{"name": "r"}]}, "spec.devices.requests[0]: set exactly one of exactly and firstAvailable"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}, "firstAvailable": []}]}, "set exactly one of exactly and firstAvailable"),
    ({"requests": [{"name": "r", "firstAvailable": []}]}, "spec.devices.requests[0].firstAvailable: must be a non-empty list"),
    ({"requests": [{"name": "r", "firstAvailable": [{"deviceClassName": "c"}]}]}, "spec.devices.requests[0].firstAvailable[0].name: required"),
    ({"requests": [{"name": "r", "exactly": "c"}]}, "spec.devices.requests[0].exactly: must be an object"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"other": {}}]}}]},
     "spec.devices.requests[0].exactly.selectors[0].cel.expression: required (only CEL selectors are supported"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "capacity": {"requests": ["x"]}}}]},
     "spec.devices.requests[0].exactly.capacity.requests: must be a map"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "tolerations": [{"operator": "Maybe"}]}}]},
     "spec.devices.requests[0].exactly.tolerations[0].operator: must be Equal or Exists"),
    ({"requests": [GOOD_REQUEST], "constraints": [{"matchAttribute": "a/b", "distinctAttribute": "a/c"}]},
     "spec.devices.constraints[0]: set exactly one of matchAttribute and distinctAttribute"),
]


@pytest.mark.parametrize("devices,message", CLAIM_ERRORS)
def test_claim_errors(devices, message):
    with pytest.raises(InputError) as err:
        allocate_claims([CLASS, claim_with(devices)], node="n")
    assert message in str(err.value)


def test_class_selector_must_be_cel():
    cls = {"kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {"selectors": [{}]}}
    with pytest.raises(InputError, match=r"DeviceClass c: spec.selectors\[0\].cel.expression: required"):
        allocate_claims([cls], node="n")


def test_parsed_class_without_name_given_to_the_allocator():
    with pytest.raises(InputError, match="DeviceClass: metadata.name: required"):
        Allocator(slices=[], classes=[{"kind": "DeviceClass", "metadata": {}}], node="n")


def test_class_without_name():
    with pytest.raises(InputError, match="DeviceClass \\(object #1\\): metadata.name: required"):
        allocate_claims([{"kind": "DeviceClass", "metadata": {}}], node="n")


def test_existing_claim_with_bad_consumed_capacity():
    old = claim_with({"requests": [GOOD_REQUEST]})
    old["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "d", "pool": "p", "device": "x", "shareID": "u", "consumedCapacity": {"bw": "lots"}}]}}}
    with pytest.raises(InputError, match=r"ResourceClaim ns/c: status.allocation.devices.results\[0\].consumedCapacity\[bw\]"):
        allocate_claims([CLASS, old], node="n")


def test_existing_claim_with_bad_consumed_counters():
    devices = [{"name": "x", "consumesCounters": [{"counterSet": "cs", "counters": {"u": {"value": "1"}}}]}]
    counters = slice_with(sharedCounters=[{"name": "cs", "counters": {"u": {"value": "5"}}}])
    counters["metadata"]["name"] = "s0"
    del counters["spec"]["nodeName"]
    devs = slice_with(devices=devices)
    for s in (counters, devs):
        s["spec"]["pool"]["resourceSliceCount"] = 2
    old = claim_with({"requests": [GOOD_REQUEST]})
    old["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "d.example.com", "pool": "p", "device": "x", "consumedCounters": [{"counters": {}}]}]}}}
    with pytest.raises(InputError, match=r"results\[0\].consumedCounters\[0\].counterSet: required"):
        allocate_claims([CLASS, counters, devs, old], node="n", features=Features.all_on())


def test_all_mode_on_invalid_pool_is_an_error():
    dup = slice_with(devices=[{"name": "x"}, {"name": "x"}])
    claim = claim_with({"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}]})
    outcome = allocate_claims([CLASS, dup, claim], node="n")
    assert "asks for all devices, but resource pool d.example.com/p is currently invalid: duplicate device name x" in outcome.failed[0].reason


def test_all_mode_with_a_constraint_that_cannot_hold_is_an_error():
    devs = slice_with(devices=[{"name": "x", "attributes": {"m": {"string": "a"}}}, {"name": "y", "attributes": {"m": {"string": "b"}}}])
    claim = claim_with({"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}],
                        "constraints": [{"matchAttribute": "d.example.com/m"}]})
    outcome = allocate_claims([CLASS, devs, claim], node="n")
    assert "cannot add device d.example.com/p/y because a claim constraint would not be satisfied" in outcome.failed[0].reason


def test_negative_capacity_aborts_the_claim():
    devs = slice_with(devices=[{"name": "x", "capacity": {"m": {"value": "1", "requestPolicy": {"default": "-1"}}}}])
    claim = claim_with({"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "capacity": {"requests": {}}}}]})
    outcome = allocate_claims([CLASS, devs, claim], node="n")
    assert "capacity value is negative" in outcome.failed[0].reason


def test_input_objects_are_not_modified():
    devs = slice_with(devices=[{"name": "x"}])
    claim = claim_with({"requests": [GOOD_REQUEST]})
    before = copy.deepcopy([devs, claim])
    outcome = allocate_claims([CLASS, devs, claim], node="n")
    assert outcome.ok and [devs, claim] == before
    with pytest.raises(AllocationError):
        Allocator(slices=[devs], classes=[CLASS], node="n").allocate([claim, claim_with({"requests": [GOOD_REQUEST]})])


@pytest.mark.parametrize(
    "value,message",
    [({"version": "not-a-version"}, "invalid semantic version"), ({"weird": 1}, "unsupported attribute value"),
     ({"versions": ["1.0.0", "1.x"]}, r"invalid semantic version in \['1.0.0', '1.x'\]")],
)
def test_bad_attribute_value_is_input_error_naming_slice_device_and_attribute(value, message):
    bad = slice_with(devices=[{"name": "x", "attributes": {"fw": value}}])
    claim = claim_with({"requests": [GOOD_REQUEST]})
    with pytest.raises(InputError, match=rf"ResourceSlice s: device x: attributes\[fw\]: {message}"):
        allocate_claims([CLASS, bad, claim], node="n")
