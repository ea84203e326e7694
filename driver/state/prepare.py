"""NodePrepareResources / NodeUnprepareResources without gRPC: validate, revalidate, act, record.

Order per request (compute, then act, then record; DESIGN.md §6):
1. outside the lock: validate the names and fetch every claim (API latency must not serialise);
2. under the lock: idempotent answers for claims already prepared in this boot (recreating a lost
   CDI spec); for the rest check allocation/UID/driver/pool/device existence, parse opaque config
   and revalidate counters, compatibility groups and exclusivity together with every device
   already prepared on the node (driver.allocator.rules.validate_combination — the allocator's
   own rules);
3. record PrepareStarted in the checkpoint, write the CDI specs, record PrepareCompleted.
A crash anywhere leaves a state the retried call repairs: a PrepareStarted claim is simply
prepared again, a CDI spec without a checkpoint entry is overwritten or removed.
Errors are per claim; only a failure to write the checkpoint fails the claims of that batch.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from driver.allocator.rules import PlacedDevice, validate_combination
from driver.errors import FakeDraError, InputError, NotFoundError, PrepareError
from driver.features import Features
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import COMPLETED, STARTED, Checkpoint, CheckpointStore, ClaimEntry
from driver.state.config import configs_for_results
from driver.state.device_env import device_env
from driver.state.names import check_label, check_subdomain, check_uid
from driver.state.pool import PoolCache, attr
from driver.state.types import ClaimRef, ClaimSource, PreparedDevice, PrepareResult

log = logging.getLogger("fake-dra.state")
CrashHook = Callable[[str], None]


def _no_crash(step: str) -> None:
    return None


class DeviceState:
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
    ) -> None:
        self.driver_name = driver_name
        self._claims = claims
        self._pool = pool
        self._cdi = cdi
        self._store = checkpoint
        self._crash = crash_hook
        self._lock = threading.Lock()
        # Revalidation is strict regardless of the scheduler's gates: that is its point.
        self._features = Features()
        checkpoint.ensure_dir()
        cdi.ensure_root()
        # Held for the process lifetime; 0600 like the checkpoint it guards.
        self._lock_file = os.fdopen(os.open(checkpoint.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600), "r+")
        self._cp = self._load()

    # -- start-up -------------------------------------------------------------------------

    def _load(self) -> Checkpoint:
        with self._file_lock():
            cp = self._store.load()
            if cp is not None:
                return cp
            cp = Checkpoint()
            for ref, devices in self._cdi.read_prepared():
                # Boot ID unknown: the next prepare of such a claim redoes it, which is harmless.
                cp.claims[ref.uid] = ClaimEntry(ref, COMPLETED, "", devices)
            self._store.save(cp)
            log.warning("rebuilt checkpoint from CDI specs", extra={"claims": len(cp.claims)})
            return cp

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        # Two plugin processes (rolling upgrade) must never interleave checkpoint writes.
        fcntl.flock(self._lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)

    def close(self) -> None:
        self._lock_file.close()

    def prepared(self) -> dict[str, ClaimEntry]:
        with self._lock:
            return dict(self._cp.claims)

    # -- prepare --------------------------------------------------------------------------

    def prepare(self, refs: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
        results: dict[str, PrepareResult] = {}
        fetched: list[tuple[ClaimRef, dict[str, Any]]] = []
        for ref in _dedupe(refs, results, PrepareResult):
            try:
                _check_ref(ref)
                fetched.append((ref, self._fetch(ref)))
            except FakeDraError as exc:
                results[ref.uid] = PrepareResult(error=str(exc))
        with self._lock, self._file_lock():
            self._prepare_locked(fetched, results)
        return results

    def _fetch(self, ref: ClaimRef) -> dict[str, Any]:
        try:
            claim = self._claims.get_claim(ref.namespace, ref.name)
        except NotFoundError:
            raise PrepareError(f"claim {ref.namespace}/{ref.name} not found") from None
        uid = (claim.get("metadata") or {}).get("uid")
        if uid != ref.uid:
            raise PrepareError(
                f"claim {ref.namespace}/{ref.name}: UID mismatch (API has {uid}, kubelet asked for {ref.uid}); "
                "the claim was probably deleted and recreated"
            )
        if not ((claim.get("status") or {}).get("allocation")):
            raise PrepareError(f"claim {ref.namespace}/{ref.name} is not allocated")
        return claim

    def _prepare_locked(self, fetched: list[tuple[ClaimRef, dict[str, Any]]], results: dict[str, PrepareResult]) -> None:
        boot = self._store.boot_id
        pool, devices = self._pool.get()
        batch: list[tuple[ClaimRef, list[PreparedDevice]]] = []
        placed = _Placed(self._cp, self.driver_name)
        for ref, claim in fetched:
            entry = self._cp.claims.get(ref.uid)
            if entry is not None and entry.state == COMPLETED and entry.boot_id == boot:
                if not self._cdi.exists(ref.uid):
                    log.warning("CDI spec missing for a prepared claim; recreating it", extra={"claim": ref.uid})
                    try:
                        self._cdi.write(entry.ref, entry.devices)
                    except OSError as exc:
                        results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: writing CDI spec: {exc}")
                        continue
                results[ref.uid] = PrepareResult(devices=tuple(entry.devices))
                continue
            try:
                prepared = self._compute(ref, claim, pool.name, devices)
                if prepared is None:  # the known devices might be stale: rediscover once
                    pool, devices = self._pool.refresh(), self._pool.get()[1]
                    prepared = self._compute(ref, claim, pool.name, devices, final=True)
                assert prepared is not None
                placed.check(ref, prepared, pool.slices, devices, self._features)
            except FakeDraError as exc:
                results[ref.uid] = PrepareResult(error=str(exc))
                continue
            placed.add(ref, prepared[1])
            batch.append((ref, prepared[1]))
        if batch:
            self._commit(batch, results, boot)

    def _compute(
        self, ref: ClaimRef, claim: dict[str, Any], pool_name: str, devices: Mapping[str, dict[str, Any]], final: bool = False
    ) -> tuple[list[dict[str, Any]], list[PreparedDevice]] | None:
        where = f"claim {ref.namespace}/{ref.name}"
        alloc = claim["status"]["allocation"].get("devices") or {}
        all_results = alloc.get("results") or []
        mine = [r for r in all_results if isinstance(r, Mapping) and r.get("driver") == self.driver_name]
        if not mine:
            others = sorted({str(r.get("driver")) for r in all_results if isinstance(r, Mapping)})
            log.warning("claim has no results for this driver; nothing to prepare",
                        extra={"claim": f"{ref.namespace}/{ref.name}", "drivers": others})
        types: list[str] = []
        for i, r in enumerate(mine):
            name = r.get("device")
            try:
                check_label(name, f"{where}: results[{i}].device")
                for part in str(r.get("request", "")).split("/"):
                    check_label(part, f"{where}: results[{i}].request")
            except InputError as exc:
                raise PrepareError(str(exc)) from None
            if r.get("pool") != pool_name:
                raise PrepareError(f"{where}: device {name} is in pool {r.get('pool')!r}, not this node's pool {pool_name!r}")
            if name not in devices:
                if not final:
                    return None
                raise PrepareError(f"{where}: device {name} of pool {pool_name} is not in the current inventory")
            types.append(str(attr(devices[name], "type", self.driver_name) or ""))
        configs = configs_for_results(alloc.get("config"), self.driver_name, mine, types)
        prepared: list[PreparedDevice] = []
        for r, cfg in zip(mine, configs, strict=True):
            name = r["device"]
            prepared.append(PreparedDevice(
                request_names=(str(r["request"]),),
                pool=pool_name,
                device=name,
                cdi_device_ids=(self._cdi.device_id(ref.uid, name),),
                consumed_counters=tuple(r["consumedCounters"]) if r.get("consumedCounters") else None,
                share_id=r.get("shareID"),
                env=device_env(ref, r, devices[name], cfg, self.driver_name),
            ))
        return mine, prepared

    def _commit(self, batch: list[tuple[ClaimRef, list[PreparedDevice]]], results: dict[str, PrepareResult], boot: str) -> None:
        before = {ref.uid: self._cp.claims.get(ref.uid) for ref, _ in batch}
        for ref, devs in batch:
            self._cp.claims[ref.uid] = ClaimEntry(ref, STARTED, boot, devs)
        try:
            # Not fsynced: losing this record to a power cut equals never having started, and the
            # boot ID change then makes the kubelet's retry prepare from scratch.
            self._store.save(self._cp, durable=False)
        except OSError as exc:
            for uid, old in before.items():
                _restore(self._cp, uid, old)
            for ref, _ in batch:
                results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: writing checkpoint: {exc}")
            return
        self._crash("prepare-started")
        ok: list[tuple[ClaimRef, list[PreparedDevice]]] = []
        for ref, devs in batch:
            try:
                self._cdi.write(ref, devs)
                ok.append((ref, devs))
            except OSError as exc:
                self._cdi.remove(ref.uid)
                _restore(self._cp, ref.uid, before[ref.uid])
                results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: writing CDI spec: {exc}")
        self._crash("prepare-cdi-written")
        for ref, devs in ok:
            self._cp.claims[ref.uid] = ClaimEntry(ref, COMPLETED, boot, devs)
        try:
            self._store.save(self._cp)
        except OSError as exc:
            # The claims stay PrepareStarted (they are recorded, so revalidation still counts them);
            # the kubelet retries and the retry completes them.
            for ref, _ in ok:
                results[ref.uid] = PrepareResult(error=f"claim {ref.namespace}/{ref.name}: writing checkpoint: {exc}")
            return
        self._crash("prepare-completed")
        for ref, devs in ok:
            results[ref.uid] = PrepareResult(devices=tuple(devs))
            log.info("prepared claim", extra={"claim": f"{ref.namespace}/{ref.name}", "uid": ref.uid,
                                              "devices": [d.device for d in devs]})

    # -- unprepare ------------------------------------------------------------------------

    def unprepare(self, refs: Sequence[ClaimRef]) -> dict[str, str]:
        """claim UID -> error ("" on success). Works for deleted claims and unknown UIDs."""
        results: dict[str, str] = {}
        valid: list[ClaimRef] = []
        for ref in _dedupe(refs, results, lambda error="": error):
            try:
                check_uid(ref.uid)
                valid.append(ref)
            except FakeDraError as exc:
                results[ref.uid] = str(exc)
        with self._lock, self._file_lock():
            for ref in valid:
                try:
                    self._cdi.remove(ref.uid)
                    results[ref.uid] = ""
                except OSError as exc:
                    results[ref.uid] = f"claim {ref.namespace}/{ref.name}: removing CDI spec: {exc}"
            self._crash("unprepare-cdi-removed")
            gone = [r for r in valid if not results[r.uid] and r.uid in self._cp.claims]
            if gone:
                removed = {r.uid: self._cp.claims.pop(r.uid) for r in gone}
                try:
                    self._store.save(self._cp)
                except OSError as exc:
                    self._cp.claims.update(removed)
                    for r in gone:
                        results[r.uid] = f"claim {r.namespace}/{r.name}: writing checkpoint: {exc}"
                    return results
                self._crash("unprepare-completed")
                for r in gone:
                    log.info("unprepared claim", extra={"claim": f"{r.namespace}/{r.name}", "uid": r.uid})
        return results


class _Placed:
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
        self._indexed: int | None = None
        for entry in cp.claims.values():
            self.add(entry.ref, entry.devices)

    def _placed(self, uid: str, d: PreparedDevice) -> PlacedDevice:
        return PlacedDevice(claim=uid, request=d.request_names[0] if d.request_names else "", driver=self.driver,
                            pool=d.pool, device=d.device, consumed_counters=d.consumed_counters, share_id=d.share_id)

    def add(self, ref: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        for d in devices:
            index = self.counted if d.consumed_counters else self.plain
            index.setdefault(d.device, {}).setdefault(ref.uid, []).append(self._placed(ref.uid, d))

    def _index(self, devices: Mapping[str, dict[str, Any]]) -> None:
        if self._indexed == id(devices):
            return
        self._sets_of = {name: _counter_sets(dev) for name, dev in devices.items()}
        self._devices_on = {}
        for name, sets in self._sets_of.items():
            for cs in sets:
                self._devices_on.setdefault(cs, set()).add(name)
        self._indexed = id(devices)

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
        violations = validate_combination(_subset(slices, relevant, sets), others + new, features)
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


def _restore(cp: Checkpoint, uid: str, old: ClaimEntry | None) -> None:
    if old is None:
        cp.claims.pop(uid, None)
    else:
        cp.claims[uid] = old


def _check_ref(ref: ClaimRef) -> None:
    check_uid(ref.uid)
    check_label(ref.namespace, "claim namespace")
    check_subdomain(ref.name, "claim name")


def _dedupe(refs: Sequence[ClaimRef], results: dict[str, Any], error: Callable[..., Any]) -> list[ClaimRef]:
    """Unique claims by UID; a UID sent twice with different names is an error for that UID."""
    seen: dict[str, ClaimRef] = {}
    bad: set[str] = set()
    for ref in refs:
        prev = seen.get(ref.uid)
        if prev is None:
            seen[ref.uid] = ref
        elif prev != ref:
            bad.add(ref.uid)
            results[ref.uid] = error(error=f"claim UID {ref.uid} listed twice with different names "
                                           f"({prev.namespace}/{prev.name} and {ref.namespace}/{ref.name})")
    return [r for uid, r in seen.items() if uid not in bad]
