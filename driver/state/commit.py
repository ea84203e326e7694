"""The second half of a prepare: write what was decided, then commit it or take it all back.

driver.state.prepare decides under the global lock (validation, PrepareStarted records in memory);
this part runs outside it and outside the state gate, holding only the claims' own locks: persist
the PrepareStarted records, write device metadata and CDI specs, and at the commit point (the
call's deadline checked one last time) mark PrepareCompleted, or roll back so that nothing of an
unfinished call stays on disk or reserved. Kept apart from the deciding half so each reads in one
sitting; a mixin of driver.state.prepare.DeviceState, whose attributes it uses.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from driver.deadline import Deadline
from driver.errors import CallAborted, FakeDraError
from driver.state.checkpoint import COMPLETED, ClaimEntry
from driver.state.inflight import Flight
from driver.state.types import ClaimRef, PreparedDevice, PrepareResult

log = logging.getLogger("fake-dra.state")
Batch = tuple[ClaimRef, list[PreparedDevice]]
OVERRULED = ("unprepared while this prepare was still in flight (the kubelet cancelled it); nothing was kept, "
             "prepare again if the claim is still needed")


class CommitPrepares:
    """`_act` and `_roll_back` of DeviceState."""

    def _act(self, batch: list[Batch], before: dict[str, ClaimEntry | None],
             results: dict[str, PrepareResult], recorded: int,
             claims: Mapping[str, dict[str, Any]], deadline: Deadline, flight: Flight) -> tuple[list[Batch], int]:
        """Outside the global lock (the claims' own locks are held): persist PrepareStarted, write
        the CDI specs, mark PrepareCompleted. Returns the claims that succeeded and the version
        recording them."""
        try:
            self._journal.write(durable=False, need=recorded)
        except OSError as exc:
            with self._lock:
                for uid, old in before.items():
                    self._set_entry(uid, old)
                self._journal.bump()
            for ref, _ in batch:
                results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: writing checkpoint: {exc}")
            return [], 0
        self._crash("prepare-started")
        ok: list[Batch] = []
        failed: list[ClaimRef] = []
        pool_devices = self._pool.get(refresh_if_stale=False)[1]
        for ref, devs in batch:
            step = "writing device metadata"
            try:
                files = self._metadata.write(ref, claims[ref.uid], devs, pool_devices, self._pool.unrequested)
                step = "writing CDI spec"
                self._cdi.write(ref, devs, self._metadata.mounts(files, devs), self._store.boot_id)
                ok.append((ref, devs))
            except Exception as exc:  # noqa: BLE001 - whatever it is, this claim only
                if not isinstance(exc, (OSError, FakeDraError)):
                    log.exception("writing a CDI spec failed unexpectedly", extra={"claim": ref.uid})
                failed.append(ref)
                what = (str(exc) if isinstance(exc, FakeDraError)  # e.g. a metadata path it cannot name
                        else f"claim {ref.namespace}/{ref.name}: {step}: {exc}")
                results[ref.uid] = PrepareResult(error=what)
        if self._status is not None:  # informational: never fails the claims
            self._status.prepared([(ref, claims[ref.uid], devs) for ref, devs in ok], pool_devices, deadline)
        self._crash("prepare-cdi-written")
        try:
            deadline.check("prepare")  # the commit point: past it the call's answer stands
        except CallAborted as exc:
            if self._status is not None and ok:  # take back what was just reported (its own budget:
                self._status.unprepared(ok, pool_devices)  # a stale Ready would outlive the rollback)
            self._roll_back(batch, before, results, str(exc))
            return [], 0
        # An unprepare of a claim of this call came in meanwhile (it waits for the claim's lock):
        # it wins, so this call keeps nothing of that claim and the unprepare then finds it gone.
        late = {ref.uid for ref, _ in batch if self._flights.overruled(flight, ref.uid)}
        if late:
            late_ok = [(ref, devs) for ref, devs in ok if ref.uid in late]
            if self._status is not None and late_ok:
                self._status.unprepared(late_ok, pool_devices)
            self._roll_back([b for b in batch if b[0].uid in late], before, results, OVERRULED)
            ok = [b for b in ok if b[0].uid not in late]
            failed = [ref for ref in failed if ref.uid not in late]
        # Roll back in an order that cannot fail halfway: first the records (memory only), so a
        # failed claim reserves nothing whatever the disk does; then, best effort, any spec an
        # earlier attempt left (a read-only CDI root refuses even to unlink a missing file).
        with self._lock:
            for ref, devs in ok:
                self._set_entry(ref.uid, ClaimEntry(ref, COMPLETED, self._store.boot_id, devs))
            for ref in failed:
                self._set_entry(ref.uid, before[ref.uid])
            version = self._journal.bump()
        for ref in failed:
            try:
                self._cdi.remove(ref.uid)
                self._metadata.remove(ref.uid)
            except OSError as exc:
                log.warning("cannot remove the CDI spec or device metadata of a claim whose preparation failed",
                            extra={"claim": ref.uid, "error": str(exc)})
        return ok, version

    def _roll_back(self, batch: list[Batch], before: dict[str, ClaimEntry | None],
                   results: dict[str, PrepareResult], reason: str) -> None:
        """Undo a prepare that did not commit: the CDI specs first, then the records. A spec that
        cannot be removed keeps its claim recorded as PrepareStarted (reserved, never an orphan
        spec); a claim without a spec reserves nothing even when the unlink fails (a read-only
        root refuses even to unlink a missing file). The next write of the checkpoint (at the
        latest `shutdown`'s flush) persists the result."""
        kept: set[str] = set()
        for ref, _ in batch:
            results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: {reason}")
            try:
                self._cdi.remove(ref.uid)
                self._metadata.remove(ref.uid)  # only after its spec (which bind-mounts it) is gone
            except OSError as exc:
                if self._cdi.exists(ref.uid):
                    kept.add(ref.uid)
                    log.error("rolling back: cannot remove CDI spec; the claim stays reserved",
                              extra={"claim": ref.uid, "error": str(exc)})
        with self._lock:
            for ref, _ in batch:
                if ref.uid not in kept:
                    self._set_entry(ref.uid, before[ref.uid])
            self._journal.bump()
        log.warning("rolled back an unfinished prepare", extra={"claims": len(batch), "reason": reason})
