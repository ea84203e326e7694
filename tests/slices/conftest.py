"""Shared helpers for slice tests: counter fitting and device look-ups over a rendered Pool."""

from __future__ import annotations

import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import kubernetes_validate  # noqa: E402

from driver.model.quantity import parse_quantity  # noqa: E402


def fits(pool, device_names) -> bool:
    """Do these devices' static counter consumptions fit the pool's counter sets together?"""
    devices, sets = pool.devices(), pool.counter_sets()
    used: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    for name in device_names:
        for entry in devices[name].get("consumesCounters", ()):
            for counter, amount in entry["counters"].items():
                used[(entry["counterSet"], counter)] += parse_quantity(amount["value"])
    return all(used[key] <= parse_quantity(sets[key[0]]["counters"][key[1]]["value"]) for key in used)


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
