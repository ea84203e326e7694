"""What the kubelet was told versus what the node holds: the invariants every adversarial run checks.

- claims lost: a prepare the plugin acknowledged (and for which no unprepare was sent since: once
  the kubelet sends one, the claim may go at any step) which the node no longer holds: no
  PrepareCompleted record in the checkpoint, or no CDI spec;
- double bookings: the devices the node holds (checkpoint records of any state plus CDI specs,
  whichever process wrote them) checked together with the allocator's own rules
  (driver.allocator.rules.validate_combination): an exclusive device twice, counters over
  capacity, incompatible partitions of one GPU;
- stale holds: a claim whose unprepare was acknowledged but that the node holds again;
- orphans: a CDI spec without a checkpoint record (the write order must never leave one).
Read the disk only while no call is in flight (the process dead, or between bursts).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driver.allocator.rules import PlacedDevice, validate_combination
from driver.features import Features
from driver.state.cdi import CdiWriter
from plugin.harness import DRIVER

ClaimTuple = tuple[str, str, str]


@dataclass
class Ledger:
    """Acknowledged outcomes only: an answer lost with a killed process proves nothing either way."""

    prepared: dict[str, ClaimTuple] = field(default_factory=dict)
    unprepared: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def acked_prepare(self, ref: ClaimTuple) -> None:
        with self._lock:
            self.prepared[ref[2]] = ref
            self.unprepared.discard(ref[2])

    def unprepare_sent(self, uid: str) -> None:
        """From now on the claim may be gone (the call may have done part of its work)."""
        with self._lock:
            self.prepared.pop(uid, None)

    def acked_unprepare(self, uid: str) -> None:
        with self._lock:
            self.prepared.pop(uid, None)
            self.unprepared.add(uid)


@dataclass
class Verdict:
    lost: list[str] = field(default_factory=list)
    double_bookings: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.double_bookings or self.stale or self.orphans)

    def __str__(self) -> str:
        return (f"lost={self.lost} double_bookings={self.double_bookings} stale={self.stale} "
                f"orphans={self.orphans}")


def held(state_dir: Path, cdi_root: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """(checkpoint claims, CDI-spec claims uid -> devices) as on disk now."""
    try:
        claims = json.loads((state_dir / "checkpoint.json").read_text())["claims"]
    except FileNotFoundError:
        claims = {}
    specs = {spec.ref.uid: [d.to_json() for d in spec.devices] for spec in CdiWriter(cdi_root, DRIVER).read_prepared()}
    return claims, specs


def check(ledger: Ledger, state_dir: Path, cdi_root: Path, slices: list[dict[str, Any]]) -> Verdict:
    claims, specs = held(state_dir, cdi_root)
    verdict = Verdict()
    with ledger._lock:
        acked, unprepared = dict(ledger.prepared), set(ledger.unprepared)
    for uid, ref in acked.items():
        entry = claims.get(uid)
        if entry is None or entry["state"] != "PrepareCompleted" or uid not in specs:
            verdict.lost.append(f"{ref[0]}/{ref[1]} ({uid}): {entry['state'] if entry else 'no record'}, "
                                f"{'a' if uid in specs else 'no'} CDI spec")
    verdict.stale = sorted(uid for uid in unprepared if uid in claims or uid in specs)
    verdict.orphans = sorted(uid for uid in specs if uid not in claims)
    placed: list[PlacedDevice] = []
    for uid in sorted(set(claims) | set(specs)):
        devices = claims[uid]["devices"] if uid in claims else specs[uid]
        for d in devices:
            consumed = d.get("consumedCounters")
            placed.append(PlacedDevice(claim=uid, request=(d.get("requestNames") or [""])[0], driver=DRIVER,
                                       pool=d["pool"], device=d["device"],
                                       consumed_counters=tuple(consumed) if consumed else None,
                                       share_id=d.get("shareID")))
    for v in validate_combination(slices, placed, Features.all_on()):
        verdict.double_bookings.append(f"{v.kind}: {v.message}")
    return verdict
