"""Kubernetes CEL value types the CEL library cannot carry natively: quantities and semantic versions.

The `cel` package converts Python values into CEL values and rejects custom classes, so a quantity
travels through an expression as a one-key map `{"__quantity__": "<numerator>/<denominator>"}` and a
version as `{"__semver__": "<canonical text>"}`. The key carries the exact value, so CEL `==` between
two quantities (or versions) compares values, as the Kubernetes quantity/semver libraries do. The
library functions below (registered in environment.py) implement the Kubernetes CEL quantity library
(`quantity`, `isQuantity`, `compareTo`, `isGreaterThan`, `isLessThan`, `add`, `sub`, `asInteger`,
`asApproximateFloat`, `sign`, `isInteger`) and semver library (`semver`, `isSemver`, `major`, `minor`,
`patch`, plus the shared comparison functions).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from driver.errors import InputError
from driver.model.quantity import parse_quantity

QUANTITY_KEY = "__quantity__"
SEMVER_KEY = "__semver__"

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class CelValueError(Exception):
    """A library function was called with a value it cannot handle (a CEL runtime error)."""


def quantity_value(q: Fraction) -> dict[str, str]:
    return {QUANTITY_KEY: f"{q.numerator}/{q.denominator}"}


def as_fraction(value: Any) -> Fraction:
    if isinstance(value, dict) and QUANTITY_KEY in value:
        return Fraction(value[QUANTITY_KEY])
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    raise CelValueError(f"expected a quantity, got {value!r}")


def parse_semver(text: str, normalize: bool = False) -> tuple[int, int, int, tuple[str, ...]]:
    if normalize:
        # Kubernetes' normalize option: drop a "v" prefix, fill missing minor/patch, strip leading zeros.
        text = text.strip().removeprefix("v")
        core = re.match(r"^(\d+(?:\.\d+){0,2})(.*)$", text)
        if core:
            parts = [str(int(p)) for p in core.group(1).split(".")]
            text = ".".join(parts + ["0"] * (3 - len(parts))) + core.group(2)
    match = _SEMVER.match(text)
    if match is None:
        raise CelValueError(f"invalid semantic version {text!r}")
    pre = tuple(match.group(4).split(".")) if match.group(4) else ()
    return int(match.group(1)), int(match.group(2)), int(match.group(3)), pre


def semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    major, minor, patch, pre = parse_semver(text, normalize)
    canonical = f"{major}.{minor}.{patch}" + ("-" + ".".join(pre) if pre else "")
    return {SEMVER_KEY: canonical}


def _semver_key(value: Any) -> tuple:
    if not (isinstance(value, dict) and SEMVER_KEY in value):
        raise CelValueError(f"expected a semver, got {value!r}")
    major, minor, patch, pre = parse_semver(value[SEMVER_KEY])
    # Semver 2.0 precedence: a release sorts after its pre-releases; numeric identifiers sort
    # numerically and before alphanumeric ones.
    pre_key = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre)
    return (major, minor, patch, 1 if not pre else 0, pre_key)


def compare(a: Any, b: Any) -> int:
    if isinstance(a, dict) and SEMVER_KEY in a:
        ka, kb = _semver_key(a), _semver_key(b)
    else:
        ka, kb = as_fraction(a), as_fraction(b)
    return (ka > kb) - (ka < kb)


def _quantity(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise CelValueError(f"quantity() needs a string, got {text!r}")
    try:
        return quantity_value(parse_quantity(text))
    except InputError as exc:
        raise CelValueError(str(exc)) from None


def _is_quantity(text: Any) -> bool:
    try:
        _quantity(text)
        return True
    except CelValueError:
        return False


def _is_semver(text: Any, normalize: bool = False) -> bool:
    try:
        semver_value(text, normalize)
        return True
    except (CelValueError, ValueError, TypeError):
        return False


def _semver(text: Any, normalize: bool = False) -> dict[str, str]:
    if not isinstance(text, str):
        raise CelValueError(f"semver() needs a string, got {text!r}")
    try:
        return semver_value(text, normalize)
    except ValueError:
        raise CelValueError(f"invalid semantic version {text!r}") from None


def _as_integer(q: Any) -> int:
    value = as_fraction(q)
    if value.denominator != 1 or not -(2**63) <= value.numerator < 2**63:
        raise CelValueError(f"cannot convert quantity {value} to an int64 integer")
    return value.numerator


def _part(index: int):
    def get(v: Any) -> int:
        return _semver_key(v)[index]

    return get


def _add(a: Any, b: Any) -> dict[str, str]:
    return quantity_value(as_fraction(a) + as_fraction(b))


def _sub(a: Any, b: Any) -> dict[str, str]:
    return quantity_value(as_fraction(a) - as_fraction(b))


def _sign(q: Any) -> int:
    value = as_fraction(q)
    return (value > 0) - (value < 0)


FUNCTIONS = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": compare,
    "isGreaterThan": lambda a, b: compare(a, b) > 0,
    "isLessThan": lambda a, b: compare(a, b) < 0,
    "add": _add,
    "sub": _sub,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: float(as_fraction(q)),
    "sign": _sign,
    "isInteger": lambda q: as_fraction(q).denominator == 1 and -(2**63) <= as_fraction(q) < 2**63,
    "major": _part(0),
    "minor": _part(1),
    "patch": _part(2),
}
