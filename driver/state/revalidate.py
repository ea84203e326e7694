"""Preparation-time revalidation (KEP-5963 driver responsibility 3) with an index of what is prepared.

Why a separate index: the rules themselves are driver.allocator.rules.validate_combination (one
implementation shared with the allocator); this module only decides *which* prepared devices to
hand it, so a node with thousands of prepared claims stays fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver.allocator.rules import PlacedDevice, validate_combination
from driver.errors import InputError, PrepareError
from driver.features import Features
from driver.state.checkpoint import Checkpoint
from driver.state.types import ClaimRef, PreparedDevice


_UNRECORDED = object()  # marks claims indexed before their checkpoint record exists


class PlacedIndex:
    """Devices already prepared on the node, indexed so revalidation looks only at what matters.

    Only devices that share a counter set with the new claim's devices (or are the same device)
    can change the verdict, so only those are handed to validate_combination. Extra placements of
    a shared (allowMultipleAllocations) device without a `consumedCounters` snapshot change nothing
    either — static counters are charged once per device — so one of them stands for all; this
    keeps a request with thousands of claims on one time-shared GPU linear instead of quadratic.
    """

    def __init__(self, cp: Checkpoint, driver_name: str) -> None:
        self.driver = driver_name
        # device -> claim UID -> placements, split by whether they carry a consumedCounters snapshot
        self.counted: dict[str, dict[str, list[PlacedDevice]]] = {}
        self.plain: dict[str, dict[str, list[PlacedDevice]]] = {}
        self._sets_of: dict[str, set[str]] = {}
        self._devices_on: dict[str, set[str]] = {}
        self._indexed: Mapping[str, dict[str, Any]] | None = None
        self._entries: dict[str, object] = {}  # uid -> the checkpoint entry it was built from
        self.sync(cp)

    def sync(self, cp: Checkpoint) -> None:
        """Mirror the checkpoint: O(claims) identity checks, re-indexing only what changed."""
        for uid in [u for u, e in self._entries.items() if cp.claims.get(u) is not e]:
            self.remove(uid)
        for uid, entry in cp.claims.items():
            if uid not in self._entries:
                self.add(entry.ref, entry.devices)
                self._entries[uid] = entry

    def remove(self, uid: str) -> None:
        self._entries.pop(uid, None)
        for index in (self.counted, self.plain):
            for device in [d for d, by_uid in index.items() if uid in by_uid]:
                del index[device][uid]
                if not index[device]:
                    del index[device]

    def _placed(self, uid: str, d: PreparedDevice) -> PlacedDevice:
        return PlacedDevice(claim=uid, request=d.request_names[0] if d.request_names else "", driver=self.driver,
                            pool=d.pool, device=d.device, consumed_counters=d.consumed_counters, share_id=d.share_id)

    def add(self, ref: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        """Index a claim's devices (a claim validated but not yet recorded is dropped by the next
        sync() unless the checkpoint has it by then)."""
        if ref.uid in self._entries:
            self.remove(ref.uid)
        self._entries[ref.uid] = _UNRECORDED
        for d in devices:
            index = self.counted if d.consumed_counters else self.plain
            index.setdefault(d.device, {}).setdefault(ref.uid, []).append(self._placed(ref.uid, d))

    def _index(self, devices: Mapping[str, dict[str, Any]]) -> None:
        if self._indexed is devices:
            return
        self._sets_of = {name: _counter_sets(dev) for name, dev in devices.items()}
        self._devices_on = {}
        for name, sets in self._sets_of.items():
            for cs in sets:
                self._devices_on.setdefault(cs, set()).add(name)
        self._indexed = devices

    def check(self, ref: ClaimRef, prepared: tuple[list[dict[str, Any]], list[PreparedDevice]],
              slices: Sequence[dict[str, Any]], devices: Mapping[str, dict[str, Any]], features: Features) -> None:
        results, new_devs = prepared
        # Admin access never conflicts with other allocations (upstream semantics).
        new = [self._placed(ref.uid, d) for r, d in zip(results, new_devs, strict=True) if not r.get("adminAccess")]
        if not new:
            return
        self._index(devices)
        names = {p.device for p in new}
        sets = {cs for n in names for cs in self._sets_of.get(n, ())}
        candidates = set(names)
        for cs in sets:
            candidates |= self._devices_on.get(cs, set())
        others: list[PlacedDevice] = []
        for name in candidates:
            for uid, ps in self.counted.get(name, {}).items():
                if uid != ref.uid:
                    others.extend(ps)
            for uid, ps in self.plain.get(name, {}).items():
                if uid != ref.uid:
                    others.append(ps[0])
                    break
        relevant = names | {p.device for p in others}
        try:
            violations = validate_combination(_subset(slices, relevant, sets), others + new, features)
        except InputError as exc:  # e.g. an unparsable consumedCounters quantity in the allocation
            raise PrepareError(f"claim {ref.namespace}/{ref.name}: cannot revalidate: {exc}") from None
        mine = [v for v in violations if any(d.rsplit("/", 1)[-1] in names for d in v.devices)]
        if mine:
            detail = "; ".join(v.message for v in mine)
            raise PrepareError(f"claim {ref.namespace}/{ref.name}: preparation-time revalidation failed: {detail}")


def _counter_sets(device: Mapping[str, Any] | None) -> set[str]:
    return {str(c.get("counterSet")) for c in (device or {}).get("consumesCounters") or ()}


def _subset(slices: Sequence[dict[str, Any]], devices: set[str], sets: set[str]) -> list[dict[str, Any]]:
    """The slices cut down to the relevant devices and counter sets (keeps revalidation O(claim))."""
    out = []
    for spec in slices:
        spec = spec.get("spec", spec)
        if spec.get("devices"):
            keep = [d for d in spec["devices"] if d.get("name") in devices]
            if keep:
                out.append({**spec, "devices": keep})
        elif spec.get("sharedCounters"):
            keep = [c for c in spec["sharedCounters"] if c.get("name") in sets]
            if keep:
                out.append({**spec, "sharedCounters": keep})
    return out


