"""The cost of one function or operator call, for cost.py's estimate.

Rules and their sources (see cost.py for the whole picture):
- operators and the CEL standard functions: cel-go checker/cost.go `costCall` / `functionCost`;
- quantity, semver, string and list extensions of Kubernetes: k8s.io/apiserver
  pkg/cel/library/cost.go `CostEstimator.EstimateCallCost`;
- `sort`, `distinct`, `flatten`, `slice`, `reverse`, `lists.range`: cel-go ext/lists.go
  `estimate*`; `sets.*`: ext/sets.go `estimateSetsCost`; `includes`: DRA compile.go
  `draCostEstimator`.
A call whose argument types leave several overloads open (a `dyn` attribute value, say) costs
the dearest of them, as cel-go's union over the checker's overload candidates does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driver.celexpr.cost import (
    DYN,
    INCLUDES_MAX,
    LIST_CREATE,
    MAX_U64,
    REGEX_FACTOR,
    STRING_FACTOR,
    UNKNOWN,
    Range,
    _could_be,
    _join,
    _kind,
    fixed,
    r_add,
    r_factor,
    r_mul,
    r_union,
    size_of_path,
)
from driver.celexpr.tree import ACCU, Node

if TYPE_CHECKING:
    from driver.celexpr.cost import Coster

_ONE = fixed(1)
_ARITH = frozenset({"_-_", "_*_", "_/_", "_%_", "-_"})
_COMPARE = frozenset({"_<_", "_<=_", "_>_", "_>=_"})
_UNIT_K8S = frozenset({"sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                       "compareTo", "add", "sub", "major", "minor", "patch"})
_TRAVERSING = frozenset({"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes"})
# Functions the library's Rust core evaluates; every other function is a Python callback, which
# costs 2-110 us a call here (measured, quantity() and semver() the dearest: their values travel as
# maps) where a unit of cel-go's cost takes 0.1-0.4 us in our evaluator's own loops.
PYTHON_CALL = 100
NATIVE = frozenset({"size", "startsWith", "endsWith", "matches", "int", "uint", "double", "string", "bytes",
                    "bool", "type", "timestamp", "duration", "dyn"})
RESULT_TYPES: dict[str, Any] = {
    "size": "int", "contains": "bool", "startsWith": "bool", "endsWith": "bool", "matches": "bool",
    "int": "int", "uint": "uint", "double": "double", "string": "string", "bytes": "bytes", "bool": "bool",
    "type": "type", "timestamp": "timestamp", "duration": "duration",
    "quantity": "quantity", "semver": "semver", "isQuantity": "bool", "isSemver": "bool", "isGreaterThan": "bool",
    "isLessThan": "bool", "isInteger": "bool", "compareTo": "int", "sign": "int", "asInteger": "int",
    "major": "int", "minor": "int", "patch": "int", "asApproximateFloat": "double", "add": "quantity",
    "sub": "quantity", "lowerAscii": "string", "upperAscii": "string", "trim": "string", "substring": "string",
    "replace": "string", "charAt": "string", "strings.quote": "string", "join": "string", "indexOf": "int",
    "lastIndexOf": "int", "split": ("list", "string"), "lists.range": ("list", "int"), "includes": "bool",
    "find": "string", "findAll": ("list", "string"), "sets.contains": "bool", "sets.intersects": "bool", "sets.equivalent": "bool", "isSorted": "bool",
}


@dataclass
class Arg:
    """cel-go's checker.AstNode for a call argument: its path, type and computed size."""

    expr: Node | None
    path: list[str] | None
    type: Any
    size: Range | None


def _size(c: Coster, a: Arg) -> Range:
    """k8s library `sizeEstimate`: the computed size, else the estimator's, else unknown."""
    if a.size is not None:
        return a.size
    estimate = size_of_path(a.path, c.bounds)
    return UNKNOWN if estimate is None else estimate


def _arg(c: Coster, e: Node) -> Arg:
    path = c.path_of(e)
    if path and path[0] == ACCU:
        path = None
    return Arg(e, path, c.type_of(e), c.size_of(e))


def _literal_uint(a: Arg, default: int) -> int:
    if a.expr is not None and a.expr.kind == "lit" and a.expr.lit_type in ("int", "uint") and a.expr.value >= 0:
        return int(a.expr.value)
    return default


def _element(a: Arg) -> Arg | None:
    """k8s `listElementNode`: the first type parameter of a list (item) or map (key)."""
    if _kind(a.type) not in ("list", "map"):
        return None
    return Arg(None, None if a.path is None else [*a.path, "@items"], a.type[1], None)


def _string_compare(c: Coster, lhs: Arg, rhs: Arg) -> Range:
    smallest = min(_size(c, lhs)[1], _size(c, rhs)[1])
    return r_factor((1 if smallest > 0 else 0, smallest), STRING_FACTOR)


def _allocating_list(factor: float, size: Range) -> tuple[Range, Range]:
    """cel-go ext/lists.go `estimateAllocatingListCall`."""
    return r_add(r_add(r_factor(size, factor), _ONE), fixed(LIST_CREATE)), size


def cost_call(c: Coster, e: Node) -> Range:
    """cel-go `coster.costCall` for `e`, recording its type, path and result size on `c`."""
    name = e.name
    if name == "dyn" and e.target is None and len(e.args) == 1:
        total = r_add(_ONE, c.cost(e.args[0]))
        if (size := c.size_of(e.args[0])) is not None:
            c.sizes[id(e)] = size
        if (entry := c.entry_of(e.args[0])) is not None:
            c.entries[id(e)] = entry
        c.types[id(e)] = DYN
        return total
    arg_costs = [c.cost(a) for a in e.args]
    args = [_arg(c, a) for a in e.args]
    total = (0, 0)
    target: Arg | None = None
    if e.target is not None:
        total = c.cost(e.target)
        target = _arg(c, e.target)
    cost, size = _function(c, e, name, target, args, arg_costs)
    if name == "_[_]":
        container = args[0]
        sub = "@values" if _could_be(container.type, "map") else "@items"
        c.paths[id(e)] = None if container.path is None else [*container.path, sub]
        entry = c.entry_of(e.args[0])
        size = entry[2] if entry is not None else None
        c.types[id(e)] = container.type[2] if _kind(container.type) == "map" else \
            container.type[1] if _kind(container.type) == "list" else DYN
    if size is None:
        size = c.size_of(e)
    if size is not None:
        c.sizes[id(e)] = size
    return r_add(total, cost)


def _function(c: Coster, e: Node, name: str, target: Arg | None, args: list[Arg],
              arg_costs: list[Range]) -> tuple[Range, Range | None]:
    """(cost of the call including its arguments, result size or None); sets the call's type."""
    summed = (0, 0)
    for ac in arg_costs:
        summed = r_add(summed, ac)
    types = c.types
    if name in ("_&&_", "_||_"):
        types[id(e)] = "bool"
        lhs, rhs = arg_costs
        return (lhs[0], r_add(lhs, rhs)[1]), None
    if name == "_?_:_":
        size = r_union(_size(c, args[1]), _size(c, args[2]))
        e1, e2 = c.entry_of(e.args[1]), c.entry_of(e.args[2])
        if e1 is not None and e2 is not None:
            c.entries[id(e)] = (e1[0], r_union(e1[1], e2[1]), r_union(e1[2], e2[2]))
        types[id(e)] = _join(args[1].type, args[2].type)
        return r_add(arg_costs[0], r_union(arg_costs[1], arg_costs[2])), size
    if name in ("_==_", "_!=_"):
        types[id(e)] = "bool"
        if args[0].type == args[1].type and args[0].type in ("quantity", "semver"):
            return r_add(_ONE, summed), None  # k8s library: O(1) equality of quantities and versions
        return r_add(_string_compare(c, args[0], args[1]), summed), None
    if name in _COMPARE:
        types[id(e)] = "bool"
        options = [r_add(_ONE, summed)]
        for kind in ("string", "bytes"):
            if _could_be(args[0].type, kind) and _could_be(args[1].type, kind):
                options.append(r_add(_string_compare(c, args[0], args[1]), summed))
        return _union_all(options), None
    if name == "@in":
        types[id(e)] = "bool"
        container = args[1].type
        options = []
        if _could_be(container, "list"):
            options.append(r_add(_size(c, args[1]), summed))  # InList: O(n)
        if _could_be(container, "map") or not options:
            options.append(r_add(_ONE, summed))
        return _union_all(options), None
    if name == "_+_":
        return _add(c, e, args, summed)
    if name in _ARITH:
        types[id(e)] = args[0].type if args[0].type in ("int", "uint", "double", "duration", "timestamp") else DYN
        return r_add(_ONE, summed), None
    if name in ("!_", "@not_strictly_false"):
        types[id(e)] = "bool"
        return r_add(_ONE, summed), None
    if name == "_[_]":
        return r_add(_ONE, summed), None
    return _named(c, e, name, target, args, summed)


# longer than any printed int (-9223372036854775808), uint, double or bool
_LONGEST_SCALAR_TEXT = 32


def _union_all(options: list[Range]) -> Range:
    out = options[0]
    for o in options[1:]:
        out = r_union(out, o)
    return out


def _add(c: Coster, e: Node, args: list[Arg], summed: Range) -> tuple[Range, Range | None]:
    lhs, rhs = args
    options: list[Range] = []
    size: Range | None = None
    grows = [k for k in ("string", "bytes", "list") if _could_be(lhs.type, k) and _could_be(rhs.type, k)]
    if grows:
        result = r_add(_size(c, lhs), _size(c, rhs))
        size = result
        e1, e2 = c.entry_of(e.args[0]), c.entry_of(e.args[1])
        if e1 is not None and e2 is not None:
            c.entries[id(e)] = (e1[0], r_union(e1[1], e2[1]), r_union(e1[2], e2[2]))
        for kind in grows:
            if kind == "list":
                # O(1) concatenation in cel-go, size tracked; our evaluator copies both lists
                options.append(r_add(r_add(_ONE, summed), result if c.strict else (0, 0)))
            else:
                options.append(r_add(r_factor(result, STRING_FACTOR), summed))
    if not grows or lhs.type == DYN or rhs.type == DYN:
        options.append(r_add(_ONE, summed))
    c.types[id(e)] = _join(lhs.type, rhs.type) if _kind(lhs.type) == _kind(rhs.type) else DYN
    return _union_all(options), size


def _named(c: Coster, e: Node, name: str, target: Arg | None, args: list[Arg],
           summed: Range) -> tuple[Range, Range | None]:
    """Functions called by name, as methods or (our library allows both) as globals."""
    recv, rest = (target, args) if target is not None else ((args[0], args[1:]) if args else (None, args))
    c.types[id(e)] = RESULT_TYPES.get(name, DYN)
    if c.strict and name not in NATIVE:
        # A Python function: the call itself (PYTHON_CALL units), and its lists and maps, which
        # our evaluator hands over element by element.
        summed = r_add(summed, fixed(PYTHON_CALL))
        for a in (recv, *rest) if recv is not None else ():
            if _kind(a.type) in ("list", "map", DYN):
                summed = r_add(summed, _size(c, a))
    plus = lambda cost: r_add(cost, summed)  # noqa: E731 - every rule adds the arguments' costs
    if recv is None:
        return plus(_ONE), None
    if c.strict and name == "string":
        # our own bound only: string() of text is that text, of a number or bool a short text,
        # so `'numa' + string(n)` costs what it spends (cel-go's estimate leaves the size
        # unknown, and admission keeps that)
        return plus(_ONE), (0, max(_size(c, recv)[1], _LONGEST_SCALAR_TEXT))
    size = _size(c, recv)
    if name in ("quantity", "isQuantity", "semver", "isSemver"):
        return plus(r_factor(_size(c, args[0]) if args else UNKNOWN, STRING_FACTOR)), None
    if name in _UNIT_K8S or name == "size":
        return plus(_ONE), None
    if name in ("startsWith", "endsWith"):
        return plus(r_factor(_size(c, rest[0]) if rest else UNKNOWN, STRING_FACTOR)), None
    if name in ("matches", "find", "findAll") and rest:  # cel-go MatchesString; k8s library find, findAll
        text = r_factor(r_add(size, _ONE), STRING_FACTOR)
        cost = plus(r_mul(text, r_factor(_size(c, rest[0]), REGEX_FACTOR)))
        return cost, (None if name == "matches" else (0, size[1]))
    if name == "contains" and rest:
        options = [plus(r_mul(r_factor(size, STRING_FACTOR), r_factor(_size(c, rest[0]), STRING_FACTOR)))]
        if _could_be(recv.type, "list"):
            options.append(plus(size))  # our library's list `contains`: a traversal, like `in`
        return _union_all(options), None
    if name in ("lowerAscii", "upperAscii", "substring", "trim"):
        return plus(r_factor(size, STRING_FACTOR)), size
    if name == "replace" and len(rest) >= 2:
        return plus(r_factor(size, 2 * STRING_FACTOR)), _replace_size(size, _size(c, rest[0]), _size(c, rest[1]))
    if name == "split":
        limit = _literal_uint(rest[1], size[1]) if len(rest) > 1 else size[1]
        return plus(r_factor(size, 2 * STRING_FACTOR)), (0, limit)
    if name == "join":
        return _join_cost(c, recv, rest, plus)
    if name in _TRAVERSING:
        return _traversal(c, name, recv, plus, target is not None)
    if name == "strings.quote":
        return plus(r_factor(size, STRING_FACTOR)), (size[0] + 2, min(MAX_U64, size[1] * 2 + 2))
    if name == "string" and recv.type == "bytes" or name == "bytes" and recv.type == "string":
        grown = (size[0] // 4, size[1]) if name == "string" else (size[0], min(MAX_U64, size[1] * 4))
        return plus(r_factor(size, STRING_FACTOR)), grown
    return _list_extension(c, e, name, recv, rest, plus)


def _replace_size(sz: Range, old: Range, new: Range) -> Range:
    """k8s library `replace`: the result's size range."""
    lo_count = hi_count = 0
    lo_kept = hi_kept = 0
    if old[0] == 0:
        hi_count, hi_kept = (sz[1] + 1 if sz[1] < MAX_U64 else sz[1]), sz[1]
    elif new[1] <= old[0]:
        hi_kept = sz[1]
    else:
        hi_count = -(-sz[1] // old[0])
    if old[1] == 0:
        lo_count, lo_kept = (sz[0] + 1 if sz[0] < MAX_U64 else sz[0]), sz[0]
    elif old[1] <= new[0]:
        lo_kept = sz[0]
    else:
        lo_count = -(-sz[0] // old[1])
    return r_add(r_mul((lo_count, hi_count), new), (lo_kept, hi_kept))


def _join_cost(c: Coster, recv: Arg, rest: list[Arg], plus: Any) -> tuple[Range, Range | None]:
    count = _size(c, recv)
    element = _element(recv)
    size = r_mul(count, _size(c, element)) if element is not None else (0, 0)
    if rest:
        separators = (max(0, count[0] - 1), max(0, count[1] - 1) if count[1] < MAX_U64 else MAX_U64)
        size = r_add(size, r_mul(_size(c, rest[0]), separators))
    return plus(r_factor(size, STRING_FACTOR)), size


def _traversal(c: Coster, name: str, recv: Arg, plus: Any, is_member: bool) -> tuple[Range, Range | None]:
    """k8s library `isSorted`, `sum`, `max`, `min`, `indexOf`, `lastIndexOf`; DRA `includes`."""
    if name == "includes" and is_member:
        return plus(fixed(INCLUDES_MAX)), None
    per_item = _ONE
    element = _element(recv)
    if element is not None:
        if _kind(element.type) in ("string", "bytes"):
            per_item = r_add(per_item, r_factor(_size(c, element), STRING_FACTOR))
        return plus(r_mul(_size(c, recv), per_item)), None
    if name == "includes":
        return plus(r_mul(_size(c, recv), per_item)), None
    if name in ("sum", "max", "min") and _kind(recv.type) not in ("string", DYN):
        return plus(_ONE), None  # max(1, 2): scalars, not a list
    return plus(r_factor(_size(c, recv), STRING_FACTOR)), None


def _list_extension(c: Coster, e: Node, name: str, recv: Arg, rest: list[Arg], plus: Any) -> tuple[Range, Range | None]:
    size = _size(c, recv)
    if name == "reverse":
        c.types[id(e)] = recv.type
        options = []
        if _could_be(recv.type, "list"):
            options.append(_allocating_list(1, size)[0])
        if _could_be(recv.type, "string") or not options:
            options.append(r_add(r_factor(size, STRING_FACTOR), _ONE))
        return plus(_union_all(options)), size
    if name in ("distinct", "sort"):
        c.types[id(e)] = recv.type
        factor = 2.1 if name == "sort" and _kind(recv.type[1] if _kind(recv.type) == "list" else DYN) in ("string", "bytes") else 2.0
        cost, out = _allocating_list(factor, r_mul(size, size))
        return plus(cost), out
    if name == "flatten":
        c.types[id(e)] = ("list", DYN)
        depth = _literal_uint(rest[0], MAX_U64) if rest else 1
        return plus(_allocating_list(depth, size)[0]), size
    if name == "slice" and len(rest) == 2:
        c.types[id(e)] = recv.type
        start, end = _literal_uint(rest[0], 0), _literal_uint(rest[1], size[1])
        cost, out = _allocating_list(1, fixed(max(0, end - start)))
        return plus(cost), out
    if name == "lists.range":
        cost, out = _allocating_list(1, fixed(_literal_uint(recv, MAX_U64)))
        return plus(cost), out
    if name in ("sets.contains", "sets.intersects", "sets.equivalent") and rest:
        factor = 2.0 if name == "sets.equivalent" else 1.0
        return plus(r_add(r_factor(r_mul(size, _size(c, rest[0])), factor), _ONE)), None
    return plus(_ONE), None
