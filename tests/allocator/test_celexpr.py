"""The DRA CEL environment: quantity and semver libraries, attribute lookup rules, error mapping."""

from __future__ import annotations

import re

import pytest

from driver.celexpr import CelRuntimeError, compile_selector, device_variable
from driver.errors import InputError

DEVICE = device_variable(
    "gpu.example.com",
    {
        "name": "d",
        "allowMultipleAllocations": True,
        "attributes": {
            "type": {"string": "mig"},
            "cores": {"int": 7},
            "healthy": {"bool": True},
            "fw": {"version": "1.10.0-beta.2"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
        "capacity": {"memory": {"value": "40Gi"}, "other.example.com/bw": {"value": "10G"}},
    },
)


def ev(expr: str) -> bool:
    return compile_selector(expr, "test").matches(DEVICE)


@pytest.mark.parametrize(
    "expr",
    [
        "device.driver == 'gpu.example.com'",
        "device.attributes['gpu.example.com'].type == 'mig'",
        "device.attributes['gpu.example.com'].cores > 5",
        "device.attributes['gpu.example.com'].healthy",
        "device.attributes['resource.kubernetes.io'].pcieRoot.startsWith('pci')",
        "device.allowMultipleAllocations",
        "device.capacity['gpu.example.com'].memory == quantity('40960Mi')",
        "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) == 0",
        "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('39Gi'))",
        "device.capacity['gpu.example.com'].memory.isLessThan(quantity('41Gi'))",
        "device.capacity['other.example.com'].bw.sub(quantity('1G')) == quantity('9G')",
        "device.capacity['other.example.com'].bw.add(5).asInteger() == 10000000005",
        "quantity('1.5').asApproximateFloat() == 1.5",
        "quantity('-1').sign() == -1 && quantity('500m').isInteger() == false",
        "isQuantity('1Gi') && !isQuantity('x')",
        "device.attributes['gpu.example.com'].fw.isGreaterThan(semver('1.9.0'))",
        "device.attributes['gpu.example.com'].fw.isLessThan(semver('1.10.0'))",
        "device.attributes['gpu.example.com'].fw.isGreaterThan(semver('1.10.0-beta.1'))",
        "device.attributes['gpu.example.com'].fw.isGreaterThan(semver('1.10.0-alpha'))",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('v1.2', true) == semver('1.2.0')",
        "isSemver('1.0.0') && !isSemver('1.0') && isSemver('01.0', true)",
        "semver('1.0.0-2').compareTo(semver('1.0.0-10')) < 0",
        "!has(device.attributes['unknown.example.com'].x)",
        "device.attributes['gpu.example.com'].type.lowerAscii() == 'mig'",
        "['a', 'b'].exists(x, x == 'b')",
    ],
)
def test_true_expressions(expr):
    assert ev(expr) is True


@pytest.mark.parametrize(
    "expr,message",
    [
        ("device.attributes['gpu.example.com'].nope == 1", "no such key: nope"),
        ("device.attributes['unknown.example.com'].x == 1", "no such key: x"),
        ("device.driver", "must evaluate to bool"),
        ("quantity('bad') == quantity('1')", "invalid quantity"),
        ("semver('1.0') == semver('1.0.0')", "invalid semantic version"),
        ("quantity('1.5').asInteger() == 1", "cannot convert quantity"),
        ("device.capacity['gpu.example.com'].memory.compareTo(semver('1.0.0')) == 0", "expected a quantity"),
        ("1 / 0 == 1", "division by zero"),
        ("quantity(1) == quantity('1')", "quantity() needs a string, got 1"),
        ("semver(1) == semver('1.0.0')", "semver() needs a string, got 1"),
        ("semver('1.0.0').compareTo(quantity('1')) == 0", "expected a semver"),
    ],
)
def test_runtime_errors(expr, message):
    with pytest.raises(CelRuntimeError, match=re.escape(message)):
        ev(expr)


@pytest.mark.parametrize(
    "expr,message",
    [
        ("device.driver ==", "compilation failed"),
        ("", "expression is empty"),
        ("nosuch(device)", "undeclared reference to function(s) nosuch"),
        ("other == 1", "undeclared reference to other"),
    ],
)
def test_compile_errors_name_the_field(expr, message):
    with pytest.raises(InputError) as err:
        compile_selector(expr, "ResourceClaim ns/c: spec.devices.requests[0].exactly.selectors[0].cel.expression")
    assert str(err.value).startswith("ResourceClaim ns/c: spec.devices.requests[0].exactly.selectors[0].cel.expression: ")
    assert message in str(err.value)


def test_compiled_once():
    assert compile_selector("device.driver == 'x'", "a") is compile_selector("device.driver == 'x'", "b")


def test_bad_version_attribute_is_a_runtime_error():
    with pytest.raises(CelRuntimeError, match=r"attributes\[v\]: invalid semantic version"):
        device_variable("d", {"name": "x", "attributes": {"v": {"version": "1.0"}}})


# ---- the fast path must agree with the CEL library ---------------------------------------------
from dataclasses import replace  # noqa: E402

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from driver.celexpr.fastpath import compile_fast  # noqa: E402

_values = st.one_of(st.sampled_from(["mig", "vgpu", ""]), st.integers(-2, 2), st.booleans())


@st.composite
def _term(draw):
    op = draw(st.sampled_from(["==", "!="]))
    literal = draw(_values)
    text = repr(literal) if isinstance(literal, str) else str(literal).lower()
    if draw(st.booleans()):
        return f"device.driver {op} {text}"
    domain = draw(st.sampled_from(["d.example.com", "other.example.com"]))
    return f"device.attributes['{domain}'].{draw(st.sampled_from(['a', 'b']))} {op} {text}"


def _outcome(selector, device):
    try:
        return selector.matches(device)
    except CelRuntimeError as exc:
        return "error: " + str(exc)


@given(st.lists(_term(), min_size=1, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), _values, max_size=2))
def test_fast_path_agrees_with_the_cel_library(terms, attrs):
    expr = " && ".join(terms)
    assert compile_fast(expr) is not None
    raw = {"name": "x", "attributes": {k: ({"bool": v} if isinstance(v, bool) else {"int": v} if isinstance(v, int) else {"string": v}) for k, v in attrs.items()}}
    device = device_variable("d.example.com", raw)
    fast = compile_selector(expr, "t")
    slow = replace(fast, fast=None)
    fast_result, slow_result = _outcome(fast, device), _outcome(slow, device)
    if isinstance(slow_result, str) and isinstance(fast_result, str):
        assert fast_result.startswith("error: no such key")  # both fail; they may name different keys
    elif isinstance(slow_result, str):
        # Only when a false term meets an error: the CEL spec (and cel-go) make `&&` commutative
        # over errors, so the fast path answers false where the library may report the error.
        assert fast_result is False
    else:
        assert fast_result == slow_result


def test_fast_path_declines_other_shapes():
    for expr in ["device.driver == 'a' || true", "size(device.attributes) > 0", "(device.driver == 'a')", "device.attributes['x'].y > 1"]:
        assert compile_fast(expr) is None


def test_callback_errors_are_clean_and_not_logged(caplog):
    with pytest.raises(CelRuntimeError) as err:
        ev("quantity('bad') == quantity('1')")
    assert str(err.value).startswith("invalid quantity 'bad'")
    assert "Check function arguments" not in str(err.value)
    assert not [r for r in caplog.records if r.name == "cel"]


def test_derived_values_become_attribute_values():
    # KEP-6080: a derived expression yields a string, int, bool or semver, or a list of one of them.
    from driver.celexpr import CelRuntimeError, attribute_of_value, compile_selector, device_variable

    dev = device_variable("gpu.example.com", {"name": "g", "attributes": {"numa": {"int": 1}, "fw": {"version": "1.2.3"}}})

    def derive(expr, lists=True):
        return attribute_of_value(compile_selector(expr, "x").evaluate(dev), lists)

    assert derive("device.attributes['gpu.example.com'].numa") == {"int": 1}
    assert derive("device.attributes['gpu.example.com'].numa == 1") == {"bool": True}  # a bool, not an int
    assert derive("device.attributes['gpu.example.com'].fw") == {"version": "1.2.3"}
    assert derive("'numa' + string(device.attributes['gpu.example.com'].numa)") == {"string": "numa1"}
    assert derive("[1, 2]") == {"ints": [1, 2]}
    for bad, lists, message in (("[1, 'a']", True, "one type"), ("[1]", False, "DRAListTypeAttributes"),
                                ("1.5", True, "must evaluate to"), ("[]", True, "empty list")):
        with pytest.raises(CelRuntimeError, match=message):
            derive(bad, lists)
