"""CEL expressions of DeviceClass and ResourceClaim selectors, checked as kube-apiserver does.

Source: k8s.io/kubernetes pkg/apis/resource/validation/validation.go validateCELExpression: an
expression longer than CELSelectorExpressionMaxLength (10 KiB) is "Too long" and not compiled; one
that does not compile is "Invalid value" with the compiler's message; one whose estimated worst-case
cost exceeds CELSelectorExpressionMaxCost (1,000,000) is "Forbidden: too complex, exceeds cost
limit". Expressions the object already had when it was stored are not checked again ("stored").

Compiling goes through driver.celexpr (the project's only CEL importer). Cost estimation is
driver.celexpr's to provide: COST_ESTIMATOR below is the one hook. It is looked up as
`driver.celexpr.estimate_cost(expression) -> int` (the worst-case cost, the unit cel-go's estimator
uses); until that function exists no cost limit is enforced here (docs/validation.md says so).
"""

from __future__ import annotations

from collections.abc import Callable

from driver import celexpr
from driver.errors import InputError
from driver.store.admission.field import FieldError, forbidden, invalid, too_long

CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024  # resource.CELSelectorExpressionMaxLength
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # resource.CELSelectorExpressionMaxCost

# The hook for branch `limits`: driver.celexpr.estimate_cost(expression) -> worst-case cost.
COST_ESTIMATOR: Callable[[str], int] | None = getattr(celexpr, "estimate_cost", None)


def compile_error(expression: str) -> str | None:
    """The compiler's message for an expression that does not compile, else None."""
    try:
        celexpr.compile_selector(expression, "")
    except InputError as exc:
        # cel-go's message spans lines (the expression with a caret under the error): one line here.
        return " ".join(line.strip() for line in str(exc).removeprefix(": ").splitlines() if line.strip())
    return None


def expression(text: str, path: str, *, stored: bool = False) -> list[FieldError]:
    if stored:
        return []
    if len(text.encode()) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    problem = compile_error(text)
    if problem is not None:
        return [invalid(path, text, problem)]
    if COST_ESTIMATOR is not None and COST_ESTIMATOR(text) > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return [forbidden(path, "too complex, exceeds cost limit")]
    return []
