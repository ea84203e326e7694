"""Reading a published device (resource.k8s.io/v1 Device JSON): one attribute's value, one capacity.

Why here: the prepare path, the health model, the start-up summary and every personality's
container environment read devices the same way, whichever layer they live in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def attr(device: Mapping[str, Any], name: str, driver_name: str | None = None) -> Any:
    """Value of a device attribute (unqualified or qualified by the driver name), or None."""
    attrs = device.get("attributes") or {}
    raw = attrs.get(name)
    if raw is None and driver_name:
        raw = attrs.get(f"{driver_name}/{name}")
    if isinstance(raw, dict) and raw:
        return next(iter(raw.values()))
    return None


def capacity(device: Mapping[str, Any], name: str) -> str | None:
    raw = (device.get("capacity") or {}).get(name)
    if isinstance(raw, dict) and "value" in raw:
        return str(raw["value"])
    return None


def granted(result: Mapping[str, Any], device: Mapping[str, Any], name: str,
            unrequested: Mapping[str, str] | None = None) -> str | None:
    """What the claim was given of capacity `name`: its consumable-capacity share, else the amount
    recorded from a request-driven counter (KEP-5941), else what such a counter gives a claim that
    records nothing (`unrequested`), else the device's whole capacity."""
    share = (result.get("consumedCapacity") or {}).get(name)
    if share is not None:
        return str(share)
    for entry in result.get("consumedCounters") or ():
        counters = entry.get("counters") if isinstance(entry, Mapping) else None
        counter = counters.get(name) if isinstance(counters, Mapping) else None  # shape: revalidation
        if counter is not None:
            return str(counter.get("value") if isinstance(counter, Mapping) else counter)
    if unrequested and name in unrequested:
        return unrequested[name]
    return capacity(dict(device), name)
