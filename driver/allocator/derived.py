"""KEP-6080 derived attributes (alpha in 1.37, gate DRADerivedAttributes): per-device values computed
by a request's CEL expressions, which matchAttribute / distinctAttribute use instead of a driver
attribute of the same name.

The rules, from the 1.37 API type (k8s.io/api resource/v1 ExactDeviceRequest.derivedAttributes and
DeviceDerivedAttribute) and KEP-6080 (kubernetes/enhancements keps/sig-scheduling/6080-dra-derived-
attributes, "Scheduler Plugin Implementation"; implemented by kubernetes/kubernetes#140029):

- the expression runs in the selectors' environment (one `device` variable), on a device that has
  passed the request's selectors, and yields a string, int, bool or semver, or (with
  DRAListTypeAttributes) a list of one of them; derived values are never visible to selectors;
- a constraint looks up its attribute first among the derived attributes of the request the device
  was chosen for, then among the device's own attributes: a derived name equal to a driver
  attribute's shadows it for that request only;
- a runtime error (a missing attribute, a wrong result type) aborts the allocation, as a selector's
  does, rather than skipping the device;
- with the gate off kube-scheduler ignores derivedAttributes (and the apiserver drops them on
  create: driver/store/server_defaults.py).

Values are kept on the parsed device per expression, so each is evaluated once per device, as the
KEP's cache promises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.allocator.devices import DeviceInfo
from driver.celexpr import CelRuntimeError, Selector, attribute_of_value, device_variable
from driver.errors import AllocationError, InputError


def derived_value(device: DeviceInfo, name: str, selector: Selector, request: str, lists: bool) -> Mapping[str, Any]:
    """The attribute value `selector` derives for `device` (as a ResourceSlice attribute value);
    AllocationError naming the request, the derived attribute, the device and the expression when
    evaluation fails."""
    key = ("derived", selector.expression, lists)
    memo = device.memo
    hit = memo.get(key)
    if hit is None:
        try:
            variable = memo.get("cel")
            if variable is None:
                try:
                    variable = memo["cel"] = device_variable(device.driver, device.raw)
                except CelRuntimeError as exc:
                    raise InputError(f"ResourceSlice {device.slice_name}: device {device.name}: {exc}") from None
            hit = attribute_of_value(selector.evaluate(variable), lists)
        except CelRuntimeError as exc:
            hit = exc
        memo[key] = hit
    if isinstance(hit, CelRuntimeError):
        raise AllocationError(f"request {request}: derived attribute {name} on device {'/'.join(device.key)}: "
                              f"CEL runtime error: {hit} (expression: {selector.expression})")
    return hit
