"""Keep the compatibility groups of allocated devices unchanged until their claims are released.

kube-scheduler 1.37 reads `consumesCounters[].compatibilityGroups` live from the ResourceSlice when
it checks whether a new device may join ones already allocated on the same counter set
(docs/architecture.md §6, row "Never change the groups of a device that is in use"): if the driver
re-publishes an allocated device with different groups, the scheduler judges new co-allocations
against groups the running workload was never checked with. So for every allocated device the
publisher re-uses the groups currently published, and only adopts the new ones after the device is
free again.

The exception is a scheduler with the gate off: it ignores every slice that declares groups, so
keeping them would hide the whole pool. Then groups are dropped anyway, with a warning.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("fake-dra.publish")


@dataclass(frozen=True)
class ProtectedDevice:
    device: str
    counter_set: str
    published: tuple[str, ...]
    desired: tuple[str, ...]


def _groups(entry: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(entry.get("compatibilityGroups") or ())


def published_devices(slices: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Device name -> device dict over stored slices (first occurrence wins)."""
    out: dict[str, dict[str, Any]] = {}
    for s in slices:
        for dev in (s.get("spec") or {}).get("devices") or []:
            out.setdefault(dev.get("name"), dev)
    return out


def group_changes(desired_specs: Sequence[Mapping[str, Any]], published: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Names of devices whose groups differ between the desired specs and what is published."""
    changed: set[str] = set()
    for spec in desired_specs:
        for dev in spec.get("devices") or []:
            old = published.get(dev.get("name"))
            if old is not None and old != dev and _groups_by_set(dev) != _groups_by_set(old):
                changed.add(dev["name"])
    return changed


def _groups_by_set(dev: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {e.get("counterSet"): _groups(e) for e in dev.get("consumesCounters") or [] if _groups(e)}


def protect_allocated_groups(
    desired_specs: Sequence[dict[str, Any]],
    published: Mapping[str, Mapping[str, Any]],
    allocated: Callable[[], set[str] | None],
    groups_enabled: bool,
) -> tuple[list[dict[str, Any]], list[ProtectedDevice]]:
    """Desired specs with published groups restored on allocated devices, and what was kept.

    `allocated` is only called when some published device's groups would change, so the steady
    state costs no ResourceClaim list.
    """
    changing = group_changes(desired_specs, published)
    if not changing:
        return list(desired_specs), []
    found = allocated()
    # Unknown (claims cannot be listed, e.g. RBAC without `list resourceclaims`): assume every
    # device whose groups would change is in use; stale groups are safe, changed ones are not.
    in_use = changing if found is None else found & changing
    if not in_use:
        return list(desired_specs), []
    if not groups_enabled:
        log.warning(
            "compatibility groups disabled: dropping groups of allocated devices, because a gate-off "
            "scheduler would ignore every slice that still declares them",
            extra={"devices": sorted(in_use)},
        )
        return list(desired_specs), []
    kept: list[ProtectedDevice] = []
    out = []
    for spec in desired_specs:
        spec = copy.deepcopy(spec)
        for dev in spec.get("devices") or []:
            if dev.get("name") not in in_use:
                continue
            old = _groups_by_set(published[dev["name"]])
            for entry in dev.get("consumesCounters") or []:
                cs = entry.get("counterSet")
                want, have = _groups(entry), old.get(cs, ())
                if want == have:
                    continue
                if have:
                    entry["compatibilityGroups"] = list(have)
                else:
                    entry.pop("compatibilityGroups", None)
                kept.append(ProtectedDevice(dev["name"], cs, have, want))
        out.append(spec)
    for k in kept:
        log.info(
            "keeping published compatibility groups of an allocated device until its claim is released "
            "(the scheduler reads groups live from the slice)",
            extra={"device": k.device, "counterSet": k.counter_set, "published": list(k.published),
                   "desired": list(k.desired)},
        )
    return out, kept
