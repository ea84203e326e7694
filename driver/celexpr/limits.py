"""The length and cost limits of a DRA selector: refused when written, stopped when evaluated.

Upstream (Kubernetes 1.37):
- k8s.io/api resource/v1/types.go: `CELSelectorExpressionMaxLength = 10 * 1024` (bytes) and
  `CELSelectorExpressionMaxCost = 1000000` cost units, "roughly 0.1 second for each expression
  evaluation" in cel-go (the same figure as k8s.io/apiserver pkg/apis/cel/config.go
  `PerCallLimit`);
- kubernetes pkg/apis/resource/validation/validation.go `validateCELSelector`: a new or changed
  selector longer than the length limit is refused without compiling (`field.TooLong`: "Too long:
  may not be more than 10240 bytes"); one that compiles but whose estimated worst-case cost
  exceeds the cost limit is refused (`field.Forbidden`: "too complex, exceeds cost limit");
- k8s.io/dynamic-resource-allocation cel/compile.go `CompileCELExpression`: every program runs
  with `cel.CostLimit(CELSelectorExpressionMaxCost)`, so kube-scheduler stops an evaluation whose
  actual cost passes the limit (cel-go interpreter/runtimecost.go: "operation cancelled: actual
  cost limit exceeded"); the structured allocator reports it as the claim's
  "selector #i on device ...: CEL runtime error: ..." and gives up on the claim.

Our evaluator (the Rust-core CEL library) cannot count cost while it runs, so the runtime limit is
enforced before it runs, with a bound instead of a meter: a selector is evaluated on a device only
if its strict estimate for a device of that device's actual sizes (cost.py, `Coster(strict=True)`)
stays within the limit; otherwise the evaluation is stopped with cel-go's message. The strict
estimate is never below cel-go's own estimate, which is never below cel-go's actual cost, so
everything kube-scheduler stops is stopped here too. Approximations, all on the safe side:
- a bound, not a meter: `false && <expensive>` is stopped although cel-go would short-circuit it;
- strict charges the work our evaluator does beyond cel-go's units (measured on this library,
  0.10.0): it copies each element of a list or map literal whenever it builds one, copies both
  lists of a list `+`, and copies the growing result of `map()`/`filter()` at every item (a map
  over 5,000 items took 4 s, over 40,000 two minutes); and every function outside the CEL core is
  a Python call of 2-110 us (quantity() and semver() the dearest: their values travel as maps),
  charged 100 units, plus the items of the lists it is handed. What remains are constant factors:
  a unit takes 0.1-0.4 us in our evaluator's loops (cel-go: ~0.1 us), so a selector at the limit
  runs up to about a second here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from driver.celexpr.cost import API_BOUNDS, MAX_U64, Bounds, estimate
from driver.celexpr.syntax import CelSyntaxError, parse
from driver.errors import InputError

MAX_EXPRESSION_BYTES = 10 * 1024  # resource.CELSelectorExpressionMaxLength
MAX_COST = 1_000_000  # resource.CELSelectorExpressionMaxCost
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"  # cel-go interpreter/runtimecost.go


@dataclass(frozen=True)
class Costs:
    """A selector's worst-case costs for a device within the API's limits: `admission` as
    kube-apiserver estimates it, `runtime` as our evaluator can spend it (strict); `error` when the
    estimate could not be made (then both are 2**64-1)."""

    admission: int
    runtime: int
    error: str = ""


def selector_costs(expression: str) -> Costs:
    """The costs of an expression the CEL library compiled; CelSyntaxError only for nesting deeper
    than cel-go's parser allows (a compile error there too)."""
    try:
        tree = parse(expression)
    except CelSyntaxError as exc:
        if "recursion" in str(exc):
            raise
        return Costs(MAX_U64, MAX_U64, f"cost estimation failed: {exc}")
    try:
        return Costs(estimate(tree), estimate(tree, strict=True))
    except RecursionError:
        raise CelSyntaxError("max recursion depth exceeded") from None


@lru_cache(maxsize=4096)
def runtime_bound(expression: str, bounds: Bounds) -> int:
    """The strict estimate for a device of `bounds` (cached: devices of a node share sizes)."""
    try:
        return estimate(parse(expression), bounds, strict=True)
    except (CelSyntaxError, RecursionError):
        return MAX_U64


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list)) else 1


def device_bounds(variable: Mapping[str, Any]) -> Bounds:
    """The sizes of one `device` variable (driver.celexpr.device_variable's shape)."""
    attributes, capacity = variable.get("attributes") or {}, variable.get("capacity") or {}
    maps = [attributes, capacity]
    domains = [domain for outer in maps for domain in outer]
    inner = [by_ident for outer in maps for by_ident in outer.values()]
    idents = [ident for by_ident in inner for ident in by_ident]
    values = [value for by_ident in attributes.values() for value in by_ident.values()]
    return Bounds(
        driver=len(str(variable.get("driver") or "")),
        domain=max(map(len, domains), default=0),
        ident=max(map(len, idents), default=0),
        entries=max([len(m) for m in maps] + [len(m2) for m2 in inner]),
        value=max(map(_size, values), default=0),
    )


def within_api_bounds(variable: Mapping[str, Any]) -> bool:
    """Whether the device is one kube-apiserver would have stored (sizes the estimate assumed)."""
    known = getattr(variable, "within", None)
    return known if known is not None else API_BOUNDS.covers(device_bounds(variable))


def check_selector_limits(expression: str, where: str) -> None:
    """kube-apiserver's limits on a selector being written (`where`: the object and field path of
    its `cel.expression`): InputError when it is too long, does not compile, or its estimated
    worst-case cost is above the limit. The hook every writer of selectors calls."""
    from driver.celexpr.environment import compile_selector

    length = len(expression.encode("utf-8"))
    if length > MAX_EXPRESSION_BYTES:
        raise InputError(f"{where}: Too long: may not be more than {MAX_EXPRESSION_BYTES} bytes (got {length})")
    selector = compile_selector(expression, where)
    if selector.costs.error:
        raise InputError(f"{where}: Internal error: {selector.costs.error}")
    if selector.costs.admission > MAX_COST:
        raise InputError(f"{where}: Forbidden: too complex, exceeds cost limit (estimated worst-case cost "
                         f"{_units(selector.costs.admission)}, limit {MAX_COST:,})")


def _units(cost: int) -> str:
    return "more than 2^64" if cost >= MAX_U64 else f"{cost:,}"
