"""`-o jsonpath=TEMPLATE` as kubectl prints it (the grammar of k8s.io/client-go/util/jsonpath).

A template is text with actions in braces. Inside an action:

    .a.b  ['a']  ["a"]   fields (a missing one gives nothing, as kubectl's default
                         --allow-missing-template-keys); `\\.` escapes a dot in a name
    ['a.b']              a quoted name in brackets is a path, as upstream parses it
    ..name               recursive descent: `name` in every object below
    *  [*]               every value of an object or element of a list
    [n] [-1] [a:b:s]     index, from the end, slice with step
    [a,b]                union (each part as if in brackets alone)
    [?(@.x=="v")]        filter elements: ==, !=, <, >, <=, >=, or [?(@.x)] "has x"
    range ... end        repeat the enclosed part of the template for each result
    "text" 'text'        literal text with escapes ({"\\n"}, {"\\t"})
    @ $                  the current object / the root (both start where the action is applied)

Several results of one action are separated by a space; strings print as they are, numbers and
booleans as JSON does, objects and lists as compact JSON with sorted keys. Errors (a template
that does not parse, an index out of range, a filter on a non-list) are InputErrors naming the
template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.errors import InputError

_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_FILTER = re.compile(r"^([^!<>=]+)(==|!=|<=|>=|<|>)(.+?)$")
_TERMINATORS = set(" \t\r\n.,[]$@{}")


class JsonPathError(Exception):
    """A template that does not parse or cannot be applied; the caller names the template."""


# --- parse tree ------------------------------------------------------------------------------

@dataclass
class Text:
    text: str


@dataclass
class Field:
    name: str


@dataclass
class Wildcard:
    pass


@dataclass
class Recursive:
    pass


@dataclass
class Index:
    start: int | None
    end: int | None
    step: int | None
    single: bool  # [n]: one element (end derived from start)


@dataclass
class Union:
    parts: list[list[Any]]


@dataclass
class Filter:
    left: list[Any]
    op: str
    right: list[Any]


@dataclass
class Literal:
    value: Any  # int, float or bool on the right of a filter


@dataclass
class Identifier:
    name: str  # range | end


@dataclass
class Action:
    ops: list[Any]


@dataclass
class Range:
    ops: list[Any]
    body: list[Any] = field(default_factory=list)


# --- parser -----------------------------------------------------------------------------------

def _unquote(text: str) -> str:
    quote, inner = text[0], text[1:-1]
    if quote == "'":
        inner = inner.replace('"', '\\"').replace("\\'", "'")
    try:
        return json.loads(f'"{inner}"')
    except ValueError:
        raise JsonPathError(f"cannot unquote {text}") from None


def _parse_ops(text: str) -> list[Any]:
    """The operations of one action's text (without braces)."""
    ops: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("[?(", i):
            i = _parse_filter(text, i, ops)
        elif text.startswith("..", i):
            if ops and isinstance(ops[-1], Recursive):
                raise JsonPathError("invalid multiple recursive descent")
            ops.append(Recursive())
            i += 2
            if i < n and (text[i].isalnum() or text[i] == "_"):
                i = _parse_field(text, i, ops)
        elif ch in " \t@$":
            i += 1
        elif ch == "[":
            close = text.find("]", i)
            if close < 0:
                raise JsonPathError("unterminated array")
            _parse_brackets(text[i + 1:close], ops)
            i = close + 1
        elif ch in "\"'":
            j = i + 1
            while j < n and not (text[j] == ch and text[j - 1] != "\\"):
                j += 1
            if j >= n:
                raise JsonPathError("unterminated quoted string")
            ops.append(Text(_unquote(text[i:j + 1])))
            i = j + 1
        elif ch == ".":
            i = _parse_field(text, i + 1, ops)
        elif ch in "+-" or ch.isdigit():
            j = i + 1
            while j < n and (text[j].isdigit() or text[j] == "."):
                j += 1
            number = text[i:j]
            try:
                ops.append(Literal(int(number)))
            except ValueError:
                try:
                    ops.append(Literal(float(number)))
                except ValueError:
                    raise JsonPathError(f"cannot parse number {number}") from None
            i = j
        elif ch.isalnum() or ch == "_":
            j = i
            while j < n and text[j] not in _TERMINATORS:
                j += 1
            word = text[i:j]
            ops.append(Literal(word == "true") if word in ("true", "false") else Identifier(word))
            i = j
        else:
            raise JsonPathError(f"unrecognized character in action: {ch!r}")
    return ops


def _parse_field(text: str, i: int, ops: list[Any]) -> int:
    j = i
    while j < len(text) and text[j] not in _TERMINATORS:
        j += 2 if text[j] == "\\" else 1
    name = text[i:j].replace("\\", "")
    ops.append(Wildcard() if name == "*" else Field(name))
    return j


def _parse_brackets(inner: str, ops: list[Any]) -> None:
    if inner == "*":
        inner = ":"
    if "," in inner:
        ops.append(Union([_parse_ops(f"[{part.strip()}]") for part in inner.split(",")]))
        return
    key = re.fullmatch(r"'([^']*)'", inner) or re.fullmatch(r'"([^"]*)"', inner)
    if key:
        ops.extend(_parse_ops("." + key.group(1)))
        return
    match = _SLICE.fullmatch(inner)
    if match is None:
        raise JsonPathError(f"invalid array index {inner}")
    first, second, third = match.groups()
    start = int(first) if first else None
    if second is None:
        ops.append(Index(start if start is not None else 0, None, None, single=True))
        return
    end = int(second[1:]) if second and second[1:] else None
    step = int(third[1:]) if third and third[1:] else None
    ops.append(Index(start, end, step, single=False))


def _parse_filter(text: str, i: int, ops: list[Any]) -> int:
    j = i + 3
    quote = None
    while True:
        if j >= len(text):
            raise JsonPathError("unterminated filter")
        ch = text[j]
        if ch in "\"'" and (quote is None or (ch == quote and text[j - 1] != "\\")):
            quote = None if quote == ch else ch if quote is None else quote
        elif ch == ")" and quote is None:
            break
        j += 1
    if j + 1 >= len(text) or text[j + 1] != "]":
        raise JsonPathError("unclosed array, expected ]")
    inner = text[i + 3:j]
    match = _FILTER.fullmatch(inner)
    if match is None:
        ops.append(Filter(_parse_ops(inner), "exists", []))
    else:
        ops.append(Filter(_parse_ops(match.group(1)), match.group(2), _parse_ops(match.group(3))))
    return j + 2


def parse(template: str) -> list[Any]:
    """The template as Text, Action and Range nodes (a Range holds its body up to its `end`)."""
    root: list[Any] = []
    stack: list[list[Any]] = [root]
    pos = 0
    while pos < len(template):
        start = template.find("{", pos)
        if start < 0:
            stack[-1].append(Text(template[pos:]))
            break
        if start > pos:
            stack[-1].append(Text(template[pos:start]))
        end = _action_end(template, start + 1)
        ops = _parse_ops(template[start + 1:end])
        words = [o.name for o in ops if isinstance(o, Identifier)]
        if words and words[0] not in ("range", "end") or len(words) > 1:
            raise JsonPathError(f"unrecognized identifier {next(w for w in words if w not in ('range', 'end'))}"
                                if any(w not in ("range", "end") for w in words) else "range and end stand alone")
        if words == ["range"]:
            node = Range([o for o in ops if not isinstance(o, Identifier)])
            stack[-1].append(node)
            stack.append(node.body)
        elif words == ["end"]:
            if len(stack) == 1:
                raise JsonPathError("not in range, nothing to end")
            stack.pop()
        else:
            stack[-1].append(Action(ops))
        pos = end + 1
    if len(stack) > 1:
        raise JsonPathError("range without end")
    return root


def _action_end(template: str, i: int) -> int:
    quote = None
    while i < len(template):
        ch = template[i]
        if ch in "\r\n":
            break
        if quote:
            if ch == quote and template[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "}":
            return i
        i += 1
    raise JsonPathError("unclosed action")


# --- evaluation --------------------------------------------------------------------------------

def _children(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [value[k] for k in sorted(value)]
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


def _recursive(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        kids = _children(value)
        if kids:
            out.append(value)
            out.extend(_recursive(kids))
    return out


def _index(values: list[Any], op: Index) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if value is None:
            continue
        if not isinstance(value, (list, tuple)):
            raise JsonPathError(f"{type(value).__name__} is not array or slice")
        length = len(value)
        start = op.start or 0
        if start < 0:
            start += length
        if op.single:
            end = start + 1
        else:
            end = length if op.end is None else op.end + (length if op.end < 0 else 0)
        if end == start:
            continue
        if not 0 <= start < length:
            raise JsonPathError(f"array index out of bounds: index {start}, length {length}")
        if not 0 <= end <= length:
            raise JsonPathError(f"array index out of bounds: index {end - 1}, length {length}")
        if start > end:
            raise JsonPathError(f"starting index {start} is greater than ending index {end}")
        step = 1 if op.step is None else op.step
        if step <= 0:
            raise JsonPathError("step must be > 0")
        out.extend(value[start:end:step])
    return out


def _compare(left: Any, op: str, right: Any) -> bool:
    numbers = (int, float)
    if isinstance(left, bool) or isinstance(right, bool):
        same = isinstance(left, bool) and isinstance(right, bool)
    else:
        same = (isinstance(left, numbers) and isinstance(right, numbers)) or type(left) is type(right)
    if op in ("==", "!="):
        return (same and left == right) == (op == "==")
    if not same or not isinstance(left, (int, float, str)):
        raise JsonPathError(f"cannot compare {left!r} and {right!r} with {op}")
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op]


def _filter(values: list[Any], op: Filter) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if not isinstance(value, (list, tuple)):
            raise JsonPathError(f"{type(value).__name__} is not array or slice and cannot be filtered")
        for item in value:
            lefts = evaluate(op.left, [item])
            if op.op == "exists":
                if lefts:
                    out.append(item)
                continue
            rights = evaluate(op.right, [item])
            if not lefts or not rights:
                continue
            if len(lefts) > 1 or len(rights) > 1:
                raise JsonPathError("can only compare one element at a time")
            if _compare(lefts[0], op.op, rights[0]):
                out.append(item)
    return out


def evaluate(ops: list[Any], values: list[Any]) -> list[Any]:
    """Apply an action's operations to the current values."""
    for op in ops:
        if isinstance(op, Field):
            values = [v[op.name] for v in values if isinstance(v, Mapping) and op.name in v]
        elif isinstance(op, Wildcard):
            values = [child for v in values for child in _children(v)]
        elif isinstance(op, Recursive):
            values = _recursive(values)
        elif isinstance(op, Index):
            values = _index(values, op)
        elif isinstance(op, Union):
            values = [r for part in op.parts for r in evaluate(part, values)]
        elif isinstance(op, Filter):
            values = _filter(values, op)
        elif isinstance(op, Text):
            values = [op.text]
        elif isinstance(op, Literal):
            values = [op.value for _ in values]
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _execute(nodes: list[Any], root: Any, out: list[str]) -> None:
    for node in nodes:
        if isinstance(node, Text):
            out.append(node.text)
        elif isinstance(node, Action):
            out.append(" ".join(_text(v) for v in evaluate(node.ops, [root])))
        elif isinstance(node, Range):
            for value in evaluate(node.ops, [root]):
                _execute(node.body, value, out)


def render(template: str, data: Any) -> str:
    """The template applied to `data` (an object, or a v1 List of objects)."""
    try:
        nodes = parse(template)
        out: list[str] = []
        _execute(nodes, data, out)
    except JsonPathError as exc:
        raise InputError(f"-o jsonpath: {exc} (template {template!r})") from None
    return "".join(out)
