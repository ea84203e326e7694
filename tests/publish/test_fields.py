"""Gate/field table: dropped-field paths, stripping, semantic comparison of round-tripped specs."""

from __future__ import annotations

from driver.publish.fields import (
    CONSUMABLE, GROUPS, PARTITIONABLE, SHARED_CONSUMABLE, dropped_gates, gates_used, semantic_equal, strip_disabled,
)

DEV = {"name": "vf-0", "allowMultipleAllocations": True,
       "capacity": {"bw": {"value": "10G", "requestPolicy": {"default": "1G"}}},
       "consumesCounters": [{"counterSet": "pf", "compatibilityGroups": ["a"],
                             "counters": {"bw": {"valueFrom": {"capacityName": "bw"}}, "n": {"value": "1"}}}]}
SPEC = {"driver": "d", "devices": [DEV]}
COUNTERS = {"driver": "d", "sharedCounters": [{"name": "pf", "counters": {"bw": {"value": "100G", "requestPolicy": {"default": "1G"}}}}]}


def test_gates_used():
    assert gates_used(SPEC) == {PARTITIONABLE, GROUPS, CONSUMABLE, SHARED_CONSUMABLE}
    assert gates_used(COUNTERS) == {PARTITIONABLE, SHARED_CONSUMABLE}
    assert gates_used({"driver": "d", "devices": [{"name": "x", "capacity": {"m": {"value": "1"}}}]}) == set()


def test_strip_each_gate_and_dropped_gates_names_it():
    for gate in (GROUPS, CONSUMABLE, SHARED_CONSUMABLE):
        stored = strip_disabled(SPEC, {gate})
        assert gates_used(stored) == gates_used(SPEC) - {gate}
        assert set(dropped_gates(SPEC, stored)) == {gate}
    stored = strip_disabled(SPEC, {PARTITIONABLE})
    assert "consumesCounters" not in stored["devices"][0]
    assert set(dropped_gates(SPEC, stored)) == {PARTITIONABLE}
    assert dropped_gates(COUNTERS, strip_disabled(COUNTERS, {PARTITIONABLE})) == {PARTITIONABLE: ["sharedCounters"]}
    assert dropped_gates(COUNTERS, strip_disabled(COUNTERS, {SHARED_CONSUMABLE})) == {
        SHARED_CONSUMABLE: ["sharedCounters.0.counters.bw.requestPolicy"]}


def test_strip_keeps_fields_the_old_object_used():
    assert strip_disabled(SPEC, {GROUPS}, keep={GROUPS}) == SPEC


def test_dropped_paths_name_the_device():
    stored = strip_disabled(SPEC, {GROUPS})
    assert dropped_gates(SPEC, stored) == {GROUPS: ["devices.vf-0.consumesCounters.0.compatibilityGroups"]}
    assert dropped_gates({"devices": [{"name": "a", "x": 1}]}, {"devices": [{"name": "a"}]}) == {"unknown": ["devices.a.x"]}


def test_semantic_equal_tolerates_round_trip_changes():
    a = {"capacity": {"memory": {"value": "1024Mi"}}, "attributes": {"x": {"string": "1024Mi"}}, "empty": []}
    b = {"capacity": {"memory": {"value": "1Gi"}}, "attributes": {"x": {"string": "1024Mi"}}}
    assert semantic_equal(a, b)
    assert not semantic_equal(a, {**b, "attributes": {"x": {"string": "1Gi"}}})  # strings are not quantities
    assert semantic_equal({"value": "1G"}, {"value": "1000M"}) and semantic_equal({"value": "1.5"}, {"value": "1500m"})
    assert not semantic_equal({"value": "1G"}, {"value": "1Gi"})
    assert not semantic_equal({"value": "abc"}, {"value": "abd"})
    assert semantic_equal({"min": "1e3"}, {"min": "1k"})
    assert not semantic_equal([1, 2], [2, 1])


def test_semantic_equal_quantities_in_any_form_but_never_invalid_ones():
    assert semantic_equal({"value": 1024}, {"value": "1Ki"})  # an integer is a quantity too
    assert semantic_equal({"validValues": ["1Gi", "2G"]}, {"validValues": ["1024Mi", "2000M"]})
    assert not semantic_equal({"value": "1.2.3"}, {"value": "1.2.30"})  # unparsable: compared as text


def test_gates_present_the_quick_look_agrees_with_the_full_walk():
    """strip_disabled skips its copy when gates_present finds nothing to strip: it must find every
    gated field gates_used finds, on hand-made specs and on every bundled profile under every gate mix."""
    import itertools

    from driver.discovery import PROFILES
    from driver.features import Features
    from driver.fleet.template import Templates
    from driver.publish.fields import gates_present

    for spec in (SPEC, COUNTERS, {"driver": "d"}, {"driver": "d", "devices": [{"name": "x", "nodeName": "n"}]}):
        assert gates_present(spec) == gates_used(spec), spec
    with Templates("gpu.example.com") as templates:
        for profile, values in itertools.product(sorted(PROFILES), itertools.product((True, False), repeat=3)):
            features = Features().with_gates(dict(zip((GROUPS, CONSUMABLE, SHARED_CONSUMABLE), values)))
            for spec in templates.get(profile, "{}", "full", features).drivers[0].specs:
                assert gates_present(spec) == gates_used(spec), (profile, features)
