"""validate_combination: the shared counter / group / exclusivity rules used at preparation time."""

import pytest

from driver.allocator.rules import GroupIntersection, PlacedDevice, validate_combination
from driver.errors import InputError
from driver.features import Features

DRIVER = "gpu.example.com"


def slices(groups_mig=("mig",), groups_vgpu=("vgpu",)):
    counters = {
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
            "sharedCounters": [{"name": "gpu-0", "counters": {"sm": {"value": "100"}, "bw": {"value": "10G"}}}],
        },
        "metadata": {"name": "n1-counters"},
    }

    def dev(name, sm, groups, extra=None):
        entry = {"counterSet": "gpu-0", "counters": {"sm": {"value": str(sm)}}}
        if groups is not None:
            entry["compatibilityGroups"] = list(groups)
        d = {"name": name, "consumesCounters": [entry]}
        d.update(extra or {})
        return d

    devices = {
        "metadata": {"name": "n1-devices"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
            "nodeName": "n1",
            "devices": [
                dev("mig-0", 20, groups_mig),
                dev("mig-1", 20, groups_mig),
                dev("vgpu-0", 50, groups_vgpu),
                dev("vgpu-1", 50, groups_vgpu),
                dev("full", 100, None),
                {
                    "name": "vf-0",
                    "allowMultipleAllocations": True,
                    "consumesCounters": [
                        {"counterSet": "gpu-0", "counters": {"bw": {"valueFrom": {"capacityName": "bandwidth"}}}}
                    ],
                },
            ],
        },
    }
    return [counters, devices]


def place(device, claim="c", request="r", consumed=None, share=None):
    return PlacedDevice(claim, request, DRIVER, "n1", device, consumed, share)


def test_compatible_mig_pair_is_fine():
    assert validate_combination(slices(), [place("mig-0"), place("mig-1", claim="d")], Features()) == []


def test_mig_and_vgpu_on_one_gpu_violate_groups():
    v = validate_combination(slices(), [place("mig-0"), place("vgpu-0", claim="d")], Features())
    assert [x.kind for x in v] == ["groups"]
    assert v[0].counter_set == "gpu-0" and set(v[0].devices) == {"mig-0", "vgpu-0"}
    assert "gpu-0" in v[0].message and "mig-0" in v[0].message


def test_groups_not_checked_when_gate_off():
    v = validate_combination(slices(), [place("mig-0"), place("vgpu-0")], Features(compatibility_groups=False))
    assert v == []


def test_no_groups_device_is_incompatible_with_grouped_one():
    v = validate_combination(slices(), [place("mig-0"), place("full")], Features())
    kinds = sorted(x.kind for x in v)
    assert kinds == ["counters", "groups"]  # 120 > 100 SMs as well


def test_counters_exceeded_names_set_and_devices():
    v = validate_combination(slices(), [place("vgpu-0"), place("vgpu-1"), place("full")], Features(compatibility_groups=False))
    assert [x.kind for x in v] == ["counters"]
    assert "counter set gpu-0" in v[0].message and "sm 200 > 100" in v[0].message


def test_exclusive_device_placed_twice():
    v = validate_combination(slices(), [place("mig-0", claim="a"), place("mig-0", claim="b")], Features())
    assert [x.kind for x in v] == ["exclusive"]
    assert "a (r)" in v[0].message and "b (r)" in v[0].message


def test_same_placement_listed_twice_counts_once():
    assert validate_combination(slices(), [place("mig-0"), place("mig-0")], Features()) == []


def test_unknown_device():
    v = validate_combination(slices(), [place("nope")], Features())
    assert [x.kind for x in v] == ["unknown-device"] and "nope" in v[0].message


def test_value_from_uses_recorded_consumption_per_share():
    rec = lambda amount: ({"counterSet": "gpu-0", "counters": {"bw": {"value": amount}}},)
    ok = [place("vf-0", claim="a", consumed=rec("6G"), share="1"), place("vf-0", claim="b", consumed=rec("4G"), share="2")]
    assert validate_combination(slices(), ok, Features.all_on()) == []
    bad = ok + [place("vf-0", claim="c", consumed=rec("1"), share="3")]
    v = validate_combination(slices(), bad, Features.all_on())
    assert [x.kind for x in v] == ["counters"] and "bw" in v[0].message
    # A gate-off scheduler does not account valueFrom at all.
    assert validate_combination(slices(), bad, Features(shared_consumable_capacity=False)) == []


def test_only_newest_generation_counts():
    old = slices()
    new = slices(groups_vgpu=("mig",))
    for s in new:
        s["spec"]["pool"]["generation"] = 2
    assert validate_combination(old + new, [place("mig-0"), place("vgpu-0")], Features.all_on()) == []


def test_bad_slice_quantity_names_the_field():
    s = slices()
    s[0]["spec"]["sharedCounters"][0]["counters"]["sm"]["value"] = "lots"
    with pytest.raises(InputError, match=r"ResourceSlice n1-counters: spec.sharedCounters\[0\].counters\[sm\].value"):
        validate_combination(s, [], Features.all_on())


def test_bad_recorded_consumption_names_the_claim():
    # Reported as a violation of that placement (and charged nothing), so one bad record cannot
    # make every other claim on the counter set fail to revalidate.
    bad = ({"counterSet": "gpu-0", "counters": {"bw": {"value": "x"}}},)
    (v,) = validate_combination(slices(), [place("vf-0", consumed=bad)], Features.all_on())
    assert v.kind == "recorded" and "claim c" in v.message and "invalid quantity 'x'" in v.message


def test_group_intersection_rolls():
    g = GroupIntersection()
    foo, bar, baz = frozenset({"foo", "foobar"}), frozenset({"bar", "foobar"}), frozenset({"baz"})
    assert g.admits(foo)
    g = g.add(foo)
    assert g.admits(bar) and not g.admits(baz) and not g.admits(frozenset())
    g = g.add(bar)
    assert g.groups == {"foobar"}
    empty = GroupIntersection().add(frozenset())
    assert empty.admits(frozenset()) and not empty.admits(foo)


def test_allocate_without_explanation_is_short():
    from driver.allocator import Allocator
    from driver.errors import AllocationError

    cls = {"metadata": {"name": "c"}, "spec": {}}
    alloc = Allocator(slices=slices(), classes=[cls], node="n1")
    claim = {"metadata": {"name": "x"}, "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": 9}}]}}}
    with pytest.raises(AllocationError, match="^claim default/x: cannot be allocated on node n1$"):
        alloc.allocate([claim], explain=False)


def test_list_typed_attributes_are_accepted_at_revalidation():
    # Preparation-time revalidation reads the same slices; list-typed attributes (DRAListTypeAttributes)
    # neither break parsing nor change the counter/group/exclusivity verdicts.
    listed = slices()
    for dev in listed[1]["spec"]["devices"]:
        dev["attributes"] = {"pcieRoots": {"strings": ["pci0000:00", "pci0000:40"]}, "numa": {"ints": [0, 1]}}
    ok = [PlacedDevice("a", "r", DRIVER, "n1", "mig-0"), PlacedDevice("b", "r", DRIVER, "n1", "mig-1")]
    assert validate_combination(listed, ok, Features.all_on()) == []
    clash = [PlacedDevice("a", "r", DRIVER, "n1", "mig-0"), PlacedDevice("b", "r", DRIVER, "n1", "vgpu-0")]
    assert [v.kind for v in validate_combination(listed, clash, Features.all_on())] == ["groups"]


def _pool(devices, sets=("gpu-0",)):
    """A counter slice with the given sets (100 units each) and a device slice: (name, {set: groups})."""
    counters = {"metadata": {"name": "c"}, "spec": {
        "driver": DRIVER, "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
        "sharedCounters": [{"name": s, "counters": {"u": {"value": "100"}}} for s in sets]}}
    devs = []
    for name, per_set, *multi in devices:
        entries = []
        for cs, groups in per_set.items():
            entry = {"counterSet": cs, "counters": {"u": {"value": "1"}}}
            if groups != "unset":
                entry["compatibilityGroups"] = groups
            entries.append(entry)
        devs.append({"name": name, "consumesCounters": entries, **({"allowMultipleAllocations": True} if multi else {})})
    return [counters, {"metadata": {"name": "d"}, "spec": {
        "driver": DRIVER, "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2}, "nodeName": "n1", "devices": devs}}]


def test_revalidation_applies_the_rolling_intersection_in_any_order():
    # Pairwise every two share a group, all three share none (KEP-5963 rolling intersection):
    # the verdict must not depend on which device was prepared first.
    pool = _pool([("a", {"gpu-0": ["g1", "g2"]}), ("b", {"gpu-0": ["g2", "g3"]}), ("c", {"gpu-0": ["g1", "g3"]})])
    for order in (("a", "b", "c"), ("c", "b", "a"), ("b", "c", "a")):
        v = validate_combination(pool, [place(n, claim=n) for n in order], Features())
        assert [x.kind for x in v] == ["groups"], order
    assert validate_combination(pool, [place("a"), place("c", claim="x")], Features()) == []


def test_revalidation_treats_unset_null_and_empty_alike():
    pool = _pool([("unset", {"gpu-0": "unset"}), ("null", {"gpu-0": None}), ("empty", {"gpu-0": []}),
                  ("mig", {"gpu-0": ["mig"]})])
    assert validate_combination(pool, [place("unset"), place("null", claim="x"), place("empty", claim="y")], Features()) == []
    v = validate_combination(pool, [place("empty"), place("mig", claim="x")], Features())
    assert [x.kind for x in v] == ["groups"] and "empty: (no groups)" in v[0].message


def test_revalidation_compares_groups_per_counter_set_only():
    pool = _pool([("x", {"a": ["mig"]}), ("y", {"b": ["vgpu"]}), ("z", {"a": ["mig"], "b": ["mps"]})], sets=("a", "b"))
    assert validate_combination(pool, [place("x"), place("y", claim="o")], Features()) == []
    v = validate_combination(pool, [place("y"), place("z", claim="o")], Features())
    assert [(x.kind, x.counter_set) for x in v] == [("groups", "b")]


def test_revalidation_counts_a_shared_device_once_for_groups():
    pool = _pool([("ts", {"gpu-0": ["timeslice"]}, "multi"), ("mig", {"gpu-0": ["mig"]})])
    shares = [place("ts", claim=f"c{i}", share=f"s{i}") for i in range(3)]
    assert validate_combination(pool, shares, Features()) == []
    v = validate_combination(pool, [*shares, place("mig", claim="m")], Features())
    assert [x.kind for x in v] == ["groups"] and v[0].devices == ("mig", "ts")


def test_request_policy_whole_units_rounds_like_quantity_value():
    """DRAFractionalCapacityRange off: upstream's step arithmetic runs on Quantity.Value() (rounded up)."""
    from fractions import Fraction as F

    from driver.allocator.devices import RequestPolicy

    policy = RequestPolicy(default=F(1, 5), min=F(1, 5), max=F(1), step=F(1, 10))
    assert policy.round_up(F(1, 4)) == F(3, 10)           # gate on: 250m -> 300m
    assert policy.round_up(F(1, 4), whole_units=True) == 1  # gate off: ceil(250m)=1 on min 1, step 1
    assert policy.round_up(F(1, 10), whole_units=True) == F(1, 5)  # below min: min as published
    assert not policy.violated_by(F(3, 10)) and policy.violated_by(F(1, 4))
    assert not policy.violated_by(F(1, 4), whole_units=True)  # ceil(250m)-ceil(200m) = 0 steps
