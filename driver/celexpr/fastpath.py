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


def compile_fast(expression: str) -> Callable[[Mapping[str, Any]], bool] | None:
    """A direct evaluator when `expression` is a conjunction of simple equality tests, else None."""
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

    return evaluate
