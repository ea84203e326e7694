"""Preparation-time revalidation (KEP-5963 driver responsibility 3) with an index of what is prepared.

Why a separate index: the rules themselves are driver.allocator.rules.validate_combination (one
implementation shared with the allocator); this module only decides *which* prepared devices to
hand it, so a node with thousands of prepared claims stays fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver.allocator.rules import (
    PlacedDevice,
    index_slices,
    pool_counter_sets,
    recorded_counters,
    validate_combination,
)
from driver.errors import InputError, PrepareError
from driver.features import Features
from driver.state.checkpoint import Checkpoint, ClaimEntry
from driver.state.types import ClaimRef, PreparedDevice


class PlacedIndex:
    """Devices already prepared on the node, indexed so revalidation looks only at what matters.

    Devices prepared for adminAccess results are not indexed: kube-scheduler does not count them
    as allocated, so they hold no device, counters or compatibility groups against other claims.

    Only devices that share a counter set with the new claim's devices (or are the same device)
    can change the verdict, so only those are handed to validate_combination. Extra placements of
    a shared (allowMultipleAllocations) device without a `consumedCounters` snapshot change nothing
    either — static counters are charged once per device — so one of them stands for all; this
    keeps a request with thousands of claims on one time-shared GPU linear instead of quadratic.

    The owner keeps it in step with the checkpoint through `update` (O(devices of that claim));
    `sync` rebuilds from a whole checkpoint (start-up, or to repair after an unexpected error).
    """

    def __init__(self, cp: Checkpoint, driver_name: str) -> None:
        self.driver = driver_name
        # device -> claim UID -> placements, split by whether they carry a consumedCounters snapshot
        self.counted: dict[str, dict[str, list[PlacedDevice]]] = {}
        self.plain: dict[str, dict[str, list[PlacedDevice]]] = {}
        self._sets_of: dict[str, set[str]] = {}
        self._devices_on: dict[str, set[str]] = {}
        self._indexed: Mapping[str, dict[str, Any]] | None = None
        self._slices: Sequence[dict[str, Any]] | None = None
        self._slice_devices: dict[str, list[tuple[int, int]]] = {}  # name -> (slice, position)
        self._slice_sets: dict[str, list[tuple[int, int]]] = {}
        self._claims: dict[str, list[PreparedDevice]] = {}  # uid -> the devices indexed for it
        self.sync(cp)

    def __len__(self) -> int:
        return len(self._claims)

    def sync(self, cp: Checkpoint) -> None:
        """Mirror a whole checkpoint: drop claims it lacks, (re)index those that differ."""
        for uid in [u for u in self._claims if u not in cp.claims]:
            self.remove(uid)
        for uid, entry in cp.claims.items():
            self.update(uid, entry)

    def update(self, uid: str, entry: ClaimEntry | None) -> None:
        """The checkpoint's entry for `uid` is now `entry` (None: removed)."""
        if entry is None:
            self.remove(uid)
        elif self._claims.get(uid) != entry.devices:
            self.add(entry.ref, entry.devices)

    def remove(self, uid: str) -> None:
        devices = self._claims.pop(uid, None)
        for d in devices or ():
            for index in (self.counted, self.plain):
                by_uid = index.get(d.device)
                if by_uid is not None and by_uid.pop(uid, None) is not None and not by_uid:
                    del index[d.device]

    def _placed(self, uid: str, d: PreparedDevice) -> PlacedDevice:
        return PlacedDevice(claim=uid, request=d.request_names[0] if d.request_names else "", driver=self.driver,
                            pool=d.pool, device=d.device, consumed_counters=d.consumed_counters, share_id=d.share_id)

    def add(self, ref: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        """Index a claim's devices (replacing what was indexed for it before)."""
        self.remove(ref.uid)
        self._claims[ref.uid] = list(devices)
        for d in devices:
            if d.admin_access:
                continue  # never conflicts with anything (upstream: not counted as allocated)
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

    def _subset(self, slices: Sequence[dict[str, Any]], devices: set[str], sets: set[str]) -> list[dict[str, Any]]:
        """The slices cut down to the relevant devices and counter sets (keeps revalidation
        O(claim)); looked up through an index of the slices, rebuilt when they are replaced."""
        if self._slices is not slices:
            self._slice_devices, self._slice_sets = {}, {}
            for i, spec in enumerate(slices):
                spec = spec.get("spec", spec)
                if spec.get("devices"):  # a slice lists devices or shared counters, never both
                    for j, d in enumerate(spec["devices"]):
                        self._slice_devices.setdefault(d.get("name"), []).append((i, j))
                elif spec.get("sharedCounters"):
                    for j, c in enumerate(spec["sharedCounters"]):
                        self._slice_sets.setdefault(c.get("name"), []).append((i, j))
            self._slices = slices
        picked: dict[int, tuple[str, list[tuple[int, dict[str, Any]]]]] = {}
        for names, where, key in ((devices, self._slice_devices, "devices"), (sets, self._slice_sets, "sharedCounters")):
            for name in names:
                for i, j in where.get(name, ()):
                    spec = slices[i].get("spec", slices[i])
                    picked.setdefault(i, (key, []))[1].append((j, spec[key][j]))
        out = []
        for i in sorted(picked):  # the slices' own order, and each slice's item order, as before
            key, items = picked[i]
            spec = slices[i].get("spec", slices[i])
            out.append({**spec, key: [item for _, item in sorted(items, key=lambda x: x[0])]})
        return out

    def check(self, ref: ClaimRef, prepared: tuple[list[dict[str, Any]], list[PreparedDevice]],
              slices: Sequence[dict[str, Any]], devices: Mapping[str, dict[str, Any]], features: Features,
              positions: Sequence[int] | None = None) -> None:
        """Raise PrepareError unless the claim's devices fit with everything already prepared.
        `positions` are the results' indexes in the claim (for messages; default 0, 1, ...)."""
        results, new_devs = prepared
        positions = list(positions) if positions is not None else list(range(len(results)))
        # Admin access never conflicts with other allocations (upstream semantics).
        new = [self._placed(ref.uid, d) for r, d in zip(results, new_devs, strict=True) if not r.get("adminAccess")]
        if not new:
            return
        self._index(devices)
        names = {p.device for p in new}
        sets = {cs for n in names for cs in self._sets_of.get(n, ())}
        if features.shared_consumable_capacity and any(d.consumed_counters for d in new_devs):
            self._check_recorded(ref, results, new_devs, positions, self._subset(slices, names, sets))
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
            violations = validate_combination(self._subset(slices, relevant, sets), others + new, features)
        except InputError as exc:  # e.g. an unparsable consumedCounters quantity in the allocation
            raise PrepareError(f"claim {ref.namespace}/{ref.name}: cannot revalidate: {exc}") from None
        # "recorded" violations belong to placements already prepared (this claim's records were
        # checked strictly above); they charged nothing and must not block this claim.
        mine = [v for v in violations if v.kind != "recorded" and any(d.rsplit("/", 1)[-1] in names for d in v.devices)]
        if mine:
            detail = "; ".join(v.message for v in mine)
            raise PrepareError(f"claim {ref.namespace}/{ref.name}: preparation-time revalidation failed: {detail}")


    def _check_recorded(self, ref: ClaimRef, results: Sequence[Mapping[str, Any]], new_devs: Sequence[PreparedDevice],
                        positions: Sequence[int], subset: Sequence[dict[str, Any]]) -> None:
        """The amounts the claim recorded (KEP-5941 consumedCounters) are checked, not trusted:
        a negative amount, a counter the device does not consume or one its requestPolicy
        forbids would let devices be prepared beyond what the hardware has."""
        try:
            infos, totals = index_slices(subset)
        except InputError as exc:
            raise PrepareError(f"claim {ref.namespace}/{ref.name}: cannot revalidate: {exc}") from None
        for pos, r, d in zip(positions, results, new_devs, strict=True):
            info = infos.get((self.driver, d.pool, d.device))
            if not d.consumed_counters or r.get("adminAccess") or info is None:
                continue  # an unknown device is validate_combination's to report
            where = f"status.allocation.devices.results[{pos}]"
            try:
                recorded_counters(info, d.consumed_counters, pool_counter_sets(totals, self.driver, d.pool), where)
            except InputError as exc:
                raise PrepareError(f"claim {ref.namespace}/{ref.name}: preparation-time revalidation failed: {exc}") from None


def _counter_sets(device: Mapping[str, Any] | None) -> set[str]:
    return {str(c.get("counterSet")) for c in (device or {}).get("consumesCounters") or ()}
