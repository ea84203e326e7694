"""Worst-case cost of a DRA selector, estimated the way kube-apiserver estimates it.

kube-apiserver compiles every new or changed selector with
k8s.io/dynamic-resource-allocation/cel (compile.go, `CompileCELExpression`) and refuses it when
`env.EstimateCost` exceeds `resource.CELSelectorExpressionMaxCost` (validation.go,
`validateCELSelector`). This module ports that estimate over driver.celexpr.syntax's tree:

- cel-go checker/cost.go (`coster`): one unit per identifier and per field selection on a map or
  object, nothing for constants, 10 per list and 30 per map created, 40 per object, one per
  function call unless a rule below says otherwise; `&&`/`||` cost their operands (at most both),
  `?:` the condition plus the dearer branch; a comprehension costs its range and initialiser plus
  (range size) x (loop condition + loop step), its result once; string and bytes functions cost
  0.1 per character (`StringTraversalCostFactor`), a regex 0.25 per pattern character
  (`RegexStringLengthCostFactor`) times the text; `in` on a list costs the list's size; `+` on
  strings costs the result's length and carries sizes forward (so repeated doubling is seen);
- k8s.io/apiserver pkg/cel/library/cost.go (`CostEstimator.EstimateCallCost`): quantity and
  semver functions, the Kubernetes string and list extensions; `has()` costs nothing
  (environment/base.go sets `PresenceTestHasCost(false)`);
- cel-go ext/lists.go and ext/sets.go estimators (`sort`, `distinct`, `flatten`, `slice`,
  `reverse`, `lists.range`, `sets.*`) and the DRA `includes` rule (compile.go, `draCostEstimator`);
- the DRA size estimator (compile.go, `sizeEstimator`): the sizes the `device` variable can have
  (`Bounds`: driver name 63, domain 63, identifier 32, 32 entries per attributes or capacity map,
  attribute values of at most 64 characters or list items).

What is approximated, because the library we evaluate with has no type checker: types are
inferred here from literals, the `device` declaration, iteration variables and the result types of
known functions; a value whose type is not known (`dyn`, e.g. an attribute value) is costed with
every overload it could select and the dearest wins, as cel-go does for `dyn` arguments. Functions
our library offers as globals that Kubernetes offers as methods (`sum(list)`, `max(list)`,
`min(list)`) are costed like the methods. Every other function costs one unit plus its arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from driver.celexpr.tree import ACCU, Node

MAX_U64 = 2**64 - 1
Range = tuple[int, int]  # (min, max), both saturating at MAX_U64
UNKNOWN: Range = (0, MAX_U64)

STRING_FACTOR = 0.1  # cel-go common.StringTraversalCostFactor
REGEX_FACTOR = 0.25  # cel-go common.RegexStringLengthCostFactor
LIST_CREATE, MAP_CREATE, STRUCT_CREATE = 10, 30, 40  # cel-go common.{List,Map,Struct}CreateBaseCost
INCLUDES_MAX = 48  # resource.ResourceSliceMaxAttributeValuesPerDevice (DRA `includes` estimate)

DYN = "dyn"
TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type",
                        "google.protobuf.Timestamp", "google.protobuf.Duration"})
DEVICE_FIELDS: dict[str, Any] = {
    "driver": "string",
    "allowMultipleAllocations": "bool",
    "attributes": ("map", "string", ("map", "string", DYN)),
    "capacity": ("map", "string", ("map", "string", "quantity")),
}
_SCALARS = frozenset({"bool", "int", "uint", "double", "timestamp", "duration"})


@dataclass(frozen=True)
class Bounds:
    """The largest `device` the estimate assumes (resource.k8s.io/v1 limits, as compile.go declares
    them): lengths of the driver name, of a domain and of an identifier, entries per attributes or
    capacity map (and domains per device), and the size of an attribute value (a string's length or
    a list's items: max(DeviceAttributeMaxValueLength 64, ResourceSliceMaxAttributeValuesPerDevice 48))."""

    driver: int = 63  # resource.DriverNameMaxLength
    domain: int = 63  # resource.DeviceMaxDomainLength
    ident: int = 32  # resource.DeviceMaxIDLength
    entries: int = 32  # resource.ResourceSliceMaxAttributesAndCapacitiesPerDevice
    value: int = 64  # max(resource.DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice)

    def covers(self, other: Bounds) -> bool:
        return all(getattr(other, f) <= getattr(self, f) for f in ("driver", "domain", "ident", "entries", "value"))

    def widened(self, other: Bounds) -> Bounds:
        return Bounds(*(max(getattr(self, f), getattr(other, f)) for f in ("driver", "domain", "ident", "entries", "value")))


API_BOUNDS = Bounds()


def _sat(x: float) -> int:
    return MAX_U64 if x >= MAX_U64 else int(x)


def r_add(a: Range, b: Range) -> Range:
    return (_sat(a[0] + b[0]), _sat(a[1] + b[1]))


def r_mul(a: Range, b: Range) -> Range:
    return (_sat(a[0] * b[0]), _sat(a[1] * b[1]))


def r_factor(a: Range, f: float) -> Range:
    def one(x: int) -> int:
        return MAX_U64 if x >= MAX_U64 else _sat(math.ceil(x * f))

    return (one(a[0]), one(a[1]))


def r_union(a: Range, b: Range) -> Range:
    return (min(a[0], b[0]), max(a[1], b[1]))


def fixed(n: int) -> Range:
    return (n, n)


def _kind(t: Any) -> str:
    return t[0] if isinstance(t, tuple) else t


def _could_be(t: Any, kind: str) -> bool:
    return t == DYN or _kind(t) == kind


def _join(a: Any, b: Any) -> Any:
    if a == b:
        return a
    if a == DYN or b == DYN:
        return a if b == DYN else b
    if _kind(a) == _kind(b) == "list":
        return ("list", _join(a[1], b[1]))
    if _kind(a) == _kind(b) == "map":
        return ("map", _join(a[1], b[1]), _join(a[2], b[2]))
    return DYN


def _elem(t: Any) -> Any:
    """The iteration variable's type over `t` (list item, map key)."""
    return t[1] if isinstance(t, tuple) else DYN


def size_of_path(path: list[str] | None, bounds: Bounds) -> Range | None:
    """compile.go `sizeEstimator.EstimateSize`: the largest value at `path` below `device`."""
    if not path or path[0] != "device":
        return None
    attr = ("attr", bounds.value)
    inner_attrs = ("map", bounds.entries, ("str", bounds.ident), attr)
    inner_caps = ("map", bounds.entries, ("str", bounds.ident), ("quantity", 0))
    node: Any = ("device", 0, {
        "driver": ("str", bounds.driver), "allowMultipleAllocations": ("bool", 1),
        "attributes": ("map", bounds.entries, ("str", bounds.domain), inner_attrs),
        "capacity": ("map", bounds.entries, ("str", bounds.domain), inner_caps),
    })
    for name in path[1:]:
        if name in ("@items", "@values"):
            if node[0] != "map":
                return None
            node = node[3]
        elif name == "@keys":
            if node[0] != "map":
                return None
            node = node[2]
        elif node[0] == "device" and name in node[2]:
            node = node[2][name]
        elif node[0] == "map" and node[3] is attr:
            node = attr  # any field of an attributes map is an attribute value
        else:
            return None
    return (0, node[1])


@dataclass
class _Local:
    path: list[str] | None
    size: Range | None
    entry: tuple[str, Range, Range] | None
    type: Any


class Coster:
    """One estimate: `Coster(bounds).cost(tree)` -> (min, max) cost units.

    `strict` adds what our evaluator does beyond cel-go's units (measured, see limits.py): it
    copies every element of a list or map literal each time it builds one, copies both lists of a
    list `+`, grows a `map()`/`filter()` result by copying it once per item (quadratic), and calls
    Python for every function outside the CEL core (costcalls.PYTHON_CALL units a call)."""

    def __init__(self, bounds: Bounds = API_BOUNDS, strict: bool = False) -> None:
        self.bounds = bounds
        self.strict = strict
        self.paths: dict[int, list[str] | None] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, tuple[str, Range, Range]] = {}
        self.types: dict[int, Any] = {}
        self.locals: dict[str, list[_Local]] = {}

    # -- bookkeeping ---------------------------------------------------------------------------
    def type_of(self, e: Node) -> Any:
        return self.types.get(id(e), DYN)

    def path_of(self, e: Node) -> list[str] | None:
        if e.kind == "ident" and self.locals.get(e.name):
            return self.locals[e.name][-1].path
        return self.paths.get(id(e))

    def size_of(self, e: Node) -> Range | None:
        """cel-go `computeSize`: computed, literal, estimator, scalar type, local variable."""
        if id(e) in self.sizes:
            return self.sizes[id(e)]
        if e.kind == "lit":
            if e.lit_type in ("string", "bytes"):
                return fixed(len(e.value))
            return fixed(1)
        if e.kind in ("list", "map"):
            return fixed(len(e.args) if e.kind == "list" else len(e.entries))
        path = self.path_of(e)
        if path and path[0] == ACCU:
            path = None
        estimate = size_of_path(path, self.bounds)
        if estimate is not None:
            self.sizes[id(e)] = estimate
            return estimate
        if self.type_of(e) in _SCALARS:
            return fixed(1)
        if e.kind == "ident" and self.locals.get(e.name):
            return self.locals[e.name][-1].size
        return None

    def size_or_unknown(self, e: Node) -> Range:
        size = self.size_of(e)
        return UNKNOWN if size is None else size

    def entry_of(self, e: Node) -> tuple[str, Range, Range] | None:
        if id(e) in self.entries:
            return self.entries[id(e)]
        if e.kind == "ident" and self.locals.get(e.name):
            return self.locals[e.name][-1].entry
        return None

    def push(self, name: str, local: _Local) -> None:
        self.locals.setdefault(name, []).append(local)

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    # -- the walk ------------------------------------------------------------------------------
    def cost(self, e: Node) -> Range:
        kind = e.kind
        if kind == "lit":
            self.types[id(e)] = {"null": "null_type"}.get(e.lit_type, e.lit_type)
            return (0, 0)
        if kind == "ident":
            local = self.locals.get(e.name)
            if local:
                self.types[id(e)] = local[-1].type
            else:
                self.paths[id(e)] = [e.name]
                self.types[id(e)] = "device" if e.name == "device" else "type" if e.name in TYPE_NAMES else DYN
            return (1, 1)
        if kind == "select":
            return self._select(e)
        if kind == "call":
            return cost_call(self, e)
        if kind == "list":
            total, item, elem_type = (0, 0), (MAX_U64, 0) if e.args else (0, 0), None
            for x in e.args:
                total = r_add(total, self.cost(x))
                item = r_union(item, self.size_or_unknown(x))
                elem_type = self.type_of(x) if elem_type is None else _join(elem_type, self.type_of(x))
            self.entries[id(e)] = ("list", fixed(1), item)
            self.types[id(e)] = ("list", elem_type or DYN)
            return r_add(total, fixed(LIST_CREATE + (len(e.args) if self.strict else 0)))
        if kind == "map":
            total, keys, vals = (0, 0), (MAX_U64, 0) if e.entries else (0, 0), (MAX_U64, 0) if e.entries else (0, 0)
            ktype = vtype = None
            for k, v in e.entries:
                total = r_add(r_add(total, self.cost(k)), self.cost(v))
                keys, vals = r_union(keys, self.size_or_unknown(k)), r_union(vals, self.size_or_unknown(v))
                ktype = self.type_of(k) if ktype is None else _join(ktype, self.type_of(k))
                vtype = self.type_of(v) if vtype is None else _join(vtype, self.type_of(v))
            self.entries[id(e)] = ("map", keys, vals)
            self.types[id(e)] = ("map", ktype or DYN, vtype or DYN)
            return r_add(total, fixed(MAP_CREATE + (len(e.entries) if self.strict else 0)))
        if kind == "struct":
            total = fixed(STRUCT_CREATE)
            for _, v in e.entries:
                total = r_add(total, self.cost(v))
            return total
        if kind == "comp":
            return self._comprehension(e)
        return (0, 0)

    def _select(self, e: Node) -> Range:
        operand = e.operand
        if e.test_only:
            self.types[id(e)] = "bool"
            return self.cost(operand)  # has(): PresenceTestHasCost(false) in the Kubernetes base environment
        total = self.cost(operand)
        target = self.type_of(operand)
        if _kind(target) in ("map", "device", "quantity", "semver"):
            total = r_add(total, (1, 1))
        path = self.path_of(operand)
        self.paths[id(e)] = None if path is None else [*path, e.name]
        if target == "device":
            self.types[id(e)] = DEVICE_FIELDS.get(e.name, DYN)
        elif _kind(target) == "map":
            self.types[id(e)] = target[2]
        else:
            self.types[id(e)] = DYN
        return total

    def _comprehension(self, e: Node) -> Range:
        rng, init, cond, step, result = e.args
        total = r_add(self.cost(rng), self.cost(init))
        self.push(e.accu_var, _Local(self.path_of(init), self.size_of(init), self.entry_of(init), self.type_of(init)))
        entry = self.entry_of(rng)
        container = entry[0] if entry else _kind(self.type_of(rng))
        path = self.path_of(rng)
        if container == "list":
            size, sub = (entry[2] if entry else None), "@items"
        else:
            size, sub = (entry[1] if entry else None), "@keys"
        self.push(e.iter_var, _Local(None if path is None else [*path, sub], size, None, _elem(self.type_of(rng))))
        per_item = r_add(self.cost(cond), self.cost(step))
        self.pop(e.iter_var)
        step_type = self.type_of(step)
        if _kind(self.type_of(init)) == "list" and _kind(step_type) == "list":
            self.locals[e.accu_var][-1].type = step_type
        total = r_add(total, self.cost(result))
        self.types[id(e)] = self.type_of(result)
        self.pop(e.accu_var)
        count = self.size_or_unknown(rng)
        total = r_add(total, r_mul(count, per_item))
        if self.strict and init.kind == "list":
            total = r_add(total, r_mul(count, count))  # the result list is copied at every item
        if init.kind == "lit":
            size = self.size_of(init)
            if size is not None:
                self.sizes[id(e)] = size
        elif init.kind in ("list", "map"):
            self.sizes[id(e)] = count
            step_entry = self.entry_of(step)
            if step_entry is not None:
                self.entries[id(e)] = step_entry
        return total


def estimate(tree: Node, bounds: Bounds = API_BOUNDS, strict: bool = False) -> int:
    """The worst-case cost of `tree` (cel-go `CostEstimate.Max`), saturating at 2**64-1; `strict`
    bounds the work of our evaluator instead (see Coster)."""
    return Coster(bounds, strict).cost(tree)[1]


from driver.celexpr.costcalls import cost_call  # noqa: E402 - costcalls builds on the helpers above
