"""The only importer of the CEL library: DRA CEL environment and compile cache.

Public API: `compile_selector(expression, where) -> Selector` (cached; InputError naming `where`),
`Selector.matches(device_variable) -> bool` (CelRuntimeError on evaluation errors) and
`device_variable(driver, device_dict)` which builds the `device` variable once per device;
`Selector.matches_published(driver, device_dict)` decides most selectors without that variable when
`plain_attributes(device_dict)` holds. `Selector.evaluate(device_variable)` returns any value and
`attribute_of_value(value)` turns it into an attribute value (KEP-6080 derived attributes).
"""

from driver.celexpr.environment import CelRuntimeError, Selector, attribute_of_value, compile_selector, device_variable
from driver.celexpr.fastpath import plain_attributes

__all__ = ["CelRuntimeError", "Selector", "attribute_of_value", "compile_selector", "device_variable", "plain_attributes"]
