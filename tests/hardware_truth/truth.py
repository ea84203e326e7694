"""Helpers for the hardware truth checks: build a host, run discovery + rendering, read the result.

Quantities and counter sums are computed here with a small parser of our own (not the product's
driver.model.quantity), so a rounding bug there cannot make both sides agree.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path

import kubernetes_validate
from truth_sysfs import Host

from driver.discovery import discover
from driver.features import Features
from driver.hardware import load_catalog
from driver.slices import render_pool, to_resource_slices

DRIVER = "gpu.example.com"
NODE = "node-a"
CATALOG = load_catalog()
MiB = 2**20
# The 1.37 schema has no KEP-5941 valueFrom: render what a 1.37 cluster accepts.
FEATURES = Features(shared_consumable_capacity=False)
# Every mix of the gates that change what a GPU publishes (partitionable devices, compatibility groups,
# consumable capacity), each as a 1.37 cluster would run it.
GATE_MIXES = [Features(partitionable_devices=p, compatibility_groups=g, consumable_capacity=c, shared_consumable_capacity=False)
              for p, g, c in itertools.product([True, False], repeat=3)]

_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$")


def qty(text: str) -> Fraction:
    """A Kubernetes quantity in the forms a driver writes (integer/decimal with a suffix)."""
    match = _QUANTITY.match(text)
    assert match, f"unexpected quantity {text!r}"
    return Fraction(match.group(1)) * _SUFFIX[match.group(2) or ""]


def render(tmp_path: Path, fns, features: Features = FEATURES, config=None):
    """(inventory, pool) of a host made of `fns`."""
    root = tmp_path / "sys"
    Host(root).add_all(fns)
    inventory = discover(root, CATALOG)
    kwargs = {"config": config} if config is not None else {}
    return inventory, render_pool(inventory, features, node_name=NODE, driver_name=DRIVER, **kwargs)


def all_warnings(inventory, pool) -> list[str]:
    """Discovery's warnings, then rendering's."""
    return [*inventory.warnings, *pool.warnings]


def attr(dev: dict, name: str):
    value = dev["attributes"].get(name)
    return None if value is None else next(iter(value.values()))


def by_type(pool) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for dev in pool.devices().values():
        out.setdefault(attr(dev, "type"), []).append(dev)
    return out


def per_gpu_profiles(devs: list[dict]) -> dict[str, Counter]:
    """PCI address of the physical GPU -> Counter(profile)."""
    out: dict[str, Counter] = {}
    for dev in devs:
        out.setdefault(attr(dev, "pciBusID"), Counter())[attr(dev, "profile")] += 1
    return out


def groups(dev: dict) -> list[list[str]]:
    return [e.get("compatibilityGroups") or [] for e in dev.get("consumesCounters", ())]


def fits_together(pool, names: list[str]) -> bool:
    """Do these devices' static counter consumptions fit their counter sets at once?"""
    sets = {cs["name"]: {k: qty(v["value"]) for k, v in cs["counters"].items()} for cs in _counter_sets(pool)}
    devices = pool.devices()
    used: dict[tuple[str, str], Fraction] = Counter()
    for name in names:
        for entry in devices[name].get("consumesCounters", ()):
            for counter, value in entry["counters"].items():
                used[(entry["counterSet"], counter)] += qty(value["value"])
    return all(amount <= sets[cs][counter] for (cs, counter), amount in used.items())


def _counter_sets(pool):
    return [cs for spec in pool.slices for cs in spec.get("sharedCounters", ())]


def published_addresses(pool) -> set[str]:
    out = set()
    for dev in pool.devices().values():
        for key in ("pciBusID", "pfPciBusID"):
            if attr(dev, key):
                out.add(attr(dev, key))
    return out


def validate_137(pool) -> None:
    kubernetes_validate.validate({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "metadata": {},
                                  "items": to_resource_slices(pool, generation=1)}, "1.37", strict=True)
