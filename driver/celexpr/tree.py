"""The syntax tree of a CEL expression (driver.celexpr.syntax builds it, cost.py walks it), and
the macro expansions cel-go's parser applies while building it (cel-go parser/macro.go): `has`,
and `all`, `exists`, `exists_one`, `map` (2 or 3 arguments), `filter` as comprehensions, because
the expanded comprehension is what cel-go costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ACCU = "@result"  # cel-go parser.HiddenAccumulatorName
NAMESPACES = frozenset({"lists", "sets", "math", "strings", "base64", "cel"})  # of namespaced functions


class CelSyntaxError(Exception):
    """The text is not CEL this parser understands, or nests too deeply."""


@dataclass(eq=False)
class Node:
    """One expression. `kind`: lit, ident, select, call, list, map, struct, comp.

    lit: `value` (Python value; str for string, bytes for bytes), `lit_type` (int, uint, double,
    string, bytes, bool, null). ident: `name`. select: `operand` (args[0]), `name` (field),
    `test_only` (has()). call: `name` (function or operator such as `_+_`), `target` (member
    calls) and `args`. list: `args`. map: `entries` [(key, value)]. struct: `name`, `entries`
    [(field, value)]. comp: `iter_var`, `accu_var`, and `args` = [range, init, condition, step,
    result]. `start`/`end` are offsets of the node's text in the expression.
    """

    kind: str
    start: int = 0
    end: int = 0
    name: str = ""
    value: Any = None
    lit_type: str = ""
    target: Node | None = None
    args: list[Node] = field(default_factory=list)
    entries: list[tuple[Any, Node]] = field(default_factory=list)
    test_only: bool = False
    iter_var: str = ""
    accu_var: str = ""

    @property
    def operand(self) -> Node:
        return self.args[0]


def qualified_name(node: Node) -> str | None:
    if node.kind == "ident":
        return node.name
    if node.kind == "select" and not node.test_only:
        base = qualified_name(node.operand)
        return None if base is None else f"{base}.{node.name}"
    return None


def global_call(name: str, start: int, args: list[Node], end: int, leading_dot: bool = False) -> Node:
    """`name(args...)`, or the presence test `has()` expands to."""
    if name == "has" and not leading_dot:
        if len(args) != 1 or args[0].kind != "select":
            raise CelSyntaxError("invalid argument to has() macro")
        sel = args[0]
        return Node("select", start, end, name=sel.name, args=[sel.operand], test_only=True)
    return Node("call", start, end, name=("." if leading_dot else "") + name, args=args)


def member_call(target: Node, name: str, args: list[Node], end: int) -> Node:
    """A receiver-style call, or the comprehension a macro expands to (cel-go parser/macro.go)."""
    start = target.start
    if qualified_name(target) in NAMESPACES:  # `lists.range(n)`: one function, as cel-go resolves it
        return Node("call", start, end, name=f"{qualified_name(target)}.{name}", args=args)
    quantifier = name in ("all", "exists", "exists_one") and len(args) == 2
    mapping = (name == "map" and len(args) in (2, 3)) or (name == "filter" and len(args) == 2)
    if not (quantifier or mapping):
        return Node("call", start, end, name=name, target=target, args=args)
    if args[0].kind != "ident":
        raise CelSyntaxError(f"{name}() macro: the first argument must be a simple name")
    var = args[0].name
    if var == ACCU:
        raise CelSyntaxError("iteration variable overwrites accumulator variable")

    def accu() -> Node:
        return Node("ident", start, end, name=ACCU)

    def call(fn: str, *xs: Node) -> Node:
        return Node("call", start, end, name=fn, args=list(xs))

    def lit(value: Any, lit_type: str) -> Node:
        return Node("lit", start, end, value=value, lit_type=lit_type)

    if name == "all":
        init, cond = lit(True, "bool"), call("@not_strictly_false", accu())
        step, result = call("_&&_", accu(), args[1]), accu()
    elif name == "exists":
        init, cond = lit(False, "bool"), call("@not_strictly_false", call("!_", accu()))
        step, result = call("_||_", accu(), args[1]), accu()
    elif name == "exists_one":
        init, cond = lit(0, "int"), lit(True, "bool")
        step = call("_?_:_", args[1], call("_+_", accu(), lit(1, "int")), accu())
        result = call("_==_", accu(), lit(1, "int"))
    else:
        transform = args[0] if name == "filter" else args[-1]
        init, cond, result = Node("list", start, end), lit(True, "bool"), accu()
        step = call("_+_", accu(), Node("list", start, end, args=[transform]))
        if name == "filter" or len(args) == 3:
            step = call("_?_:_", args[1], step, accu())
    return Node("comp", start, end, iter_var=var, accu_var=ACCU, args=[target, init, cond, step, result])
