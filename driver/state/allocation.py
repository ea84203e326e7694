"""This driver's part of a claim's allocation, checked and turned into the devices to prepare.

Why a module of its own: it is the one step of a prepare that judges what the scheduler wrote
(device and request names, pool, duplicates, opaque config, recorded counters and share IDs)
without touching the disk or the state's locks, so driver.state.prepare keeps only the ordering
of records, CDI specs and checkpoint writes. Everything here raises PrepareError naming the claim
and the `status.allocation.devices.results[i]` it is about; revalidation against what is already
prepared on the node is driver.state.revalidate's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver.errors import InputError, PrepareError
from driver.personality.base import DriverProfile, PreparedElsewhere
from driver.state.names import check_label, shorten
from driver.state.types import ClaimRef, PreparedDevice

log = logging.getLogger("fake-dra.state")
# kube-apiserver validates status.allocation.devices.results[].shareID with format=k8s-uuid
# (k8s.io/apimachinery/pkg/api/validate: "must be a lowercase UUID in 8-4-4-4-12 format").
_SHARE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class ClaimDevices:
    """This driver's results of one claim and what to prepare for them."""

    results: list[dict[str, Any]]  # this driver's entries of status.allocation.devices.results
    devices: list[PreparedDevice]  # one per result, in the same order
    positions: list[int]  # each result's index in status.allocation.devices.results (for messages)


def devices_to_prepare(ref: ClaimRef, claim: Mapping[str, Any], profile: DriverProfile, pool_name: str,
                       devices: Mapping[str, dict[str, Any]], cdi_device_id: Callable[[str, str], str],
                       final: bool = False,
                       unrequested: Callable[[str], Mapping[str, str]] | None = None,
                       elsewhere: Callable[[], Sequence[PreparedElsewhere]] = tuple) -> ClaimDevices | None:
    """The claim's results for the profile's driver on pool `pool_name` as devices to prepare
    (`devices`: the node's published devices by name; `cdi_device_id(claim uid, device)`). None when
    a device is not in `devices` and not `final`: the caller rediscovers once and asks again with
    final=True. `unrequested(device)`: what a request-driven counter grants a claim that records no
    amount; `elsewhere()`: devices other claims prepared (for a personality whose driver checks them).
    A claim without results for this driver gives empty lists (a warning: nothing to prepare).
    Which opaque config applies, and the container env, are the personality's (`profile`)."""
    where = f"claim {ref.namespace}/{ref.name}"
    driver_name = profile.name
    alloc = claim["status"]["allocation"].get("devices") or {}
    all_results = alloc.get("results") or []
    positions = [i for i, r in enumerate(all_results) if r.get("driver") == driver_name]
    mine = [all_results[i] for i in positions]
    if not mine:
        others = sorted({str(r.get("driver"))[:80] for r in all_results})
        log.warning("claim has no results for this driver; nothing to prepare",
                    extra={"claim": f"{ref.namespace}/{ref.name}", "drivers": others[:10]})
    first: dict[str, int] = {}
    for i, r in zip(positions, mine, strict=True):
        name = r.get("device")
        try:
            check_label(name, f"status.allocation.devices.results[{i}].device")
            for part in str(r.get("request", "")).split("/"):
                check_label(part, f"status.allocation.devices.results[{i}].request")
        except InputError as exc:
            raise PrepareError(f"{where}: {exc}") from None
        if name in first:  # upstream never gives one claim a device twice, even with adminAccess
            raise PrepareError(f"{where}: device {name} is allocated twice in this claim (status.allocation."
                               f"devices.results[{first[name]}] and [{i}]); a claim gets each device at most once")
        first[name] = i
        if r.get("pool") != pool_name:
            raise PrepareError(f"{where}: device {name} is in pool {r.get('pool')!r}, not this node's pool {pool_name!r}")
        if name not in devices:
            if not final:
                return None
            raise PrepareError(f"{where}: device {name} of pool {pool_name} is not in the current inventory")
    configs = profile.resolve_configs(ref, alloc.get("config"), mine, devices,
                                      elsewhere() if mine and profile.checks_prepared else ())
    prepared: list[PreparedDevice] = []
    for i, r, cfg in zip(positions, mine, configs, strict=True):
        name = r["device"]
        at = f"{where}: status.allocation.devices.results[{i}]"
        consumed = r.get("consumedCounters")
        if consumed is not None and (not isinstance(consumed, list) or not all(isinstance(c, Mapping) for c in consumed)):
            raise PrepareError(f"{at}.consumedCounters: expected a list of objects")
        share = r.get("shareID")
        if share is not None and not isinstance(share, str):
            raise PrepareError(f"{at}.shareID: expected a string")
        if share is not None and not _SHARE_ID.fullmatch(share):
            # It lands in the CDI env, the checkpoint and status.devices: never more than the API allows.
            raise PrepareError(f"{at}.shareID: {shorten(share)!r} is not a lowercase UUID in 8-4-4-4-12 format")
        prepared.append(PreparedDevice(
            request_names=(str(r["request"]),),
            pool=pool_name,
            device=name,
            cdi_device_ids=(cdi_device_id(ref.uid, name),),
            consumed_counters=tuple(r["consumedCounters"]) if r.get("consumedCounters") else None,
            share_id=r.get("shareID"),
            env=profile.device_env(ref, r, devices[name], cfg, unrequested(name) if unrequested is not None else None),
            admin_access=r.get("adminAccess") is True,
            config=cfg.canonical if cfg is not None else None,
        ))
    return ClaimDevices(mine, prepared, positions)
