"""The importable engine: incremental allocation, all-or-nothing claim sets, determinism, cross-checks."""

from __future__ import annotations

import pytest

from driver.allocator import Allocator, PlacedDevice, allocate_claims, split_objects, validate_combination
from driver.errors import AllocationError, InputError, SearchBudgetExceeded
from driver.features import Features

from .casefile import expand_claim, load_fixture

MIG = "device.attributes['fake-dra.example.com'].type == 'mig'"


def objects():
    return load_fixture("a100-2gpu")


def mig_claim(name, count=1):
    return expand_claim({"name": name, "requests": [{"name": "m", "class": "mig.fake-dra.example.com", "count": count}]}, [])


def new_allocator(**kw):
    objs = split_objects(objects())
    return Allocator(slices=objs.slices, classes=objs.classes, node="node-1", **kw)


def test_claims_allocated_together_are_all_or_nothing():
    alloc = new_allocator()
    impossible = expand_claim({"name": "b", "requests": [{"name": "m", "class": "mig.fake-dra.example.com",
                                                          "selectors": ["device.attributes['fake-dra.example.com'].profile == '7g.40gb'"]}]}, [])
    with pytest.raises(AllocationError, match="claim default/b: cannot be allocated: request m: no device matches"):
        alloc.allocate([mig_claim("a", 2), impossible])
    # Nothing from the failed attempt stays reserved.
    (a,) = alloc.allocate([mig_claim("a", 7)])
    assert [r["device"] for r in a["devices"]["results"]][0] == "gpu-0-mig-1g5gb-0"


def test_two_claims_that_only_fail_together():
    alloc = new_allocator()
    # Each fits alone; the reason names the later claim, what the earlier one holds and the blocker.
    with pytest.raises(AllocationError, match=r"claim default/b: cannot be allocated together with default/a: with "
                       r"gpu-0-mig-1g5gb-0, gpu-0-mig-1g5gb-1 for claim default/a; gpu-1 for this claim already placed, "
                       r"request g: .* groups incompatible on counter set gpu-0"):
        alloc.allocate([mig_claim("a", 2), expand_claim({"name": "b", "requests": [
            {"name": "g", "class": "gpu.fake-dra.example.com", "count": 2,
             "selectors": ["device.attributes['fake-dra.example.com'].type == 'gpu'"]}]}, [])])


def test_exponential_search_hits_the_budget():
    # 7 + 8 MIG devices cannot fit two GPUs (7 per GPU), but proving it means trying every
    # combination — upstream's search is exponential here too. The budget stops it.
    alloc = new_allocator(budget=20_000)
    with pytest.raises(SearchBudgetExceeded, match="gave up after 20000 search steps"):
        alloc.allocate([mig_claim("a", 7), mig_claim("b", 8)])
    (a,) = alloc.allocate([mig_claim("a", 1)])  # state fully restored after the abort
    assert a["devices"]["results"][0]["device"] == "gpu-0-mig-1g5gb-0"


def test_claims_allocated_together_see_each_other():
    alloc = new_allocator()
    a, b = alloc.allocate([mig_claim("a"), mig_claim("b")])
    assert a["devices"]["results"][0]["device"] != b["devices"]["results"][0]["device"]


def test_results_are_deterministic():
    first = allocate_claims(objects() + [mig_claim("a", 3)], node="node-1")
    second = allocate_claims(objects() + [mig_claim("a", 3)], node="node-1")
    assert first.results[0].allocation is not None, first.results[0].reason  # else None == None passes
    assert first.results[0].allocation == second.results[0].allocation


def test_packed_allocations_pass_the_shared_rules():
    alloc = new_allocator()
    placed = []
    for i in range(14):
        (allocation,) = alloc.allocate([mig_claim(f"c{i}")])
        placed += [PlacedDevice(f"c{i}", r["request"], r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]]
    objs = split_objects(objects())
    assert validate_combination(objs.slices, placed, Features()) == []
    with pytest.raises(AllocationError):
        alloc.allocate([mig_claim("one-too-many")])


def test_sequential_stop_on_failure_false_continues():
    claims = [mig_claim("a", 32), mig_claim("b", 1)]
    outcome = allocate_claims(objects() + claims, node="node-1", stop_on_failure=False, sequential=True)
    assert [r.allocation is not None for r in outcome.results] == [False, True]
    assert not outcome.ok and [r.label for r in outcome.failed] == ["default/a"]
    stopped = allocate_claims(objects() + claims, node="node-1", sequential=True)
    assert len(stopped.results) == 1


def test_pending_claims_are_one_pod_by_default():
    # Alone, b fits; as one pod with a (which cannot fit) nothing is allocated and both say why.
    claims = [mig_claim("a", 32), mig_claim("b", 1)]
    outcome = allocate_claims(objects() + claims, node="node-1", stop_on_failure=False)
    assert [r.allocation for r in outcome.results] == [None, None]
    assert outcome.results[0].reason == outcome.results[1].reason
    assert "request m: needs 32 device(s)" in outcome.results[0].reason
    # Two claims that fit only with the later one backtracking into the earlier one's choice.
    big = expand_claim({"name": "big", "requests": [{"name": "m", "class": "mig.fake-dra.example.com", "count": 7}]}, [])
    together = allocate_claims(objects() + [mig_claim("one"), big], node="node-1")
    assert together.ok
    one, seven = ([r["device"] for r in c.allocation["devices"]["results"]] for c in together.results)
    assert not set(one) & set(seven)


def test_class_objects_or_parsed_classes():
    from driver.allocator.inputs import parse_class

    objs = split_objects(objects())
    classes = {c["metadata"]["name"]: parse_class(c) for c in objs.classes}
    alloc = Allocator(slices=objs.slices, classes=classes, node="node-1")
    assert alloc.allocate([mig_claim("a")])[0]["devices"]["results"][0]["device"] == "gpu-0-mig-1g5gb-0"


def test_bare_specs_without_generation_form_a_complete_pool():
    specs = [s["spec"] for s in split_objects(objects()).slices]
    for spec in specs:
        spec["pool"] = {"name": spec["pool"]["name"]}
    alloc = Allocator(slices=specs, classes=split_objects(objects()).classes, node="node-1")
    assert alloc.allocate([mig_claim("a")])[0]["devices"]["results"][0]["device"] == "gpu-0-mig-1g5gb-0"


@pytest.mark.parametrize(
    "obj,message",
    [
        ({"kind": "ResourceClaim", "metadata": {}}, "ResourceClaim (object #1): metadata.name: required"),
        ("text", "expected a mapping"),
    ],
)
def test_split_objects_errors(obj, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        split_objects([obj])


def test_bad_node_selector_operator_is_an_input_error():
    slice_ = {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
              "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Near"}]}]}, "devices": [{"name": "x"}]}}
    with pytest.raises(InputError, match="ResourceSlice s: spec.nodeSelector: unsupported node selector operator 'Near'"):
        Allocator(slices=[slice_], classes=[], node="n")
