"""Shared helpers for slice tests: counter fitting and device look-ups over a rendered Pool."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import kubernetes_validate  # noqa: E402

from driver.allocator.rules import PlacedDevice, validate_combination  # noqa: E402
from driver.features import Features  # noqa: E402


def placed(pool, device_names) -> list[PlacedDevice]:
    """The devices of `pool` as if each were allocated to its own claim."""
    driver = pool.slices[0]["driver"]
    return [PlacedDevice(claim=f"c{k}", request="r", driver=driver, pool=pool.name, device=n)
            for k, n in enumerate(device_names)]


def fits(pool, device_names) -> bool:
    """Do these devices' counter consumptions fit the pool's counter sets together? (The shared
    counter rule of driver.allocator.rules; compatibility groups are not looked at here.)"""
    violations = validate_combination(list(pool.slices), placed(pool, device_names), Features())
    return not any(v.kind == "counters" for v in violations)


def of_type(pool, kind: str) -> dict[str, dict]:
    return {n: d for n, d in pool.devices().items() if d["attributes"]["type"]["string"] == kind}


def groups_of(dev: dict) -> list[list[str]]:
    return [entry.get("compatibilityGroups", []) for entry in dev.get("consumesCounters", ())]


def memory_slices(dev: dict) -> set[str]:
    return {c for e in dev.get("consumesCounters", ()) for c in e["counters"] if c.startswith("memory-slice-")}


def validate_all(objects):
    """One strict validation of a ResourceSliceList (items are checked with the ResourceSlice schema);
    much faster than one call per object, which reloads the schema definitions each time."""
    kubernetes_validate.validate({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
                                  "metadata": {}, "items": objects}, "1.37", strict=True)
