"""The part of Go's text/template that kube-scheduler's scheduler_perf templates use, for hack/bench_scheduler_perf.py.

scheduler_perf renders its object templates with Go's text/template (pkg.go.dev/text/template)
and the functions of test/integration/scheduler_perf/create.go (facts from their documentation and
the README of ../shared/upstream/scheduler_perf; no Go code is copied here):

- actions: `{{pipeline}}` (printed), `{{$x := pipeline}}` / `{{$x = pipeline}}`, `{{if}}` /
  `{{else if}}` / `{{else}}` / `{{end}}`, `{{range pipeline}}` and `{{range $v := pipeline}}` /
  `{{range $i, $v := pipeline}}` (over a list, a map in key order, or an integer n: 0 .. n-1, as Go
  1.22 allows), `{{with}}`, comments `{{/* */}}`, and `{{-` / `-}}` trimming the whitespace beside;
- pipelines: `a | f b` calls f(b, a); operands are `.`, `.field.field`, `$var.field`, numbers,
  "strings" and `raw strings`, true, false, nil and parenthesized pipelines;
- printing as fmt's %v: a missing map key is `<no value>`, lists `[a b]`, maps `map[k:v]`;
- truth as Go's: false, 0, nil and empty strings, lists and maps are false;
- functions: Go's `and or not eq ne lt le gt ge len index print printf`, and scheduler_perf's
  `AddInt SubtractInt MultiplyInt DivideInt Mod` with their float variants, `Int` (to an integer)
  and `JSON` (encoding/json, with its HTML-safe escaping).
Anything else is an error naming the template and the text around it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class TemplateError(Exception):
    pass


MISSING = object()  # a missing map key: prints as <no value>, false, nil to functions


# ---- lexing ----------------------------------------------------------------------------------------

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<declare>:=)
  | (?P<assign>=)
  | (?P<pipe>\|)
  | (?P<comma>,)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
  | (?P<field>(?:\.[A-Za-z0-9_]+)+|\.)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
""", re.X)


def _tokens(text: str, where: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TemplateError(f"{where}: cannot read {text[pos:pos + 20]!r} in {{{{{text}}}}}")
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup or "", m.group(0)))
    return out


# ---- parsing ---------------------------------------------------------------------------------------

@dataclass
class _Node:
    kind: str  # text | print | set | if | range | with
    text: str = ""
    pipe: list = field(default_factory=list)  # tokens
    names: list[str] = field(default_factory=list)  # variables declared or assigned
    declare: bool = True
    body: list[_Node] = field(default_factory=list)
    orelse: list[_Node] = field(default_factory=list)


def parse(source: str, name: str = "template") -> list[_Node]:
    """The template as a tree (TemplateError for what this subset does not read)."""
    pieces: list[tuple[str, str]] = []  # ("text", t) | ("action", a)
    pos = 0
    for m in _ACTION.finditer(source):
        text = source[pos:m.start()]
        if m.group(1):
            text = text.rstrip()
        if pieces and pieces[-1][0] == "trim":
            text = text.lstrip()
            pieces.pop()
        pieces.append(("text", text))
        pieces.append(("action", m.group(2).strip()))
        if m.group(3):
            pieces.append(("trim", ""))
        pos = m.end()
    tail = source[pos:]
    if pieces and pieces[-1][0] == "trim":
        tail = tail.lstrip()
        pieces.pop()
    pieces.append(("text", tail))
    nodes, rest = _block(pieces, 0, name, top=True)
    return nodes


def _block(pieces: list[tuple[str, str]], i: int, name: str, top: bool = False) -> tuple[list[_Node], int]:
    """Nodes up to the matching {{end}} / {{else}} (returned index points at it)."""
    out: list[_Node] = []
    while i < len(pieces):
        kind, text = pieces[i]
        if kind == "text":
            if text:
                out.append(_Node("text", text=text))
            i += 1
            continue
        where = f"{name}: {{{{{text}}}}}"
        if text.startswith("/*"):
            i += 1
            continue
        word = text.split(None, 1)[0] if text else ""
        if word in ("end", "else"):
            if top:
                raise TemplateError(f"{where}: unexpected {word}")
            return out, i
        if word in ("if", "range", "with"):
            node, i = _control(pieces, i, name, word, text)
            out.append(node)
            continue
        toks = _tokens(text, where)
        if len(toks) >= 2 and toks[0][0] == "var" and toks[1][0] in ("declare", "assign"):
            out.append(_Node("set", pipe=toks[2:], names=[toks[0][1]], declare=toks[1][0] == "declare"))
        else:
            out.append(_Node("print", pipe=toks))
        i += 1
    if not top:
        raise TemplateError(f"{name}: a block has no {{{{end}}}}")
    return out, i


def _control(pieces: list[tuple[str, str]], i: int, name: str, word: str, text: str) -> tuple[_Node, int]:
    """An if / range / with from piece `i` to its {{end}} (an {{else if}} shares its end)."""
    where = f"{name}: {{{{{text}}}}}"
    node = _Node(word)
    head = _tokens(text[len(word):], where)
    node.pipe = _range_vars(head, node, where) if word == "range" else head
    node.body, i = _block(pieces, i + 1, name)
    if i >= len(pieces):
        raise TemplateError(f"{where}: no {{{{end}}}}")
    closing = pieces[i][1]
    if closing == "end":
        return node, i + 1
    rest = closing[len("else"):].strip()
    if rest.split(None, 1)[0:1] in (["if"], ["with"]):
        inner, i = _control(pieces, i, name, rest.split(None, 1)[0], rest)
        node.orelse = [inner]
        return node, i
    node.orelse, i = _block(pieces, i + 1, name)
    if i >= len(pieces) or pieces[i][1] != "end":
        raise TemplateError(f"{where}: no {{{{end}}}} after {{{{else}}}}")
    return node, i + 1


def _range_vars(head: list[tuple[str, str]], node: _Node, where: str) -> list[tuple[str, str]]:
    for n in (2, 1):
        if len(head) > 2 * n - 1 and all(head[2 * k][0] == "var" for k in range(n)) \
                and all(head[2 * k + 1][0] == "comma" for k in range(n - 1)) and head[2 * n - 1][0] == "declare":
            node.names = [head[2 * k][1] for k in range(n)]
            return head[2 * n:]
    return head


# ---- evaluating ------------------------------------------------------------------------------------

def truth(value: Any) -> bool:
    if value is MISSING or value is None:
        return False
    if isinstance(value, (bool, int, float, str, list, tuple, dict)):
        return bool(value)
    return True


def show(value: Any) -> str:
    """fmt's %v."""
    if value is MISSING:
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if value != int(value) else str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(show(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{show(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _int(value: Any) -> int:
    if isinstance(value, bool) or value is MISSING or value is None:
        raise TemplateError(f"Int: cannot convert {show(value)} to an integer")
    if isinstance(value, (int, float)):
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise TemplateError(f"Int: cannot convert {value!r} to an integer") from None


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TemplateError(f"expected a number, got {show(value)}")
    return value


def _json(value: Any) -> str:
    text = json.dumps(None if value is MISSING else value, separators=(",", ":"), ensure_ascii=False)
    # encoding/json escapes <, > and & for HTML by default.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _or(*args: Any) -> Any:
    for a in args:
        if truth(a):
            return a
    return args[-1]


def _and(*args: Any) -> Any:
    for a in args:
        if not truth(a):
            return a
    return args[-1]


def _cmp(op: Callable[[Any, Any], bool]) -> Callable[..., bool]:
    def compare(a: Any, *bs: Any) -> bool:
        a = None if a is MISSING else a
        return all(op(a, None if b is MISSING else b) for b in bs)
    return compare


def _div(a: Any, b: Any) -> int:
    a, b = _int(a), _int(b)
    if b == 0:
        raise TemplateError("DivideInt: division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q  # Go truncates toward zero


def _mod(a: Any, b: Any) -> int:
    a, b = _int(a), _int(b)
    if b == 0:
        raise TemplateError("Mod: division by zero")
    return a - b * _div(a, b)


FUNCS: dict[str, Callable[..., Any]] = {
    "and": _and, "or": _or, "not": lambda a: not truth(a),
    "eq": lambda a, *bs: any((None if a is MISSING else a) == (None if b is MISSING else b) for b in bs),
    "ne": _cmp(lambda a, b: a != b), "lt": _cmp(lambda a, b: a < b), "le": _cmp(lambda a, b: a <= b),
    "gt": _cmp(lambda a, b: a > b), "ge": _cmp(lambda a, b: a >= b),
    "len": lambda a: len(a), "index": lambda a, *keys: _index(a, keys),
    "print": lambda *a: "".join(show(x) for x in a), "printf": lambda f, *a: _printf(f, a),
    "AddInt": lambda a, b: _int(a) + _int(b), "SubtractInt": lambda a, b: _int(a) - _int(b),
    "MultiplyInt": lambda a, b: _int(a) * _int(b), "DivideInt": _div, "Mod": _mod,
    "AddFloat": lambda a, b: float(_num(a)) + _num(b), "SubtractFloat": lambda a, b: float(_num(a)) - _num(b),
    "MultiplyFloat": lambda a, b: float(_num(a)) * _num(b), "DivideFloat": lambda a, b: float(_num(a)) / _num(b),
    "Int": _int, "JSON": _json,
}


def _index(value: Any, keys: tuple[Any, ...]) -> Any:
    for key in keys:
        if isinstance(value, Mapping):
            value = value.get(key, MISSING)
        else:
            value = value[_int(key)]
    return value


def _printf(fmt: str, args: tuple[Any, ...]) -> str:
    values = iter(args)
    return re.sub(r"%[-+ #0-9.]*([vdsqf%])", lambda m: "%" if m.group(1) == "%" else
                  (json.dumps(next(values)) if m.group(1) == "q" else show(next(values))), fmt)


class _Scope:
    def __init__(self, root: Any) -> None:
        self.frames: list[dict[str, Any]] = [{"$": root}]

    def get(self, name: str) -> Any:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise TemplateError(f"undefined variable {name}")

    def set(self, name: str, value: Any, declare: bool) -> None:
        if declare:
            self.frames[-1][name] = value
            return
        for frame in reversed(self.frames):
            if name in frame:
                frame[name] = value
                return
        raise TemplateError(f"undefined variable {name}")


def _field(value: Any, path: list[str]) -> Any:
    for name in path:
        if value is MISSING or value is None:
            return MISSING
        if isinstance(value, Mapping):
            value = value.get(name, MISSING)
        else:
            raise TemplateError(f"cannot read field {name} of {show(value)}")
    return value


def _pipeline(tokens: list[tuple[str, str]], dot: Any, scope: _Scope) -> Any:
    commands: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for tok in tokens:
        if tok[0] == "lparen":
            depth += 1
        elif tok[0] == "rparen":
            depth -= 1
        if tok[0] == "pipe" and depth == 0:
            commands.append([])
        else:
            commands[-1].append(tok)
    value: Any = MISSING
    for n, command in enumerate(commands):
        if not command:
            raise TemplateError("empty command in a pipeline")
        value = _command(command, dot, scope, value if n else None, n > 0)
    return value


def _operands(tokens: list[tuple[str, str]], dot: Any, scope: _Scope) -> list[Any]:
    out, i = [], 0
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "lparen":
            depth, j = 1, i + 1
            while j < len(tokens) and depth:
                depth += {"lparen": 1, "rparen": -1}.get(tokens[j][0], 0)
                j += 1
            if depth:
                raise TemplateError("unclosed (")
            out.append(_pipeline(tokens[i + 1:j - 1], dot, scope))
            i = j
            continue
        out.append(_operand(kind, text, dot, scope))
        i += 1
    return out


def _operand(kind: str, text: str, dot: Any, scope: _Scope) -> Any:
    if kind == "field":
        return dot if text == "." else _field(dot, text[1:].split("."))
    if kind == "var":
        name, *path = text.split(".")
        return _field(scope.get(name), path)
    if kind == "number":
        return float(text) if any(c in text for c in ".eE") else int(text)
    if kind == "string":
        return json.loads(text)
    if kind == "raw":
        return text[1:-1]
    if kind == "ident":
        if text in ("true", "false"):
            return text == "true"
        if text == "nil":
            return None
        raise TemplateError(f"function {text} used as a value")
    raise TemplateError(f"unexpected {text!r}")


def _command(tokens: list[tuple[str, str]], dot: Any, scope: _Scope, piped: Any, has_piped: bool) -> Any:
    kind, text = tokens[0]
    if kind == "ident" and text not in ("true", "false", "nil"):
        func = FUNCS.get(text)
        if func is None:
            raise TemplateError(f"function {text!r} not defined")
        args = _operands(tokens[1:], dot, scope) + ([piped] if has_piped else [])
        try:
            return func(*args)
        except TypeError as exc:
            raise TemplateError(f"{text}: {exc}") from None
    if has_piped or len(tokens) > 1 and tokens[0][0] != "lparen":
        raise TemplateError(f"cannot call {text!r}")
    values = _operands(tokens, dot, scope)
    if len(values) != 1:
        raise TemplateError(f"{text!r}: one value expected")
    return values[0]


def _iterate(value: Any) -> list[tuple[Any, Any]]:
    if value is MISSING or value is None:
        return []
    if isinstance(value, bool):
        raise TemplateError(f"range can't iterate over {show(value)}")
    if isinstance(value, int):
        return [(i, i) for i in range(value)]
    if isinstance(value, Mapping):
        return [(k, value[k]) for k in sorted(value)]
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    raise TemplateError(f"range can't iterate over {show(value)}")


def _run(nodes: list[_Node], dot: Any, scope: _Scope, out: list[str]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append(node.text)
        elif node.kind == "print":
            out.append(show(_pipeline(node.pipe, dot, scope)))
        elif node.kind == "set":
            scope.set(node.names[0], _pipeline(node.pipe, dot, scope), node.declare)
        elif node.kind in ("if", "with"):
            value = _pipeline(node.pipe, dot, scope)
            scope.frames.append({})
            try:
                if truth(value):
                    _run(node.body, value if node.kind == "with" else dot, scope, out)
                else:
                    _run(node.orelse, dot, scope, out)
            finally:
                scope.frames.pop()
        elif node.kind == "range":
            items = _iterate(_pipeline(node.pipe, dot, scope))
            if not items:
                _run(node.orelse, dot, scope, out)
            for key, item in items:
                frame: dict[str, Any] = {}
                if len(node.names) == 1:
                    frame[node.names[0]] = item
                elif len(node.names) == 2:
                    frame[node.names[0]], frame[node.names[1]] = key, item
                scope.frames.append(frame)
                try:
                    _run(node.body, item, scope, out)
                finally:
                    scope.frames.pop()


def render(source: str, data: Any, name: str = "template") -> str:
    """`source` executed with `data` as dot (TemplateError naming `name` when it cannot be)."""
    nodes = parse(source, name)
    out: list[str] = []
    try:
        _run(nodes, data, _Scope(data), out)
    except TemplateError as exc:
        raise TemplateError(f"{name}: {exc}") from None
    return "".join(out)
