"""Strict validation of one object against its compiled schema: kube-apiserver's decoding checks.

What kubectl's default strict field validation makes the apiserver refuse, found in one linear walk:
unknown or misplaced fields (with a did-you-mean), wrong types (a string for a count, a list for a
map), integers beyond int32/int64, malformed quantities, unsupported enum values, missing required
fields and, for the gated KEP-5941 shapes, "exactly one of". Semantic rules the schema cannot express
(DNS names, limits, CEL) stay with the readers (driver.store.validate, driver.slices.check_pool).

The walk costs a dict lookup and a type check per field, so a fleet's 68 MB of slices stays linear;
messages are built only for the fields that fail.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import InputError
from driver.model.quantity import parse_quantity
from driver.schema import overlay
from driver.schema.compact import (ANY, BOOL, INT, IOS, KIND_NAMES, LIST, MAP, NUM, QTY, REF, STR, Field,
                                   TypeNode)

# Quantity texts already parsed successfully, shared by every walk: a fleet's slices repeat the same
# few hundred texts, so each is parsed once per process. Bounded, so hostile input cannot grow it.
_GOOD_QUANTITIES: set[Any] = set()
_MAX_REMEMBERED = 65536

MAX_ERRORS = 20  # a wholly wrong file stops collecting here
SHOWN_ERRORS = 5  # ... and one message shows this many

# A path is built only when a field fails: (parent, key) pairs, key str for fields, int for list
# indexes and ("map", key) tuples for map keys.
Path_ = Any


def format_path(path: Path_) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif isinstance(key, tuple):
            parts.append(f"[{key[1]}]")
        else:
            parts.append(f".{key}" if path is not None else key)
    text = "".join(reversed(parts))
    return text[1:] if text.startswith(".") else text


@dataclass(frozen=True)
class FieldError:
    path: str  # spec.devices.requests[0].exactly.selector
    message: str  # unknown field "selector" (did you mean "selectors"?)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class _Walk:
    """One validation: the errors found and the hints for gated fields."""

    __slots__ = ("errors", "gates_on", "gate_hint", "gated_unknown", "_quantities")

    def __init__(self, gates_on: frozenset[str], gate_hint: str | None) -> None:
        self.errors: list[tuple[Path_, str]] = []
        self.gates_on = gates_on
        self.gate_hint = gate_hint
        self.gated_unknown: set[str] = set()  # gates whose (off) fields the object has
        self._quantities = _GOOD_QUANTITIES

    def fail(self, path: Path_, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append((path, message))

    # -- objects --------------------------------------------------------------------------

    def object(self, node: TypeNode, obj: Mapping[str, Any], path: Path_) -> None:
        fields = node.fields
        quantities = self._quantities
        for key, value in obj.items():
            spec = fields.get(key)
            if spec is None:
                self.fail((path, key), self._unknown(node, key))
                continue
            if value is None:
                if not spec.nullable:
                    self.fail((path, key), "Required value (null given)")
                continue
            kind = spec.kind
            # The commonest cases are checked inline, in order of frequency in a slice: a call per
            # field is most of the cost. Anything else, and every failure, goes through value().
            if kind == STR:
                if value.__class__ is not str:
                    self.fail((path, key), _wrong_type(spec, value))
                elif spec.enum is not None and value and value not in spec.enum:
                    self.fail((path, key), _unsupported(value, spec.enum))
            elif kind == QTY and value.__class__ is str and value in quantities:
                continue
            elif kind == REF and value.__class__ is dict:
                self.object(spec._node or spec.node, value, (path, key))
            elif kind == INT and value.__class__ is int and spec.bounds is not None \
                    and spec.bounds[0] <= value <= spec.bounds[1]:
                continue
            elif kind == BOOL and value.__class__ is bool:
                continue
            else:
                self.value(spec, value, (path, key))
        if node.required and not node.required_set <= obj.keys():
            for name in node.required:
                if name not in obj:
                    self.fail((path, name), "Required value")
        for group in node.one_of:
            given = [name for name in group if obj.get(name) is not None]
            if len(given) != 1:
                what = "both are set" if given else "neither is set"
                self.fail(path, f"must set exactly one of {', '.join(group)} ({what})")

    def value(self, spec: Field, value: Any, path: Path_) -> None:
        kind = spec.kind
        cls = value.__class__
        if kind == REF:
            if cls is dict or isinstance(value, Mapping):
                self.object(spec._node or spec.node, value, path)
            else:
                self.fail(path, _wrong_type(spec, value))
        elif kind == LIST:
            if cls is not list:
                self.fail(path, _wrong_type(spec, value))
                return
            item = spec.item
            assert item is not None
            node = (item._node or item.node) if item.kind == REF else None
            for i, element in enumerate(value):
                if node is not None and element.__class__ is dict:
                    self.object(node, element, (path, i))
                elif element is None:
                    if not item.nullable:
                        self.fail((path, i), "Required value (null given)")
                else:
                    self.value(item, element, (path, i))
        elif kind == MAP:
            if cls is not dict and not isinstance(value, Mapping):
                self.fail(path, _wrong_type(spec, value))
                return
            item = spec.item
            assert item is not None
            node = (item._node or item.node) if item.kind == REF else None
            for key, element in value.items():
                if key.__class__ is not str:
                    self.fail((path, ("map", key)), f"map keys must be strings, got {_type_name(key)}")
                elif node is not None and element.__class__ is dict:
                    self.object(node, element, (path, ("map", key)))
                elif element is not None:
                    self.value(item, element, (path, ("map", key)))
        elif kind == STR:
            if cls is not str:
                self.fail(path, _wrong_type(spec, value))
            elif spec.enum is not None and value and value not in spec.enum:
                self.fail(path, _unsupported(value, spec.enum))
        elif kind == BOOL:
            if cls is not bool:
                self.fail(path, _wrong_type(spec, value))
        elif kind == INT:
            if cls is not int:
                self.fail(path, _wrong_type(spec, value))
            elif spec.bounds is not None and not spec.bounds[0] <= value <= spec.bounds[1]:
                self.fail(path, f"{value} does not fit in {'32' if spec.bounds[1] < 2**32 else '64'} bits")
        elif kind == QTY:
            self.quantity(value, path)
        elif kind == NUM:
            if cls is bool or not isinstance(value, (int, float)):
                self.fail(path, _wrong_type(spec, value))
        elif kind == IOS:
            if cls is not str and cls is not int:
                self.fail(path, _wrong_type(spec, value))
        elif kind == ANY:
            if cls is not dict and not isinstance(value, Mapping):
                self.fail(path, _wrong_type(spec, value))

    def quantity(self, value: Any, path: Path_) -> None:
        cls = value.__class__
        if cls is str or cls is int:
            if value in self._quantities:
                return
            try:
                parse_quantity(value)
            except InputError as exc:
                self.fail(path, str(exc))
                return
            if len(self._quantities) < _MAX_REMEMBERED:
                self._quantities.add(value)
        elif cls is float:
            try:
                parse_quantity(repr(value))
            except InputError as exc:
                self.fail(path, str(exc))
        else:
            self.fail(path, f"expected a quantity (a string such as '40Gi', or a number), got {_type_name(value)}")

    # -- messages -------------------------------------------------------------------------

    def _unknown(self, node: TypeNode, key: Any) -> str:
        if not isinstance(key, str):
            return f"field names must be strings, got {_type_name(key)} {key!r}"
        message = f'unknown field "{key}"'
        gate = overlay.GATE_OF_FIELD.get(key)
        if gate is not None and gate not in self.gates_on:
            hint = f"; {self.gate_hint}" if self.gate_hint and not self.gated_unknown else ""  # said once
            self.gated_unknown.add(gate)
            return f"{message} (a {overlay.GATE_NAMES.get(gate, gate)} field: {gate} is off{hint})"
        guess = did_you_mean(node, key)
        return f"{message} (did you mean \"{guess}\"?)" if guess else message


def did_you_mean(node: TypeNode, key: str) -> str | None:
    """A field of `node` close to `key` (a typo), else `key` one level down (a misplaced field:
    `deviceClassName` on a v1 request belongs under `exactly`)."""
    names = list(node.fields)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.75)
    if not close:
        close = [n for n in names if n.lower() == key.lower()]
    if close:
        return close[0]
    for name, spec in node.fields.items():
        inner = spec
        while inner.kind == LIST and inner.item is not None:
            inner = inner.item
        if inner.kind == REF and key in inner.node.fields:
            return f"{name}.{key}" if inner is spec else f"{name}[].{key}"
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _wrong_type(spec: Field, value: Any) -> str:
    shown = repr(value) if isinstance(value, (str, int, float)) and len(repr(value)) <= 40 else ""
    return f"expected {KIND_NAMES[spec.kind]}, got {_type_name(value)}" + (f" {shown}" if shown else "")


def _unsupported(value: str, allowed: frozenset[str]) -> str:
    shown = value if len(value) <= 40 else value[:40] + "..."
    return f'Unsupported value: "{shown}": supported values: ' + ", ".join(f'"{v}"' for v in sorted(allowed))


class Proven:
    """Subtrees already found valid, by identity, for one set of gates: a value validated once need
    not be walked again while it is the same object. Worth it where many objects share most of
    their values: a fleet's slices are stamped from one template and share every value the stamp
    does not change (driver.fleet.template), so a stamped slice costs its changed paths only.

    Sound because the store's writers never change a value once they passed it in (their nested
    values are shared with what was stored), and each entry keeps its object alive, so an id is
    never reused for another object while it is remembered. At most `limit` entries (then it
    starts afresh)."""

    def __init__(self, gates_on: frozenset[str], limit: int = 200_000) -> None:
        self.gates_on = gates_on
        self.limit = limit
        self.seen: dict[int, tuple[Any, Any]] = {}

    def has(self, value: Any, node: Any) -> bool:
        hit = self.seen.get(id(value))
        return hit is not None and hit[0] is value and hit[1] is node

    def add(self, value: Any, node: Any) -> None:
        if len(self.seen) >= self.limit:
            self.seen.clear()
        self.seen[id(value)] = (value, node)


_SMALL = 3  # fields of an object (an attribute value, a quantity holder) below which memoizing costs more


class _ProvenWalk(_Walk):
    """A walk that skips subtrees `proven` holds and remembers the ones it finds valid."""

    __slots__ = ("proven",)

    def __init__(self, gates_on: frozenset[str], gate_hint: str | None, proven: Proven) -> None:
        super().__init__(gates_on, gate_hint)
        self.proven = proven

    def object(self, node: TypeNode, obj: Mapping[str, Any], path: Path_) -> None:
        if len(obj) <= _SMALL:  # as cheap to check as to look up: not remembered
            _Walk.object(self, node, obj, path)
            return
        if self.proven.has(obj, node):
            return
        errors, gated = len(self.errors), len(self.gated_unknown)
        super().object(node, obj, path)
        if len(self.errors) == errors and len(self.gated_unknown) == gated:
            self.proven.add(obj, node)

    def value(self, spec: Field, value: Any, path: Path_) -> None:
        if spec.kind != LIST and spec.kind != MAP:
            super().value(spec, value, path)
            return
        if self.proven.has(value, spec):
            return
        errors, gated = len(self.errors), len(self.gated_unknown)
        super().value(spec, value, path)
        if len(self.errors) == errors and len(self.gated_unknown) == gated:
            self.proven.add(value, spec)


def walk(node: TypeNode, obj: Mapping[str, Any], gates_on: frozenset[str],
         gate_hint: str | None, proven: Proven | None = None) -> tuple[list[FieldError], frozenset[str]]:
    """Every error of `obj` against `node` (at most MAX_ERRORS), in document order, and the gates
    whose fields `obj` has although they are off. `proven`: remembered valid subtrees (for the
    same gates) to skip and add to."""
    if proven is not None and proven.gates_on != gates_on:
        raise ValueError("a Proven memo is for one set of gates")
    run = _Walk(gates_on, gate_hint) if proven is None else _ProvenWalk(gates_on, gate_hint, proven)
    run.object(node, obj, None)
    return [FieldError(format_path(p), m) for p, m in run.errors], frozenset(run.gated_unknown)


def raise_for(errors: list[FieldError], where: str) -> None:
    if not errors:
        return
    shown = "; ".join(str(e) for e in errors[:SHOWN_ERRORS])
    more = len(errors) - SHOWN_ERRORS
    tail = f"; and {more}{'+' if len(errors) >= MAX_ERRORS else ''} more" if more > 0 else ""
    raise InputError(f"{where}: {shown}{tail}" if where else f"{shown}{tail}")
