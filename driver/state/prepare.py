"""NodePrepareResources / NodeUnprepareResources without gRPC: validate, revalidate, act, record.

Order per request (compute, then act, then record; docs/architecture.md §3, "The claim's state in
the plugin"):
1. outside every lock and the state gate: validate the names and fetch every claim (API latency
   must not serialise); then take the claims' own locks (driver.state.claimlocks: held to the
   answer) and one of the state gate's slots (driver.state.ownership.StateGate);
2. in the gate, under the state's lock: idempotent answers for claims already prepared in this
   boot (recreating a lost CDI spec); for the rest check allocation/UID/driver/pool/device
   existence, parse opaque config and revalidate counters, compatibility groups and exclusivity
   together with every device already prepared on the node (driver.allocator.rules.validate_combination
   via driver.state.revalidate — the allocator's own rules), and record PrepareStarted in memory.
   Then the call leaves the gate: nothing after this waits for another call's CPU work;
3. record PrepareStarted on disk (atomic rename, no fsync), write the CDI specs, mark
   PrepareCompleted in memory; then make the checkpoint durable (fsync) before answering.
   Concurrent calls share both checkpoint writes and the fsync (group commit, driver.state.journal),
   and no lock but the claims' own is held across disk I/O.
A crash anywhere leaves a state the retried call repairs: a PrepareStarted claim is simply
prepared again (its devices stay reserved meanwhile), a CDI spec always has a checkpoint record.
Errors are per claim; only a failure to write the checkpoint fails the claims of that batch.
The state directory is owned by one plugin process at a time (flock, driver.state.ownership), and
every call is bounded by a Deadline (its gRPC deadline, the kubelet's 45 s, its caller's or a
shutdown's cancellation): a prepare whose deadline passes before it commits (marks
PrepareCompleted) rolls back, so nothing is written after `shutdown` returns and the successor
reads a settled state, and nothing is kept of a call the kubelet cancelled. An unprepare overrules
every prepare of the same claim still in flight (driver.state.inflight). What the node holds at
start comes from driver.state.recovery. Step 3 lives in driver.state.commit (with the rollback),
NodeUnprepareResources in driver.state.unprepare; both are mixins of DeviceState.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from driver.deadline import KUBELET_CALL_TIMEOUT_S, Deadline
from driver.errors import CallAborted, FakeDraError, NotFoundError, PrepareError
from driver.features import Features
from driver.model.claimshape import check_claim_shape
from driver.personality.base import DriverProfile, PreparedElsewhere
from driver.personality.fakedra import FakeDraDriver
from driver.state.cdi import CdiWriter
from driver.state.claimlocks import ClaimLocks
from driver.state.allocation import devices_to_prepare
from driver.state.checkpoint import COMPLETED, STARTED, Checkpoint, CheckpointStore, ClaimEntry
from driver.state.commit import OVERRULED, Batch, CommitPrepares
from driver.state.claimstatus import ClaimStatusReporter
from driver.state.metadata import DeviceMetadataWriter
from driver.state.names import check_label, check_subdomain, check_uid
from driver.state.names import shorten as _short
from driver.state.inflight import Flight, InFlight
from driver.state.journal import Journal
from driver.state.ownership import BUSY, CallGate, StateDirLock, StateGate, startup_io
from driver.state.pool import PoolCache
from driver.state.recovery import recover
from driver.state.revalidate import PlacedIndex
from driver.state.types import ClaimRef, ClaimSource, PreparedDevice, PrepareResult, dedupe_refs
from driver.state.unprepare import UnprepareCalls

log = logging.getLogger("fake-dra.state")
CrashHook = Callable[[str], None]
# Calls validating at once (the state gate). Their work is serialised by the state's lock anyway:
# one slot works, the other has its call ready to go the moment the lock is free.
DEFAULT_CONCURRENCY = 2


def _no_crash(step: str) -> None:
    return None


class DeviceState(CommitPrepares, UnprepareCalls):
    """Prepared claims of this node; thread-safe; one instance per plugin process."""

    def __init__(
        self,
        *,
        driver_name: str,
        claims: ClaimSource,
        pool: PoolCache,
        cdi: CdiWriter,
        checkpoint: CheckpointStore,
        crash_hook: CrashHook = _no_crash,
        metadata: DeviceMetadataWriter | None = None,
        claim_status: ClaimStatusReporter | None = None,
        max_call_s: float = KUBELET_CALL_TIMEOUT_S,
        when_owned: Callable[[], None] | None = None,
        profile: DriverProfile | None = None,
        lock_wait_s: float | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        """`profile`: the personality's driver this state prepares for (default: fake-dra's own driver
        named `driver_name`): its opaque configs, container env and prepare-time checks;
        `metadata` writes KEP-5304 device metadata files (default: off, only cleans up);
        `claim_status` reports VFs in ResourceClaim status.devices (default: not at all);
        `max_call_s` bounds every call (the kubelet's 45 s); `when_owned` runs once this process
        owns the state directory, before anything in it or in the CDI root is touched (run.py
        probes the kubelet sockets there); `lock_wait_s` bounds the wait for another process's
        hold on the state directory (None: for ever); `concurrency`: how many calls validate at
        once (driver.state.ownership.StateGate; claim reads and disk flushes are not counted)."""
        self.driver_name = driver_name
        self.profile = profile if profile is not None else FakeDraDriver(driver_name)
        self._claims = claims
        self._pool = pool
        self._cdi = cdi
        self._store = checkpoint
        self._crash = crash_hook
        self._metadata = metadata or DeviceMetadataWriter(checkpoint.dir, driver_name, enabled=False)
        self._status = claim_status
        self._lock = threading.Lock()
        self._claim_locks = ClaimLocks()
        # Revalidation is strict regardless of the scheduler's gates: that is its point.
        self._features = Features.all_on()
        self._calls = CallGate(max_call_s)
        self._gate = StateGate(concurrency)
        self._flights = InFlight()
        # Called (outside every lock) after a call changed what is prepared: `run` republishes then when
        # the personality's driver hides the siblings of prepared devices.
        self.after_change: Callable[[], None] | None = None
        # Two plugin processes (a surging rolling update) must never both own the checkpoint: the
        # newcomer waits for the old one's lock. Start-up faults are InputErrors naming the path.
        self._dir_lock = StateDirLock(checkpoint.dir, lock_wait_s)
        try:
            with startup_io("state directory", checkpoint.dir):
                checkpoint.ensure_dir()
            self._dir_lock.acquire()
            if when_owned is not None:
                when_owned()
            with startup_io("CDI root", cdi.root):
                cdi.ensure_root()
                for tmp in cdi.remove_stale_temps():
                    log.info("removed the temp file of an interrupted CDI spec write", extra={"path": str(tmp)})
            with startup_io("loading the checkpoint in state directory", checkpoint.dir):
                checkpoint.remove_stale_temps()
                self._cp = self._load()
                self._metadata.prune(set(self._cp.claims))
                for tmp in self._metadata.remove_stale_temps():
                    log.info("removed the temp file of an interrupted device metadata write", extra={"path": str(tmp)})
        except BaseException:
            self._dir_lock.release()
            raise
        self._placed = PlacedIndex(self._cp, driver_name)
        self._journal = Journal(checkpoint, self._cp, self._lock)

    # -- start-up -------------------------------------------------------------------------

    def _load(self) -> Checkpoint:
        return recover(self._store, self._cdi, self._metadata.root, self.driver_name, self._crash)

    def shutdown(self, grace_s: float, cancel_s: float) -> bool:
        """Let the running calls finish for up to grace_s, cancel (roll back) the rest, and flush.
        True when no call can write any more: then `close` may release the state directory.
        False when a call is still writing after cancel_s: the caller must then exit the process
        without calling `close` (driver.state.ownership explains why that is safe)."""
        if not self._calls.drain(grace_s, cancel_s):
            return False
        try:
            self._journal.flush()  # the rollbacks of cancelled calls reach the disk before the successor reads it
        except OSError as exc:
            # The file then still holds their PrepareStarted records: reserved until retried, harmless.
            log.error("final checkpoint write failed", extra={"path": str(self._store.path), "error": str(exc)})
        return True

    def close(self) -> None:
        """Release the state directory (the process exiting does the same). Nothing is written
        afterwards, even by a call that somehow slipped past `shutdown`."""
        self._journal.close(then=self._dir_lock.release)

    def prepared(self) -> dict[str, ClaimEntry]:
        with self._lock:
            return dict(self._cp.claims)

    def count(self) -> int:
        """How many claims are recorded (the metrics gauge; no copy)."""
        return len(self._cp.claims)

    def _set_entry(self, uid: str, entry: ClaimEntry | None) -> None:
        """Under self._lock: the one way to change a claim's record after start-up, so the
        revalidation index and the checkpoint fragment cache follow incrementally."""
        if entry is None:
            self._cp.claims.pop(uid, None)
        else:
            self._cp.claims[uid] = entry
        self._placed.update(uid, entry)
        self._journal.changed(uid)

    # -- prepare --------------------------------------------------------------------------

    def prepare(self, refs: Sequence[ClaimRef], timeout_s: float | None = None,
                abandoned: threading.Event | None = None) -> dict[str, PrepareResult]:
        """`timeout_s`: how long the caller still waits (its gRPC deadline); never more than max_call_s.
        `abandoned`: set when the caller cancels the call or goes away (the gRPC context ended)."""
        return self._call(refs, timeout_s, abandoned, self._prepare, lambda error: PrepareResult(error=error))

    def _call(self, refs: Sequence[ClaimRef], timeout_s: float | None, abandoned: threading.Event | None,
              work: Callable[[Sequence[ClaimRef], Deadline], dict[str, Any]],
              refused: Callable[[str], Any]) -> dict[str, Any]:
        """One kubelet call: bounded by its deadline and counted by the call gate, so a shutdown can
        drain or cancel it. A call refused before it changed anything (CallAborted: the plugin is
        closing, the deadline passed, the caller went away) answers every claim with
        `refused(reason)`; the names in it are shortened, since a claim whose names failed
        validation may be among them."""
        deadline = self._calls.deadline(timeout_s, abandoned)
        with self._calls.call():
            try:
                return work(refs, deadline)
            except CallAborted as exc:
                return {ref.uid: refused(f"claim {_short(ref.namespace)}/{_short(ref.name)}: {exc}") for ref in refs}

    def _prepare(self, refs: Sequence[ClaimRef], deadline: Deadline) -> dict[str, PrepareResult]:
        results: dict[str, PrepareResult] = {}
        unique = dedupe_refs(refs, results, PrepareResult)
        with self._flights.prepare(ref.uid for ref in unique) as flight:
            return self._prepare_fetched(self._fetch_all(unique, deadline, results), results, flight, deadline)

    def _fetch_all(self, refs: Sequence[ClaimRef], deadline: Deadline,
                   results: dict[str, PrepareResult]) -> list[tuple[ClaimRef, dict[str, Any]]]:
        """Read every claim, outside the state gate and every lock: API latency must not stall the
        other calls of the node."""
        fetched: list[tuple[ClaimRef, dict[str, Any]]] = []
        self._crash("prepare-read")  # test hook: a slow API read (FAKE_DRA_PAUSE_AT), or a kill before any write
        for ref in refs:
            try:
                _check_ref(ref)
            except FakeDraError as exc:  # the names are not trusted yet: shown shortened
                results[ref.uid] = PrepareResult(error=f"claim {_short(ref.namespace)}/{_short(ref.name)}: {exc}")
                continue
            try:
                deadline.check(f"claim {ref.namespace}/{ref.name}")
                fetched.append((ref, self._fetch(ref, deadline)))
            except FakeDraError as exc:
                results[ref.uid] = PrepareResult(error=str(exc))
            except Exception as exc:  # a claim source's bug must fail this claim, not the call
                log.exception("reading a claim failed unexpectedly", extra={"claim": _short(f"{ref.namespace}/{ref.name}")})
                results[ref.uid] = PrepareResult(
                    error=f"claim {_short(ref.namespace)}/{_short(ref.name)}: reading the claim failed: {type(exc).__name__}")
        return fetched

    def _prepare_fetched(self, fetched: list[tuple[ClaimRef, dict[str, Any]]], results: dict[str, PrepareResult],
                         flight: Flight, deadline: Deadline) -> dict[str, PrepareResult]:
        with self._claim_locks.hold((ref.uid for ref, _ in fetched), deadline) as mine:
            if not mine:
                return self._busy(fetched, results)
            with self._calls.mutating(deadline, "prepare"):
                return self._prepare_locked_claims(fetched, results, flight, deadline)

    @staticmethod
    def _busy(fetched: list[tuple[ClaimRef, dict[str, Any]]], results: dict[str, PrepareResult]
              ) -> dict[str, PrepareResult]:
        for ref, _ in fetched:
            results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: {BUSY}")
        return results

    def _prepare_locked_claims(self, fetched: list[tuple[ClaimRef, dict[str, Any]]], results: dict[str, PrepareResult],
                               flight: Flight, deadline: Deadline) -> dict[str, PrepareResult]:
        """Holding the claims' own locks: validate and record (in a gate slot, under the global
        lock), then act, commit and make durable outside the gate."""
        with self._gate.slot(deadline) as working:
            if not working:
                return self._busy(fetched, results)
            with self._lock:
                fetched = [(ref, claim) for ref, claim in fetched if not self._overruled(ref, flight, results)]
                pending, batch, before, recorded = self._prepare_locked(fetched, results)
        need = None  # already prepared claims whose flush failed earlier: everything
        if batch:
            ok, done = self._act(batch, before, results, recorded, dict((r.uid, c) for r, c in fetched),
                                 deadline, flight)
            need = done if not pending else None
            pending.extend(ok)
            if not pending and done:
                # Every claim failed (no spec, no metadata) and was rolled back in memory: let
                # the file say so too (best effort, no fsync), or a restart would reserve their
                # devices again. (A cancelled call leaves that to shutdown's final flush.)
                with contextlib.suppress(OSError, CallAborted):
                    self._journal.write(durable=False)
        if pending:
            try:
                self._journal.flush(need)
            except OSError as exc:
                # The claims stay recorded (and reserved); the kubelet's retry finishes them.
                for ref, _ in pending:
                    results[ref.uid] = PrepareResult(
                        error=f"claim {ref.namespace}/{ref.name}: writing checkpoint: {exc}")
                return results
            self._crash("prepare-completed")
        for ref, devs in pending:
            results[ref.uid] = PrepareResult(devices=tuple(devs))
        for ref, devs in batch:
            if ref.uid in results and not results[ref.uid].error:
                log.info("prepared claim", extra={"claim": f"{ref.namespace}/{ref.name}", "uid": ref.uid,
                                                  "devices": [d.device for d in devs]})
        if batch:
            self._changed()
        return results

    def _changed(self) -> None:
        if self.after_change is not None:
            try:
                self.after_change()
            except Exception:  # noqa: BLE001 - a hook's failure must not fail a kubelet call
                log.exception("after-change hook failed")

    def _overruled(self, ref: ClaimRef, flight: Flight, results: dict[str, PrepareResult]) -> bool:
        """Was the claim unprepared since this call started? Then it gets no record."""
        if not self._flights.overruled(flight, ref.uid):
            return False
        results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: {OVERRULED}")
        return True

    def _fetch(self, ref: ClaimRef, deadline: Deadline) -> dict[str, Any]:
        try:
            claim = self._claims.get_claim(ref.namespace, ref.name, deadline=deadline)
        except NotFoundError:
            raise PrepareError(f"claim {ref.namespace}/{ref.name} not found") from None
        check_claim_shape(claim, ref.namespace, ref.name)  # whatever the source: a mapping of mappings
        uid = (claim.get("metadata") or {}).get("uid")
        if uid != ref.uid:
            raise PrepareError(
                f"claim {ref.namespace}/{ref.name}: UID mismatch (API has {uid}, kubelet asked for {ref.uid}); "
                "the claim was probably deleted and recreated"
            )
        if not ((claim.get("status") or {}).get("allocation")):
            raise PrepareError(f"claim {ref.namespace}/{ref.name} is not allocated")
        return claim

    def _prepare_locked(self, fetched: list[tuple[ClaimRef, dict[str, Any]]], results: dict[str, PrepareResult]
                        ) -> tuple[list[Batch], list[Batch], dict[str, ClaimEntry | None], int]:
        """Idempotent answers, validation and in-memory PrepareStarted records.

        Returns (already prepared claims that only need a flush, claims to act on, their previous
        checkpoint entries for rollback, the checkpoint version that holds these records)."""
        boot = self._store.boot_id
        batch: list[tuple[ClaimRef, list[PreparedDevice]]] = []
        pending: list[tuple[ClaimRef, list[PreparedDevice]]] = []
        try:
            self._validate_all(fetched, results, boot, pending, batch)
        except BaseException:
            # Claims indexed for this call but never recorded must not stay reserved.
            for ref, _ in batch:
                self._placed.update(ref.uid, self._cp.claims.get(ref.uid))
            raise
        before = {ref.uid: self._cp.claims.get(ref.uid) for ref, _ in batch}
        for ref, devs in batch:
            self._set_entry(ref.uid, ClaimEntry(ref, STARTED, boot, devs))
        return pending, batch, before, (self._journal.bump() if batch else self._journal.version)

    def _validate_all(self, fetched: list[tuple[ClaimRef, dict[str, Any]]], results: dict[str, PrepareResult],
                      boot: str, pending: list[Batch], batch: list[Batch]) -> None:
        pool, devices = self._pool.get(refresh_if_stale=False)
        placed = self._placed
        refreshed = False  # rediscover at most once per call: it runs under the global lock
        for ref, claim in fetched:
            entry = self._cp.claims.get(ref.uid)
            if entry is not None and entry.state == COMPLETED and entry.boot_id == boot:
                step = "writing device metadata"
                try:
                    files = self._metadata.ensure(ref, claim, entry.devices, devices, self._pool.unrequested)
                    step = "writing CDI spec"
                    if not self._cdi.exists(ref.uid):
                        log.warning("CDI spec missing for a prepared claim; recreating it", extra={"claim": ref.uid})
                        self._cdi.write(entry.ref, entry.devices, self._metadata.mounts(files, entry.devices),
                                        self._store.boot_id)
                except OSError as exc:
                    results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: {step}: {exc}")
                    continue
                except FakeDraError as exc:
                    results[ref.uid] = PrepareResult(error=str(exc))
                    continue
                if self._journal.lagging:  # recorded by a call whose flush failed
                    pending.append((ref, entry.devices))
                else:
                    results[ref.uid] = PrepareResult(devices=tuple(entry.devices))
                continue
            def elsewhere(uid: str = ref.uid) -> list[PreparedElsewhere]:
                return self._elsewhere(uid, boot, batch)

            try:
                mine = devices_to_prepare(ref, claim, self.profile, pool.name, devices, self._cdi.device_id,
                                          final=refreshed, unrequested=self._pool.unrequested, elsewhere=elsewhere)
                if mine is None:  # the known devices might be stale: rediscover once
                    pool, refreshed = self._pool.refresh(), True
                    devices = self._pool.get(refresh_if_stale=False)[1]
                    mine = devices_to_prepare(ref, claim, self.profile, pool.name, devices, self._cdi.device_id,
                                              final=True, unrequested=self._pool.unrequested, elsewhere=elsewhere)
                assert mine is not None
                if not mine.devices:
                    # Nothing of ours to prepare: no record and no CDI spec (runtimes reject a spec
                    # without devices), so a retry or an unprepare finds nothing to undo either.
                    results[ref.uid] = PrepareResult()
                    continue
                placed.check(ref, (mine.results, mine.devices), pool.slices, devices, self._features,
                             positions=mine.positions)
            except FakeDraError as exc:
                results[ref.uid] = PrepareResult(error=str(exc))
                continue
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                # A malformed object from the API must not fail the other claims of the call.
                results[ref.uid] = PrepareResult(
                    error=f"claim {ref.namespace}/{ref.name}: malformed allocation: {type(exc).__name__}: {exc}")
                continue
            placed.add(ref, mine.devices)  # later claims of this call are checked against it
            batch.append((ref, mine.devices))

    def _elsewhere(self, uid: str, boot: str, batch: list[Batch]) -> list[PreparedElsewhere]:
        """Devices prepared (completed in this boot, or earlier in this call) for claims other than `uid`."""
        out = [PreparedElsewhere(claim=other, device=d.device, config=d.config, admin_access=d.admin_access)
               for other, entry in self._cp.claims.items()
               if other != uid and entry.state == COMPLETED and entry.boot_id == boot for d in entry.devices]
        out.extend(PreparedElsewhere(claim=ref.uid, device=d.device, config=d.config, admin_access=d.admin_access)
                   for ref, devs in batch if ref.uid != uid for d in devs)
        return out

    def prepared_devices(self) -> frozenset[str]:
        """Names of the devices prepared for any claim (the publisher hides their siblings, where the
        personality's driver does)."""
        with self._lock:
            return frozenset(d.device for e in self._cp.claims.values() for d in e.devices)


def _check_ref(ref: ClaimRef) -> None:
    check_uid(ref.uid)
    check_label(ref.namespace, "claim namespace")
    check_subdomain(ref.name, "claim name")
