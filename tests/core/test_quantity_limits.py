"""Quantity parsing follows apimachinery's grammar, precision and BinarySI cap, and refuses hostile
quantities (huge exponents, thousands of digits, megabyte strings) before doing any arithmetic.

Upstream facts used here come from kubernetes/apimachinery pkg/api/resource/quantity.go and its
quantity_test.go (TestQuantityParse valid and invalid tables).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from driver.errors import InputError
from driver.model.quantity import MAX_DIGITS, MAX_INT64, MAX_TEXT, canonical_quantity, parse_quantity

NANO = Fraction(1, 10**9)


@pytest.mark.parametrize(
    "text,value",
    [
        ("9Ei", MAX_INT64),  # BinarySI is capped at 2^63-1 (upstream maxAllowed)
        ("8Ei", MAX_INT64),
        ("-9Ei", -MAX_INT64),
        ("3Ei", 3 * 1024**6),
        ("0.9n", NANO),  # finer than nano rounds away from zero
        ("3.001n", 4 * NANO),
        ("1.1E-9", 2 * NANO),
        ("0.5e-9", NANO),
        ("-0.5e-9", -NANO),
        ("1e-400", NANO),  # however far below: exactly one nano, no arithmetic on 10^400
        ("10E", 10**19),  # decimal values above int64 keep their value upstream
        ("10000000000000000001", 10**19 + 1),
        ("1.0000000000000000001E", Fraction(10**19 + 1, 10)),
        ("1.3E+6", 1300000),
        ("0n", 0),
        ("0.5e0", Fraction(1, 2)),
        ("1." + "0" * (MAX_DIGITS - 2) + "1", 1 + NANO),  # at the digit limit
        ("9.99e30", Fraction(999, 100) * 10**30),  # just below the magnitude limit
    ],
)
def test_values_match_apimachinery(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text,canonical", [("9Ei", "9223372036854775807"), ("1e30", "1e30"),
                                            ("1000E", "1e21"), ("10E", "10E"), ("1e-400", "1e-9")])
def test_canonical_form_beyond_the_largest_suffix(text, canonical):
    assert canonical_quantity(text) == canonical


@pytest.mark.parametrize(
    "bad,why",
    [
        # apimachinery's own invalid table, including "trailing whitespace is forbidden"
        ("1.1.M", "expected a number"), ("1+1.0M", "expected a number"), ("0.1mi", "expected a number"),
        ("0.1am", "expected a number"), (".5i", "expected a number"), ("1i", "expected a number"),
        ("-3.01i", "expected a number"), ("-3.01e-", "expected a number"), (" 1", "expected a number"),
        ("1 ", "expected a number"), ("40Gi\n", "expected a number"), (".", "expected a number"),
        ("-", "expected a number"), ("e5", "expected a number"),
        # beyond the limits: refused, not computed
        ("1e10000000", "magnitude is 10^31 or more"),
        ("1e31", "magnitude is 10^31 or more"),
        ("-1e31", "magnitude is 10^31 or more"),
        ("1" * 32, "magnitude is 10^31 or more"),
        ("1" * (MAX_DIGITS + 1) + "n", f"more than {MAX_DIGITS} digits"),
        ("0." + "0" * MAX_DIGITS + "1", f"more than {MAX_DIGITS} digits"),
        ("1e-99999999999999999999", "exponent does not fit in 64 bits"),
        ("1" * 10_000_000, f"longer than {MAX_TEXT} characters"),
        (10**31, "magnitude is 10^31 or more"),
        (-(10**5000), "magnitude is 10^31 or more"),
    ],
    ids=lambda v: v[:30] if isinstance(v, str) else str(type(v).__name__),
)
def test_rejects_with_a_short_message(bad, why):
    with pytest.raises(InputError) as err:
        parse_quantity(bad)
    message = str(err.value)
    assert "invalid quantity" in message and why in message
    assert len(message) < 300, "a hostile quantity must not be echoed in full"


def test_where_names_the_field():
    with pytest.raises(InputError, match=r"^claim default/c results\[0\]: invalid quantity '1e999'"):
        parse_quantity("1e999", where="claim default/c results[0]")
    with pytest.raises(InputError, match=r"^spec.x: invalid quantity 1.5"):
        parse_quantity(1.5, where="spec.x")  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["bandwidthStep", "timeshareMemoryStep"])
def test_driver_config_quantity_beyond_the_limits_is_a_config_error(key):
    from driver.errors import ConfigError
    from driver.slices.config import SliceConfig

    with pytest.raises(ConfigError, match=rf"^slices\.{key}: .*invalid quantity '1e10000000': magnitude"):
        SliceConfig.from_dict({key: "1e10000000"})


def test_slice_capacity_beyond_the_limits_names_the_device_field():
    from driver.allocator.devices import parse_device

    spec = {"driver": "d.example.com", "pool": {"name": "p"},
            "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "1e10000000"}}}]}
    with pytest.raises(InputError, match=r"ResourceSlice s1: spec.devices\[0\].capacity\[memory\].value: invalid quantity"):
        parse_device(spec, 0, "s1")
