"""NodeUnprepareResources without gRPC: remove CDI specs and metadata, then the records.

An unprepare needs no API read (it works for deleted claims and unknown UIDs), overrules every
prepare of the same claim still in flight (driver.state.inflight) before it waits for anything,
and is idempotent: a retry after a failed checkpoint write finds the files gone and persists the
removal. A mixin of driver.state.prepare.DeviceState, whose attributes it uses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from driver.deadline import Deadline
from driver.errors import FakeDraError
from driver.state.names import check_uid
from driver.state.names import shorten as _short
from driver.state.ownership import BUSY
from driver.state.types import ClaimRef, dedupe_refs

log = logging.getLogger("fake-dra.state")


class UnprepareCalls:
    """`unprepare` of DeviceState."""

    def unprepare(self, refs: Sequence[ClaimRef], timeout_s: float | None = None,
                  abandoned: threading.Event | None = None) -> dict[str, str]:
        """claim UID -> error ("" on success). Works for deleted claims and unknown UIDs. Overrules
        every prepare of the same claims still in flight: none of them keeps anything."""
        return self._call(refs, timeout_s, abandoned, self._unprepare, str)

    def _unprepare(self, refs: Sequence[ClaimRef], deadline: Deadline) -> dict[str, str]:
        results: dict[str, str] = {}
        valid: list[ClaimRef] = []
        for ref in dedupe_refs(refs, results, lambda error="": error):
            try:
                check_uid(ref.uid)
                valid.append(ref)
            except FakeDraError as exc:
                results[ref.uid] = str(exc)
        self._flights.overrule(r.uid for r in valid)  # before waiting: a prepare of it may be reading it now
        with self._claim_locks.hold((r.uid for r in valid), deadline) as mine:
            if not mine:
                return self._unprepare_busy(valid, results)
            with self._calls.mutating(deadline, "unprepare"):
                return self._unprepare_valid(valid, results, deadline)

    @staticmethod
    def _unprepare_busy(valid: list[ClaimRef], results: dict[str, str]) -> dict[str, str]:
        for ref in valid:
            results[ref.uid] = f"claim {_short(ref.namespace)}/{_short(ref.name)}: {BUSY}"
        return results

    def _unprepare_valid(self, valid: list[ClaimRef], results: dict[str, str], deadline: Deadline) -> dict[str, str]:
        """Holding the claims' own locks: remove the files (in a gate slot), clear the status, drop
        the records and make that durable (outside the gate)."""
        with self._gate.slot(deadline) as working:
            if not working:
                return self._unprepare_busy(valid, results)
            for ref in valid:
                step = "removing CDI spec"
                try:
                    self._cdi.remove(ref.uid)
                    step = "removing device metadata"
                    self._metadata.remove(ref.uid)
                    results[ref.uid] = ""
                except OSError as exc:
                    results[ref.uid] = f"claim {_short(ref.namespace)}/{_short(ref.name)}: {step}: {exc}"
        if self._status is not None:
            recorded_devs = [(r, e.devices) for r in valid if not results[r.uid]
                             and (e := self._cp.claims.get(r.uid)) is not None]
            self._status.unprepared(recorded_devs, self._pool.get(refresh_if_stale=False)[1], deadline)
        self._crash("unprepare-cdi-removed")
        with self._lock:
            gone = [r for r in valid if not results[r.uid] and r.uid in self._cp.claims]
            released = {r.uid: [d.device for d in self._cp.claims[r.uid].devices] for r in gone}
            for r in gone:
                self._set_entry(r.uid, None)
            if gone:
                self._journal.bump()
        try:
            # Also persists removals of an earlier call whose flush failed (its retry lands here).
            self._journal.flush()
        except OSError as exc:
            for r in valid:
                if not results[r.uid]:
                    results[r.uid] = f"claim {_short(r.namespace)}/{_short(r.name)}: writing checkpoint: {exc}"
            return results
        if gone:
            self._crash("unprepare-completed")
        for r in gone:
            log.info("unprepared claim", extra={"claim": f"{_short(r.namespace)}/{_short(r.name)}", "uid": r.uid,
                                                "devices": released[r.uid]})
        if gone:
            self._changed()
        return results
