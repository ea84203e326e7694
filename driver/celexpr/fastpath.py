"""A fast evaluator for the selector shape almost every DeviceClass and claim uses.

Selectors are typically conjunctions of equality tests on the driver and on attributes, e.g.
`device.driver == 'x' && device.attributes['x'].type == 'mig' && device.attributes['x'].profile == '1g.5gb'`.
Evaluating them through the CEL library costs tens of microseconds per device (the whole device is
converted to CEL values); schedulers evaluate selectors for every device of every node, so this
module evaluates exactly that shape directly, with the same semantics:

* an unknown domain is an empty map and a missing attribute is a "no such key" runtime error;
* `&&` is commutative over errors as in CEL: any false term makes the result false, otherwise an
  error in any term is the result;
* when a term compares values of different types the fast path declines and the caller falls back
  to the CEL library, so type-mismatch behaviour is always the library's.

Anything else (other operators, functions, parentheses, escapes) is not recognised and goes to CEL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_STR = r"'([^'\\]*)'|\"([^\"\\]*)\""
_TERM = re.compile(
    r"^\s*device\.(?:driver|attributes\[(?:" + _STR + r")\]\.([A-Za-z_][A-Za-z0-9_]*))\s*(==|!=)\s*"
    r"(?:" + _STR + r"|(-?\d+)|(true|false))\s*$"
)


class Declined(Exception):
    """The fast path cannot decide this device; evaluate with the CEL library instead."""


class FastNoSuchKey(Exception):
    """A missing attribute: the same runtime error the CEL library raises."""


Term = tuple[str | None, str | None, str, Any]  # domain (None = driver), attribute, op, literal


def _parse_term(text: str) -> Term | None:
    match = _TERM.match(text)
    if match is None:
        return None
    d1, d2, name, op, s1, s2, num, boolean = match.groups()
    domain = d1 if d1 is not None else d2
    if s1 is not None or s2 is not None:
        literal: Any = s1 if s1 is not None else s2
    elif num is not None:
        literal = int(num)
    else:
        literal = boolean == "true"
    return (domain, name, op, literal)


def compile_fast(expression: str) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[str, Mapping[str, Any]], bool]] | None:
    """Direct evaluators when `expression` is a conjunction of simple equality tests, else None:
    one over a built `device` variable, one over a device as published (driver, slice device)."""
    if "||" in expression or "(" in expression or "\\" in expression:
        return None
    parts = expression.split("&&")
    terms = []
    for part in parts:
        term = _parse_term(part)
        if term is None:
            return None
        terms.append(term)

    def evaluate(device: Mapping[str, Any]) -> bool:
        error: str | None = None
        for domain, name, op, literal in terms:
            if domain is None:
                value: Any = device["driver"]
            else:
                attrs = device["attributes"].get(domain, {})
                if name not in attrs:
                    error = error or name
                    continue
                value = attrs[name]
            if type(value) is not type(literal):
                raise Declined()
            if (value == literal) != (op == "=="):
                return False
        if error is not None:
            raise FastNoSuchKey(error)
        return True

    def evaluate_raw(driver: str, raw: Mapping[str, Any]) -> bool:
        attrs = raw.get("attributes") or {}
        error: str | None = None
        for domain, name, op, literal in terms:
            if domain is None:
                value: Any = driver
            else:
                value = raw_attribute(attrs, driver, domain, name)
                if value is _MISSING:
                    error = error or name
                    continue
            if type(value) is not type(literal):
                raise Declined()
            if (value == literal) != (op == "=="):
                return False
        if error is not None:
            raise FastNoSuchKey(error)
        return True

    return evaluate, evaluate_raw


_MISSING = object()
_SCALARS = ("int", "bool", "string")  # the order device_variable reads them in


def raw_attribute(attrs: Mapping[str, Any], driver: str, domain: str, name: str) -> Any:
    """An attribute's value as CEL sees it, read from the published device (`attributes` map of
    `<domain>/<name>` or, in the driver's domain, `<name>`); _MISSING when absent. Declines (the
    caller builds the CEL variable) for anything but one unambiguous int, bool or string."""
    if domain == driver:
        short, long = attrs.get(name), attrs.get(f"{domain}/{name}")
        if short is not None and long is not None:
            raise Declined()
        value = short if short is not None else long
    else:
        value = attrs.get(f"{domain}/{name}")
    if value is None:
        return _MISSING
    for key in _SCALARS:
        if key in value:
            out = value[key]
            if (key == "int" and type(out) is not int) or (key == "bool" and type(out) is not bool) or \
                    (key == "string" and type(out) is not str):
                raise Declined()
            return out
    raise Declined()


def plain_attributes(raw: Mapping[str, Any]) -> bool:
    """Whether every attribute of a published device is one well-typed int, bool or string, so that
    reading values straight from it (`raw_attribute`) cannot miss an error building the CEL
    variable would raise (a version that is not semver, a value without a type, ...)."""
    for value in (raw.get("attributes") or {}).values():
        if type(value) is not dict or len(value) != 1:
            return False
        out = value.get("string")
        if out is not None:
            if type(out) is not str:
                return False
            continue
        out = value.get("int")
        if out is not None:
            if type(out) is not int:
                return False
            continue
        if type(value.get("bool")) is not bool:
            return False
    return True
