"""TaintRules' index gives every rule that selects a device, and only those, in rule-name order,
whatever the rule's shape (tracker applyPatches / eviction ruleMatchesDevice: every set field matches)."""

from __future__ import annotations

import itertools

import pytest

from driver.allocator.taintrules import TaintRules, is_label_name, is_pool_name
from driver.errors import InputError


def rule(name, **selector):
    return {"kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": {"key": "k", "effect": "NoSchedule"}}}


SHAPES = [dict(zip(("driver", "pool", "device"), values)) for values in
          itertools.product(("d1", None), ("p1", None), ("dev1", None))]


def test_index_agrees_with_the_selector_rule_for_every_shape():
    objs = [rule(f"r{i}", **{k: v for k, v in shape.items() if v is not None}) for i, shape in enumerate(SHAPES)]
    rules = TaintRules()
    for obj in reversed(objs):
        rules.set(obj)
    for driver, pool, device in itertools.product(("d1", "d2"), ("p1", "p2"), ("dev1", "dev2")):
        want = [f"r{i}" for i, s in enumerate(SHAPES)
                if all(v is None or v == got for v, got in zip(s.values(), (driver, pool, device)))]
        assert [r.rule for r in rules.for_device(driver, pool, device)] == sorted(want), (driver, pool, device)
    rules.remove("r0")
    assert "r0" not in [r.rule for r in rules.for_device("d1", "p1", "dev1")]


def test_a_rule_replaced_by_one_without_selector_selects_nothing():
    rules = TaintRules()
    rules.set(rule("r", driver="d1"))
    rules.set({"kind": "DeviceTaintRule", "metadata": {"name": "r"}, "spec": {"taint": {"key": "k", "effect": "None"}}})
    assert rules.for_device("d1", "p1", "dev1") == [] and len(rules) == 0


@pytest.mark.parametrize("field, value, message", [
    ("device", "Bad_Device", "spec.deviceSelector.device"), ("driver", "-x-", "spec.deviceSelector.driver"),
    ("pool", "a//b", "spec.deviceSelector.pool")])
def test_invalid_selectors_name_their_field(field, value, message):
    with pytest.raises(InputError, match=message):
        TaintRules().set(rule("r", **{field: value}))


def test_names():
    assert is_label_name("example.com/unhealthy") and is_label_name("unhealthy")
    assert not is_label_name("/x") and not is_label_name("a b") and not is_label_name("")
    assert is_pool_name("node-1") and is_pool_name("a.b/c") and not is_pool_name("a//b") and not is_pool_name("")
