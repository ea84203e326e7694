"""check_pool really finds each apiserver rule violation (so 'check_pool(...) == []' means something)."""

from __future__ import annotations

import copy

import pytest
from builders import demo_like

from driver.features import Features
from driver.slices import check_pool, render_pool

POOL = render_pool(demo_like(), Features.all_on(), node_name="node-1", driver_name="fake-dra.example.com")


def specs():
    return copy.deepcopy(list(POOL.slices))


def first_device(s):
    return s[1]["devices"][0]


def mutate_too_many_devices(s):
    s[1]["devices"].extend(s[2]["devices"][:1])
    del s[2]["devices"][0]


def mutate_nine_counter_sets(s):
    s[0]["sharedCounters"] = [dict(s[0]["sharedCounters"][0], name=f"set-{k}") for k in range(9)]


def mutate_33_counters(s):
    s[0]["sharedCounters"][0]["counters"].update({f"c{k}": {"value": "1"} for k in range(33)})


def mutate_three_groups(s):
    first_device(s)["consumesCounters"][0]["compatibilityGroups"] = ["a", "b", "c"]


def mutate_group_not_dns(s):
    first_device(s)["consumesCounters"][0]["compatibilityGroups"] = ["Mig"]


# The 1.37 API (staging/src/k8s.io/api/resource/v1/types.go, DeviceCounterConsumption):
# +k8s:maxItems=2, +k8s:unique=set, +k8s:eachVal=+k8s:format=k8s-short-name (a DNS label, <= 63).
def mutate_duplicate_groups(s):
    first_device(s)["consumesCounters"][0]["compatibilityGroups"] = ["mig", "mig"]


def mutate_long_group(s):
    first_device(s)["consumesCounters"][0]["compatibilityGroups"] = ["g" * 64]


def mutate_three_consumptions(s):
    dev = first_device(s)
    dev["consumesCounters"] = [dict(dev["consumesCounters"][0], counterSet=f"x{k}") for k in range(3)]


def mutate_device_name(s):
    first_device(s)["name"] = "gpu-0-mig-1g.5gb-0"


def mutate_counter_name(s):
    s[0]["sharedCounters"][0]["counters"]["memorySlice0"] = {"value": "1"}


def mutate_long_string(s):
    first_device(s)["attributes"]["productName"] = {"string": "x" * 65}


def mutate_33_attributes(s):
    first_device(s)["attributes"].update({f"a{k}": {"int": k} for k in range(32)})


def mutate_both_in_one_slice(s):
    s[1]["sharedCounters"] = s[0]["sharedCounters"]


def mutate_two_node_selectors(s):
    s[1]["allNodes"] = True


def mutate_dangling_counter_set(s):
    first_device(s)["consumesCounters"][0]["counterSet"] = "gpu-9-counters"


def mutate_unknown_counter(s):
    first_device(s)["consumesCounters"][0]["counters"]["bogus"] = {"value": "1"}


def mutate_duplicate_device(s):
    s[2]["devices"].append(copy.deepcopy(first_device(s)))


def mutate_policy_on_exclusive(s):
    first_device(s)["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi"}


def mutate_value_and_value_from(s):
    counters = first_device(s)["consumesCounters"][0]["counters"]
    counters["memory"]["valueFrom"] = {"capacityName": "memory"}


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (mutate_too_many_devices, "65 devices > 64"),
        (mutate_nine_counter_sets, "9 counter sets > 8"),
        (mutate_33_counters, "counters (1..32)"),
        (mutate_three_groups, "at most 2"),
        (mutate_group_not_dns, "group 'Mig' is not a DNS label"),
        (mutate_duplicate_groups, "(at most 2, unique)"),
        (mutate_long_group, f"group '{'g' * 64}' is not a DNS label"),
        (mutate_three_consumptions, "3 consumesCounters entries > 2"),
        (mutate_device_name, "device name is not a DNS label"),
        (mutate_counter_name, "'memorySlice0' is not a DNS label"),
        (mutate_long_string, "longer than 64"),
        (mutate_33_attributes, "attributes+capacities > 32"),
        (mutate_both_in_one_slice, "devices and sharedCounters in one slice"),
        (mutate_two_node_selectors, "exactly one of nodeName"),
        (mutate_dangling_counter_set, "unknown counter set gpu-9-counters"),
        (mutate_unknown_counter, "unknown counters ['bogus']"),
        (mutate_duplicate_device, "defined twice"),
        (mutate_policy_on_exclusive, "allowMultipleAllocations is not true"),
        (mutate_value_and_value_from, "exactly one of value or valueFrom"),
    ],
)
def test_each_violation_is_reported(mutate, needle):
    s = specs()
    assert check_pool(s) == []
    mutate(s)
    problems = check_pool(s)
    assert any(needle in p for p in problems), problems


def counter_policy(s):
    return s[0]["sharedCounters"][2]["counters"]["bandwidth"]["requestPolicy"]


def capacity_policy(s):
    return s[2]["devices"][next(i for i, d in enumerate(s[2]["devices"]) if d.get("allowMultipleAllocations"))][
        "capacity"]["memory"]["requestPolicy"]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda s: capacity_policy(s)["validRange"].update(max="41Gi"), "min <= default <= max <= 40Gi"),
        (lambda s: capacity_policy(s).update(default="1536Mi"), "multiple of step"),
        (lambda s: capacity_policy(s)["validRange"].update(step="40Gi"), "min + step <= 40Gi"),
        (lambda s: capacity_policy(s).pop("default"), "needs a default"),
        (lambda s: capacity_policy(s).update(validValues=["1Gi"]), "both validRange and validValues"),
        (lambda s: counter_policy(s).update(default="50M"), "min <= default"),
        (lambda s: counter_policy(s)["validRange"].update(max="99950M"), "multiple of step"),
    ],
)
def test_request_policy_violations_are_reported(mutate, needle):
    s = specs()
    assert check_pool(s) == []
    mutate(s)
    assert any(needle in p for p in check_pool(s)), check_pool(s)


def _with_attribute(value):
    s = specs()
    first_device(s)["attributes"]["pcieRoots"] = value
    return s


@pytest.mark.parametrize("value", [
    {"strings": ["pci0000:00", "pci0000:40"]}, {"ints": [0, 1]}, {"bools": [True]}, {"versions": ["1.2.3", "2.0.0-rc.1"]},
])
def test_list_typed_attributes_are_accepted(value):
    assert check_pool(_with_attribute(value)) == []


@pytest.mark.parametrize(("value", "needle"), [
    ({"strings": []}, "strings must be a non-empty list"),
    ({"ints": [1, "2"]}, "ints[1] int value '2' has the wrong type"),
    ({"bools": [1]}, "bools[0] bool value 1 has the wrong type"),
    ({"strings": ["x" * 65]}, "strings[0] longer than 64 characters"),
    ({"versions": ["1.2"]}, "versions[0] '1.2' is not a semantic version"),
    ({"version": "v1.2.3"}, "'v1.2.3' is not a semantic version"),
    ({"floats": [1.5]}, "unknown value field 'floats'"),
    ({}, "must have exactly one value field"),
])
def test_bad_attribute_values_are_reported(value, needle):
    problems = check_pool(_with_attribute(value))
    assert any(needle in p for p in problems), problems


def test_at_most_48_attribute_values_per_device_counting_list_elements():
    s = _with_attribute({"ints": list(range(48))})
    problems = check_pool(s)
    total = 48 + len(first_device(specs())["attributes"])
    assert any(f"{total} attribute values (scalars plus list elements) > 48" in p for p in problems), problems


def test_list_attributes_make_a_slice_a_64_device_slice():
    s = specs()
    plain = {"name": "x", "attributes": {"model": {"string": "a"}}}
    s[2]["devices"] = [dict(plain, name=f"dev-{k}") for k in range(65)]
    assert not any("devices >" in p for p in check_pool(s)), "65 plain devices fit the 128 limit"
    s[2]["devices"][10]["attributes"] = {"models": {"strings": ["a", "b"]}}
    problems = check_pool(s)
    assert any("65 devices > 64" in p for p in problems), problems
