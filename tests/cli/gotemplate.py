"""A small Go text/template renderer, for the tests only: kube-scheduler's own benchmark templates
(../shared/upstream/scheduler_perf/, rendered as scheduler_perf's createAny and createPods render
them) are Go templates, and the tests load what they render unchanged.

Covers what those templates use: `{{.Field}}`, `{{.}}`, variables (`$x := ...`, `$x`), pipelines
(`a | F`), parentheses, `range N` / `range $i := N` over an integer (Go 1.22), `if`/`else`/`end`,
`{{-`/`-}}` trimming, literals (numbers, strings, nil) and scheduler_perf's functions (create.go
and executor.go: AddInt, SubtractInt, MultiplyInt, DivideInt, Mod, Int, JSON) plus the builtins
`or`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`. Anything else raises ValueError, so a template using more
fails loudly instead of rendering wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r'\s*(\(|\)|\||:=|"(?:[^"\\]|\\.)*"|[^\s()|]+)')


def _go_json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"Int: cannot convert {value!r}")
    return int(value)


def _or(*args: Any) -> Any:
    for a in args:
        if a:
            return a
    return args[-1]


FUNCS = {
    "AddInt": lambda a, b: _int(a) + _int(b), "SubtractInt": lambda a, b: _int(a) - _int(b),
    "MultiplyInt": lambda a, b: _int(a) * _int(b), "DivideInt": lambda a, b: _int(a) // _int(b),
    "Mod": lambda a, b: _int(a) % _int(b), "Int": _int, "JSON": _go_json, "or": _or,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


class _Scope:
    def __init__(self, dot: Any, parent: _Scope | None = None) -> None:
        self.dot, self.parent, self.vars = dot, parent, {}

    def get(self, name: str) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        raise ValueError(f"undefined variable {name}")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"cannot tokenize {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _operand(tok: str, scope: _Scope, root: dict[str, Any]) -> Any:
    if tok == ".":
        return scope.dot
    if tok.startswith("."):
        value: Any = scope.dot
        for part in tok[1:].split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value
    if tok.startswith("$"):
        return scope.get(tok)
    if tok == "nil":
        return None
    if tok.startswith('"'):
        return json.loads(tok)
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    raise ValueError(f"unsupported operand {tok!r}")


def _pipeline(tokens: list[str], scope: _Scope, root: dict[str, Any]) -> Any:
    commands: list[list[Any]] = [[]]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(":
            depth, j = 1, i + 1
            while depth:
                depth += {"(": 1, ")": -1}.get(tokens[j], 0)
                j += 1
            commands[-1].append(("value", _pipeline(tokens[i + 1:j - 1], scope, root)))
            i = j
            continue
        if tok == "|":
            commands.append([])
        else:
            commands[-1].append(("token", tok))
        i += 1
    result: Any = None
    for n, command in enumerate(commands):
        head = command[0]
        if head[0] == "token" and head[1] in FUNCS:
            args = [a[1] if a[0] == "value" else _operand(a[1], scope, root) for a in command[1:]]
            if n:
                args.append(result)
            result = FUNCS[head[1]](*args)
        elif head[0] == "token" and head[1] not in FUNCS and re.fullmatch(r"[A-Za-z]\w*", head[1]):
            raise ValueError(f"unknown function {head[1]}")
        else:
            if len(command) != 1 or n:
                raise ValueError(f"cannot apply {command!r}")
            result = head[1] if head[0] == "value" else _operand(head[1], scope, root)
    return result


def _text(value: Any) -> str:
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(template: str, data: dict[str, Any]) -> str:
    """`template` executed with `data` as dot (scheduler_perf passes Index, Count and templateParams)."""
    parts: list[tuple[str, str]] = []
    pos = 0
    for m in _ACTION.finditer(template):
        text = template[pos:m.start()]
        if m.group(1):
            text = text.rstrip()
        parts.append(("text", text))
        parts.append(("action", m.group(2).strip()))
        pos = m.end()
        if m.group(3):
            rest = template[pos:]
            pos += len(rest) - len(rest.lstrip())
    parts.append(("text", template[pos:]))
    out: list[str] = []
    _execute(parts, 0, len(parts), _Scope(data), data, out)
    return "".join(out)


def _block_end(parts: list[tuple[str, str]], start: int) -> tuple[int | None, int]:
    """(index of this block's `else`, index of its `end`) for the block opened before `start`."""
    depth, orelse = 0, None
    for i in range(start, len(parts)):
        kind, text = parts[i]
        if kind != "action":
            continue
        word = text.split(None, 1)[0] if text else ""
        if word in ("range", "if", "with"):
            depth += 1
        elif word == "end":
            if depth == 0:
                return orelse, i
            depth -= 1
        elif word == "else" and depth == 0:
            orelse = i
    raise ValueError("missing {{end}}")


def _execute(parts: list[tuple[str, str]], start: int, stop: int, scope: _Scope, root: dict[str, Any],
             out: list[str]) -> None:
    i = start
    while i < stop:
        kind, text = parts[i]
        if kind == "text":
            out.append(text)
            i += 1
            continue
        tokens = _tokens(text)
        if tokens and tokens[0] in ("range", "if"):
            orelse, end = _block_end(parts, i + 1)
            body_end = orelse if orelse is not None else end
            if tokens[0] == "range":
                var = tokens[1] if len(tokens) > 2 and tokens[2] == ":=" else None
                count = _pipeline(tokens[3:] if var else tokens[1:], scope, root)
                items = range(count) if isinstance(count, int) else list(count or [])
                for item in items:
                    inner = _Scope(item, scope)
                    if var:
                        inner.vars[var] = item
                    _execute(parts, i + 1, body_end, inner, root, out)
                if not items and orelse is not None:
                    _execute(parts, orelse + 1, end, _Scope(scope.dot, scope), root, out)
            else:
                if _pipeline(tokens[1:], scope, root):
                    _execute(parts, i + 1, body_end, _Scope(scope.dot, scope), root, out)
                elif orelse is not None:
                    _execute(parts, orelse + 1, end, _Scope(scope.dot, scope), root, out)
            i = end + 1
            continue
        if len(tokens) > 1 and tokens[1] == ":=":
            scope.vars[tokens[0]] = _pipeline(tokens[2:], scope, root)
        elif tokens:
            out.append(_text(_pipeline(tokens, scope, root)))
        i += 1
