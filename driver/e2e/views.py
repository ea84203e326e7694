"""What both e2e backends read off the cluster's objects the same way: devices as the checks see them,
which claim holds which devices, and the slices a scheduler from before KEP-5963 sees.

Why a module of its own: the local and the kind backend each compute these from their own
store or API server; written once here, neither backend depends on the other.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from driver.features import Features


def flatten(dev: Mapping[str, Any]) -> dict[str, Any]:
    """Device dict -> {name, attribute: value} with the driver's own (unqualified) attributes."""
    out: dict[str, Any] = {"name": dev["name"]}
    for key, value in (dev.get("attributes") or {}).items():
        if "/" not in key and value:
            out[key] = next(iter(value.values()))
    return out


def devices_by_claim(claims: Sequence[Mapping[str, Any]], published: Sequence[Mapping[str, Any]],
                     driver: str) -> dict[str, list[dict[str, Any]]]:
    """Claim name -> flattened devices allocated to it from `driver` (a bare name if no longer published)."""
    devices = {d["name"]: d for d in published}
    out = {}
    for claim in claims:
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
        out[claim["metadata"]["name"]] = [devices.get(r["device"], {"name": r["device"]}) for r in results
                                          if r.get("driver") == driver]
    return out


def skewed_view(slices: Sequence[Mapping[str, Any]], features: Features) -> tuple[list[dict[str, Any]], Features]:
    """Slices and gates as a scheduler from before KEP-5963 sees them: it decodes slices without
    the field it does not know, so compatibility groups are gone (copies; the input is untouched)."""
    stripped = copy.deepcopy(list(slices))
    for s in stripped:
        for d in s["spec"].get("devices") or []:
            for cc in d.get("consumesCounters") or []:
                cc.pop("compatibilityGroups", None)
    return stripped, features.with_gates({"DRADeviceCompatibilityGroups": False})
