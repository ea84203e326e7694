"""Kubernetes `resource.Quantity` parsing and canonical formatting, with exact arithmetic.

Counters, capacities and request policies are quantities ("40Gi", "100G", "500m"). The allocator must
compare and add them without floating-point error, so a quantity becomes a `fractions.Fraction`.
Formatting follows apimachinery's canonical form (`Quantity.String()`): the value keeps the format of
the quantity it came from (binary SI, decimal SI or decimal exponent) and uses the largest suffix
whose mantissa is an integer, e.g. 1073741824 in binary SI is "1Gi", 1500 is "1500", 0.5 is "500m".

Like apimachinery, parsing keeps values to nano units (a finer non-zero value rounds away from zero)
and caps BinarySI values at 2^63-1. Parsing also enforces limits on digits, magnitude and length
(MAX_DIGITS, MAX_POWER, MAX_TEXT) before any arithmetic, so a hostile quantity costs microseconds.
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

# apimachinery's documented grammar (pkg/api/resource/quantity.go, the `Quantity` comment):
#   <quantity> ::= <signedNumber><suffix>;  <number> ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
#   <suffix> ::= Ki|Mi|Gi|Ti|Pi|Ei | n|u|m|""|k|M|G|T|P|E | e<signedNumber> | E<signedNumber>
# No surrounding whitespace (" 1" and "1 " are invalid there too).
_RE = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

# Limits, checked on the text before any arithmetic (a quantity comes from claims, slices, config
# files and the local store, all of which may be hostile). apimachinery itself bounds only the
# exponent (it must parse as an int64, else ErrSuffix) and the precision (values are kept to nano
# units, a finer non-zero value rounds away from zero, so "0.9n" is 1n and "1e-400" is 1n), and
# caps BinarySI values at 2^63-1 ("9Ei" parses as 2^63-1). It keeps any number of digits and any
# decimal magnitude exactly (inf.Dec), which costs nothing there but is unbounded big-integer work
# for exact fractions: "1e10000000" took 11 s of CPU. So, beyond apimachinery:
MAX_DIGITS = 64  # digits in the number part; apimachinery's own tests use at most 23
MAX_POWER = 30  # |value| < 10^31: a trillion times the largest suffix (E = 10^18), ~2^103
MAX_TEXT = 128  # characters; no valid quantity within the limits above is longer
MAX_INT64 = 2**63 - 1  # apimachinery's BinarySI cap (math.go maxAllowed)
_NANO = 10**9


def preview(text: object, limit: int = 40) -> str:
    """repr() of a value cut to `limit` characters, so a hostile input cannot flood an error or a log."""
    if isinstance(text, int) and text.bit_length() > 128:  # repr() of a huge int is slow, then refused
        return f"<integer of {text.bit_length()} bits>"
    shown = repr(text)
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(shown)} characters)"


def _invalid(text: object, why: str, where: str | None) -> InputError:
    prefix = f"{where}: " if where else ""
    return InputError(f"{prefix}invalid quantity {preview(text)}: {why}")


_GRAMMAR = ("expected a number with an optional suffix "
            "(Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent like e3)")


def _split(text: str, where: str | None = None) -> tuple[str, str, str, str]:
    """(sign, integer digits, fraction digits, suffix) of a quantity text, within the limits."""
    if len(text) > MAX_TEXT:
        raise _invalid(text, f"longer than {MAX_TEXT} characters", where)
    match = _RE.fullmatch(text)
    if match is None or not (match.group(2) or match.group(3)):
        raise _invalid(text, _GRAMMAR, where)
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4) or ""
    if len(whole) + len(frac) > MAX_DIGITS:
        raise _invalid(text, f"more than {MAX_DIGITS} digits", where)
    return sign, whole, frac, suffix


def parse_quantity(value: str | int, where: str | None = None) -> Fraction:
    """Parse a Kubernetes quantity ("40Gi", "1.5G", "500m", "1e3", 7) into an exact Fraction.

    Values are rounded up to whole nano units and BinarySI values capped at 2^63-1, as apimachinery
    does. Raises InputError (prefixed with `where`, naming the text) when it is not a valid quantity
    or lies beyond the limits above.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _invalid(value, "expected a string such as '40Gi' or an integer", where)
    if isinstance(value, int):
        if value.bit_length() > 110 or abs(value) >= 10 ** (MAX_POWER + 1):
            raise _invalid(value, f"magnitude is 10^{MAX_POWER + 1} or more", where)
        return Fraction(value)
    if len(value) > MAX_TEXT:  # before the cache, which must not keep megabytes of junk
        raise _invalid(value, f"longer than {MAX_TEXT} characters", where)
    try:
        return _parse_text(value)
    except InputError as exc:
        if where:
            raise InputError(f"{where}: {exc}") from None
        raise


@lru_cache(maxsize=8192)  # slices repeat the same few quantity strings thousands of times
def _parse_text(value: str) -> Fraction:
    sign, whole, frac, suffix = _split(value)
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0)
    if suffix in _BINARY:
        amount = Fraction(int(digits), 10 ** len(frac)) * 1024 ** _BINARY[suffix]
        amount = min(_round_nano(amount), Fraction(MAX_INT64))
        return -amount if sign == "-" else amount
    if suffix in _DECIMAL:
        exponent = _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if not -(2**63) <= exponent <= MAX_INT64:
            raise _invalid(value, "exponent does not fit in 64 bits", None)
    power = exponent - len(frac)  # value = int(digits) * 10^power
    if len(digits) - 1 + power > MAX_POWER:
        raise _invalid(value, f"magnitude is 10^{MAX_POWER + 1} or more", None)
    if power >= -9:
        amount = Fraction(int(digits) * 10 ** (power + 9), _NANO)
    elif -power - 9 > len(digits):  # far below one nano unit: rounds up to exactly 1n
        amount = Fraction(1, _NANO)
    else:
        amount = Fraction(-(-int(digits) // 10 ** (-power - 9)), _NANO)
    return -amount if sign == "-" else amount


def _round_nano(value: Fraction) -> Fraction:
    """Round a non-negative value up to whole nano units (apimachinery rounds away from zero)."""
    return Fraction(-(-value.numerator * _NANO // value.denominator), _NANO)


def quantity_format(text: str | int | None) -> str:
    """The apimachinery format a quantity was written in: BinarySI, DecimalSI or DecimalExponent."""
    if text is None or isinstance(text, int):
        return DECIMAL_SI
    suffix = _split(text)[3]
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
    while mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    if exponent_style or exponent not in _DECIMAL_SUFFIX:  # DecimalSI has no suffix above E (10^18)
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
