"""A CEL parser that yields the syntax tree the cost estimator (cost.py) walks.

Why: the CEL library we evaluate with (common-expression-language, a Rust core) parses and runs
expressions but exposes no syntax tree and no cost estimate, while kube-apiserver refuses a DRA
selector whose worst-case cost cel-go estimates above the limit. Estimating needs the tree, so
this module parses the same grammar (cel-spec langdef.md; cel-go parser/gen/CEL.g4) into small
`Node`s (tree.py), with macros expanded the way cel-go's parser expands them (parser/macro.go:
`all`, `exists`, `exists_one`, `map` with 2 or 3 arguments, `filter`, `has`) because the expanded
comprehension is what cel-go costs.

It only ever sees text the library already compiled, so it is lenient where that is harmless
(escape sequences are decoded for their length, nothing more). As in cel-go:
- `&&` and `||` chains become balanced trees (its parser's logic manager), and runs of `!` or
  unary `-` collapse in pairs, so neither counts towards the nesting depth;
- a `-` directly before a number literal is part of the literal;
- nesting deeper than 250 levels (`parser.MaxRecursionDepth`'s default) is an error, and so is
  an expression over 100,000 code points (`expressionSizeCodePointLimit`; environment.py checks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from driver.celexpr.tree import CelSyntaxError, Node, global_call, member_call, qualified_name

__all__ = ["MAX_CODE_POINTS", "MAX_DEPTH", "CelSyntaxError", "Node", "parse"]

MAX_DEPTH = 250  # cel-go parser/parser.go NewParser: maxRecursionDepth defaults to 250
MAX_CODE_POINTS = 100_000  # cel-go parser/parser.go NewParser: expressionSizeCodePointLimit's default
RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                      "loop", "package", "namespace", "return", "var", "void", "while"})


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f]+|//[^\n]*)
  | (?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)|[0-9]+[uU]?)
  | (?P<str>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
  | (?P<id>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||\.\?|\[\?|[-+*/%<>!?:.,()\[\]{}])
""", re.VERBOSE | re.DOTALL)

_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        text = m.group(0)[1:]
        if text[0] in "xuU":
            return chr(int(text[1:], 16))
        if text[0] in "01234567" and len(text) == 3:
            return chr(int(text, 8))
        return _SIMPLE_ESCAPES.get(text, text)

    return _ESCAPE.sub(one, body)


def _string_literal(text: str) -> tuple[Any, str]:
    prefix = ""
    while text[0] not in "'\"":
        prefix += text[0].lower()
        text = text[1:]
    quote = text[:3] if text[:3] in ("'''", '"""') else text[0]
    body = text[len(quote):-len(quote)]
    if "r" not in prefix:
        body = _unescape(body)
    if "b" in prefix:
        return body.encode("utf-8", "surrogatepass"), "bytes"
    return body, "string"


@dataclass
class _Tok:
    kind: str  # num, str, id, op, end
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise CelSyntaxError(f"unexpected character {text[pos]!r} at offset {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(_Tok(kind, m.group(0), m.start(), m.end()))
        pos = m.end()
    out.append(_Tok("end", "", len(text), len(text)))
    return out


_BINARY = [  # precedence (higher binds tighter), operators
    (1, {"==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "in": "@in"}),
    (2, {"+": "_+_", "-": "_-_"}),
    (3, {"*": "_*_", "/": "_/_", "%": "_%_"}),
]
_PRECEDENCE = {tok: (prec, fn) for prec, ops in _BINARY for tok, fn in ops.items()}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    # -- token helpers ---------------------------------------------------------------------
    def peek(self) -> _Tok:
        return self.toks[self.i]  # never past the end token: take() stops there

    def at(self, text: str) -> bool:
        return self.toks[self.i].text == text  # only op and id tokens have these texts unquoted

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def expect(self, text: str) -> _Tok:
        if not self.at(text):
            tok = self.peek()
            raise CelSyntaxError(f"expected {text!r} at offset {tok.start}, found {tok.text or 'the end'!r}")
        return self.take()

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CelSyntaxError("max recursion depth exceeded")

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> Node:
        node = self.expr()
        if self.peek().kind != "end":
            raise CelSyntaxError(f"unexpected {self.peek().text!r} at offset {self.peek().start}")
        return node

    def expr(self) -> Node:
        self.nest()
        cond = self.logical("||", "_||_")
        if self.at("?"):
            self.take()
            yes = self.logical("||", "_||_")
            self.expect(":")
            no = self.expr()
            cond = Node("call", cond.start, no.end, name="_?_:_", args=[cond, yes, no])
        self.depth -= 1
        return cond

    def logical(self, op: str, fn: str) -> Node:
        parts = [self.logical("&&", "_&&_") if op == "||" else self.binary(1)]
        while self.at(op):
            self.take()
            parts.append(self.logical("&&", "_&&_") if op == "||" else self.binary(1))
        return _balance(parts, fn)

    def binary(self, min_prec: int) -> Node:
        left = self.unary()
        levels = 0
        while True:
            tok = self.peek()
            entry = _PRECEDENCE.get(tok.text) if tok.kind in ("op", "id") else None
            if entry is None or entry[0] < min_prec:
                break
            prec, fn = entry
            self.take()
            right = self.binary(prec + 1)
            left = Node("call", left.start, right.end, name=fn, args=[left, right])
            levels += 1
            self.nest()  # cel-go counts each Relation/Calc level of a chain
        self.depth -= levels
        return left

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("!", "-"):
            count = 0
            while self.at(tok.text):
                self.take()
                count += 1
            if tok.text == "-" and count % 2 == 1 and self.peek().kind == "num":
                num_end = self.peek().end
                operand = self.member()
                if operand.kind == "lit" and operand.end == num_end and operand.lit_type in ("int", "double"):
                    operand.value, operand.start = -operand.value, tok.start  # cel-go: a signed literal
                    return operand
                return Node("call", tok.start, operand.end, name="-_", args=[operand])
            operand = self.member()
            if count % 2 == 0:
                return operand
            return Node("call", tok.start, operand.end, name="!_" if tok.text == "!" else "-_", args=[operand])
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        levels = 0
        while True:
            if self.at(".") or self.at(".?"):
                if self.at(".?"):
                    raise CelSyntaxError("unsupported syntax '.?'")
                self.take()
                name = self.take()
                if name.kind != "id":
                    raise CelSyntaxError(f"expected a field name at offset {name.start}")
                if self.at("("):
                    self.take()
                    args = self.arguments(")")
                    end = self.expect(")").end
                    node = member_call(node, name.text, args, end)
                else:
                    node = Node("select", node.start, name.end, name=name.text, args=[node])
            elif self.at("[") or self.at("[?"):
                if self.at("[?"):
                    raise CelSyntaxError("unsupported syntax '[?'")
                self.take()
                index = self.expr()
                end = self.expect("]").end
                node = Node("call", node.start, end, name="_[_]", args=[node, index])
            elif self.at("{") and qualified_name(node) is not None:
                node = self.struct(node)
            else:
                break
            levels += 1
            self.nest()
        self.depth -= levels
        return node

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "num":
            return _number(tok)
        if tok.kind == "str":
            value, lit_type = _string_literal(tok.text)
            return Node("lit", tok.start, tok.end, value=value, lit_type=lit_type)
        if tok.kind == "id":
            if tok.text in ("true", "false"):
                return Node("lit", tok.start, tok.end, value=tok.text == "true", lit_type="bool")
            if tok.text == "null":
                return Node("lit", tok.start, tok.end, value=None, lit_type="null")
            if tok.text in RESERVED or tok.text == "in":
                raise CelSyntaxError(f"reserved identifier: {tok.text}")
            if self.at("("):
                self.take()
                args = self.arguments(")")
                end = self.expect(")").end
                return global_call(tok.text, tok.start, args, end)
            return Node("ident", tok.start, tok.end, name=tok.text)
        if tok.kind == "op" and tok.text == ".":
            name = self.take()
            if name.kind != "id":
                raise CelSyntaxError(f"expected an identifier at offset {name.start}")
            if self.at("("):
                self.take()
                args = self.arguments(")")
                end = self.expect(")").end
                return global_call(name.text, tok.start, args, end, leading_dot=True)
            return Node("ident", tok.start, name.end, name="." + name.text)
        if tok.kind == "op" and tok.text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if tok.kind == "op" and tok.text == "[":
            elems = self.arguments("]")
            end = self.expect("]").end
            return Node("list", tok.start, end, args=elems)
        if tok.kind == "op" and tok.text == "{":
            entries: list[tuple[Any, Node]] = []
            while not self.at("}"):
                key = self.expr()
                self.expect(":")
                entries.append((key, self.expr()))
                if not self.at(","):
                    break
                self.take()
            end = self.expect("}").end
            return Node("map", tok.start, end, entries=entries)
        raise CelSyntaxError(f"unexpected {tok.text or 'end of expression'!r} at offset {tok.start}")

    def struct(self, name_node: Node) -> Node:
        self.expect("{")
        entries: list[tuple[Any, Node]] = []
        while not self.at("}"):
            fname = self.take()
            if fname.kind != "id":
                raise CelSyntaxError(f"expected a field name at offset {fname.start}")
            self.expect(":")
            entries.append((fname.text, self.expr()))
            if not self.at(","):
                break
            self.take()
        end = self.expect("}").end
        return Node("struct", name_node.start, end, name=qualified_name(name_node) or "", entries=entries)

    def arguments(self, close: str) -> list[Node]:
        args: list[Node] = []
        while not self.at(close):
            args.append(self.expr())
            if not self.at(","):
                break
            self.take()
        return args


def _balance(parts: list[Node], fn: str) -> Node:
    """cel-go's logic manager: a chain of one logical operator as a balanced tree."""
    if len(parts) == 1:
        return parts[0]
    mid = len(parts) // 2
    left, right = _balance(parts[:mid], fn), _balance(parts[mid:], fn)
    return Node("call", left.start, right.end, name=fn, args=[left, right])


def _number(tok: _Tok) -> Node:
    text = tok.text
    if text[-1] in "uU":
        return Node("lit", tok.start, tok.end, value=int(text[:-1], 0), lit_type="uint")
    if text.lower().startswith("0x"):
        return Node("lit", tok.start, tok.end, value=int(text, 16), lit_type="int")
    if any(c in text for c in ".eE"):
        return Node("lit", tok.start, tok.end, value=float(text), lit_type="double")
    return Node("lit", tok.start, tok.end, value=int(text), lit_type="int")


def parse(text: str) -> Node:
    """The syntax tree of `text`; CelSyntaxError when it does not parse or nests too deeply."""
    try:
        return _Parser(text).parse()
    except RecursionError:
        raise CelSyntaxError("max recursion depth exceeded") from None
