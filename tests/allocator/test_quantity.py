"""Quantity parsing and canonical formatting agree with apimachinery's resource.Quantity."""

from fractions import Fraction

import pytest

from driver.errors import InputError
from driver.model.quantity import canonical_quantity, format_quantity, parse_quantity, quantity_format


@pytest.mark.parametrize(
    "text,value",
    [
        ("40Gi", 40 * 1024**3),
        ("1.5Gi", 1610612736),
        ("500m", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("100G", 10**11),
        ("1e3", 1000),
        ("1E", 10**18),
        ("-1Ki", -1024),
        ("7", 7),
        (7, 7),
        ("2.", 2),
        ("1e-3", Fraction(1, 1000)),
        ("+3k", 3000),
    ],
)
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "1.2.3", "Gi", "1GiB", "1 Gi", "abc", "1ki", "--1", None, 1.5, True, "1e"])
def test_parse_rejects_garbage_with_the_text_in_the_message(bad):
    with pytest.raises(InputError) as err:
        parse_quantity(bad)
    assert "invalid quantity" in str(err.value)


@pytest.mark.parametrize(
    "text,canonical",
    [
        ("1024Mi", "1Gi"),
        ("1536", "1536"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1500", "1500"),
        ("1000", "1k"),
        ("1e3", "1e3"),
        ("1E", "1E"),
        ("0", "0"),
        ("0Gi", "0"),
        ("512", "512"),
        ("1000Mi", "1000Mi"),
        ("0.0000000001", "1n"),
        ("-1Ki", "-1Ki"),
    ],
)
def test_canonical(text, canonical):
    assert canonical_quantity(text) == canonical


def test_format_defaults_to_decimal_si_and_keeps_binary_like():
    assert format_quantity(Fraction(10**10)) == "10G"
    assert format_quantity(Fraction(10 * 1024**3), like="40Gi") == "10Gi"
    # Binary values below 1024 or fractional fall back to decimal, like apimachinery.
    assert format_quantity(Fraction(100), like="1Gi") == "100"
    assert format_quantity(Fraction(3, 2), like="1Gi") == "1500m"
    assert quantity_format("1Gi") == "BinarySI" and quantity_format("1e3") == "DecimalExponent"
    assert quantity_format(None) == "DecimalSI"
