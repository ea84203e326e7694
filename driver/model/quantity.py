"""Kubernetes `resource.Quantity` parsing and canonical formatting, with exact arithmetic.

Counters, capacities and request policies are quantities ("40Gi", "100G", "500m"). The allocator must
compare and add them without floating-point error, so a quantity becomes a `fractions.Fraction`.
Formatting follows apimachinery's canonical form (`Quantity.String()`): the value keeps the format of
the quantity it came from (binary SI, decimal SI or decimal exponent) and uses the largest suffix
whose mantissa is an integer, e.g. 1073741824 in binary SI is "1Gi", 1500 is "1500", 0.5 is "500m".

Like apimachinery, values finer than nano units are rounded up to the next nano when formatted.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from driver.errors import InputError

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}

_RE = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"


def _split(text: str) -> tuple[str, str, str]:
    match = _RE.match(text)
    if match is None:
        raise InputError(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent like e3)"
        )
    return match.group(1), match.group(2), match.group(3) or ""


def parse_quantity(value: str | int) -> Fraction:
    """Parse a Kubernetes quantity ("40Gi", "1.5G", "500m", "1e3", 7) into an exact Fraction.

    Raises InputError naming the text when it is not a valid quantity.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"invalid quantity {value!r}: expected a string such as '40Gi' or an integer")
    if isinstance(value, int):
        return Fraction(value)
    return _parse_text(value)


@lru_cache(maxsize=8192)  # slices repeat the same few quantity strings thousands of times
def _parse_text(value: str) -> Fraction:
    sign, number, suffix = _split(value.strip())
    amount = Fraction(number)
    if suffix in _BINARY:
        amount *= Fraction(1024) ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        amount *= Fraction(10) ** _DECIMAL[suffix]
    else:  # decimal exponent
        amount *= Fraction(10) ** int(suffix[1:])
    return -amount if sign == "-" else amount


def quantity_format(text: str | int | None) -> str:
    """The apimachinery format a quantity was written in: BinarySI, DecimalSI or DecimalExponent."""
    if text is None or isinstance(text, int):
        return DECIMAL_SI
    _, _, suffix = _split(text.strip())
    if suffix in _BINARY:
        return BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":  # "E" alone is the exa suffix
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def _format_decimal(magnitude: Fraction, exponent_style: bool) -> str:
    # Work in nano units, rounding up like apimachinery does for sub-nano precision.
    mantissa = _ceil(magnitude * 10**9)
    if mantissa == 0:
        return "0"
    exponent = -9
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    if exponent_style:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"


def format_quantity(value: Fraction | int, like: str | None = None) -> str:
    """Canonical Kubernetes form of `value`, in the format of the quantity text `like` (default DecimalSI)."""
    value = Fraction(value)
    fmt = quantity_format(like)
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if fmt == BINARY_SI and magnitude >= 1024 and magnitude.denominator == 1:
        mantissa, power = magnitude.numerator, 0
        while mantissa % 1024 == 0 and power < 6:
            mantissa //= 1024
            power += 1
        return f"{sign}{mantissa}{_BINARY_SUFFIX.get(power, '')}"
    text = _format_decimal(magnitude, fmt == DECIMAL_EXPONENT)
    return text if text == "0" else sign + text


def canonical_quantity(text: str | int) -> str:
    """Re-format a quantity text the way the API server stores it (e.g. "1024Mi" -> "1Gi")."""
    return format_quantity(parse_quantity(text), like=text if isinstance(text, str) else None)
