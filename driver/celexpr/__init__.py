"""The only importer of the CEL library: DRA CEL environment, compile cache, cost limits.

Public API: `compile_selector(expression, where) -> Selector` (cached; InputError naming `where`),
`Selector.matches(device_variable) -> bool` (CelRuntimeError on evaluation errors, and with
cel-go's "operation cancelled: actual cost limit exceeded" when the selector could cost more than
kube-scheduler's runtime limit on that device) and `device_variable(driver, device_dict)` which
builds the `device` variable once per device; `Selector.matches_published(driver, device_dict)`
decides most selectors without that variable when `plain_attributes(device_dict)` holds.
`Selector.evaluate(device_variable)` returns any value and `attribute_of_value(value)` turns it into
an attribute value (KEP-6080 derived attributes). `check_selector_limits(expression, where)` applies
kube-apiserver's length and estimated-cost limits to a selector being written (limits.py).
"""

from driver.celexpr.environment import CelRuntimeError, Selector, attribute_of_value, compile_selector, device_variable
from driver.celexpr.fastpath import plain_attributes
from driver.celexpr.limits import COST_LIMIT_EXCEEDED, MAX_COST, MAX_EXPRESSION_BYTES, check_selector_limits

__all__ = ["COST_LIMIT_EXCEEDED", "MAX_COST", "MAX_EXPRESSION_BYTES", "CelRuntimeError", "Selector",
           "attribute_of_value", "check_selector_limits", "compile_selector", "device_variable", "plain_attributes"]
