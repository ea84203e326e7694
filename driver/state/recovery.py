"""Start-up recovery: which claims this node holds, from the checkpoint or, when it cannot be used,
from the evidence on disk, in an order that survives a crash at every step.

Why: "no checkpoint" must never mean "nothing is prepared". When `checkpoint.json` is missing
(deleted while CDI specs remained), corrupt, or written by a newer release (a rollback), starting
empty would let a new claim take a device that acknowledged claims still hold. Every prepare leaves
evidence besides its record (driver.state.prepare writes the record, then the claim's device
metadata, then its CDI spec), so:

- a usable checkpoint is authoritative (records of another boot are dropped: nothing survives a
  reboot);
- otherwise the state is rebuilt: each of our CDI specs (its `<driver>/prepared` annotation) is a
  PrepareCompleted record, unless the spec names another boot; each claim with device metadata
  but no spec is a PrepareStarted record (its devices stay reserved until the kubelet prepares it
  again or unprepares it: only a spec is ever answered from, and only its own prepare completes
  it).

The order makes recovery idempotent: whatever the step a crash (or a full disk) interrupts, the
next start finds the same evidence and does the same thing.

1. an unusable file is kept for a human by a hard link (`checkpoint.json.corrupt-<time>`), which
   needs no data blocks and leaves `checkpoint.json` where it is (step `recover-read` follows);
2. the rebuilt checkpoint replaces it atomically and durably (tmp, fsync, rename, directory
   fsync; step `recover-saved`). Before this point the old file, or its absence, and the evidence
   are untouched; a write that fails is a start-up error and the next start repeats 1-2;
3. only then is anything removed: the specs of another boot here, orphan device metadata by the
   caller (driver.state.metadata `prune`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from driver.state.cdi import CdiWriter
from driver.state.checkpoint import COMPLETED, STARTED, Checkpoint, CheckpointStore, ClaimEntry
from driver.state.metadata import read_evidence
from driver.state.types import PreparedDevice

log = logging.getLogger("fake-dra.state")


def recover(store: CheckpointStore, cdi: CdiWriter, metadata_root: Path, driver_name: str,
            crash: Callable[[str], None]) -> Checkpoint:
    """The claims this node holds, with the checkpoint durable on disk when it was rebuilt.
    Raises OSError when the rebuilt checkpoint cannot be written (the caller's start-up error).
    `crash(step)` is the test hook of driver.commands.run (steps recover-read, recover-saved)."""
    loaded = store.load()
    if loaded.checkpoint is not None:
        cp = loaded.checkpoint
        _drop_previous_boot(store, cdi, cp)
        return cp
    if loaded.problem != "missing":
        aside = store.keep_aside()
        log.error(f"checkpoint {store.path} is {loaded.problem}; "
                  f"{f'kept as {aside.name}, ' if aside else ''}rebuilding the state from the CDI specs and "
                  "device metadata", extra={"path": str(store.path), "kept_as": str(aside) if aside else None})
    cp, other_boot = rebuild(store.boot_id, cdi, metadata_root, driver_name)
    if loaded.problem == "missing" and not cp.claims and not other_boot:
        return cp  # a first start: nothing to record
    crash("recover-read")
    store.save(cp)
    crash("recover-saved")
    completed = sum(e.state == COMPLETED for e in cp.claims.values())
    log.warning(f"rebuilt the checkpoint: {completed} prepared claims from CDI specs, "
                f"{len(cp.claims) - completed} reserved from device metadata (PrepareStarted)",
                extra={"claims": len(cp.claims), "path": str(store.path)})
    for uid in other_boot:
        cdi.remove(uid)  # after the save: until then the spec was evidence (of an older boot)
    if other_boot:
        log.info("removed CDI specs of claims prepared before the last reboot", extra={"claims": len(other_boot)})
    return cp


def rebuild(boot: str, cdi: CdiWriter, metadata_root: Path, driver_name: str) -> tuple[Checkpoint, list[str]]:
    """(the checkpoint the evidence describes, UIDs of specs prepared in another boot)."""
    cp, other_boot = Checkpoint(), []
    for spec in cdi.read_prepared():
        if boot and spec.boot_id and spec.boot_id != boot:
            other_boot.append(spec.ref.uid)
            continue
        # Recorded as prepared in this boot: an empty boot ID would never match a later boot,
        # so the entry would survive every reboot and keep its devices reserved.
        cp.claims[spec.ref.uid] = ClaimEntry(spec.ref, COMPLETED, boot, spec.devices)
    held = {(d.pool, d.device) for e in cp.claims.values() for d in e.devices if not d.admin_access}
    for record in read_evidence(metadata_root, driver_name):
        uid = record.ref.uid
        if uid in cp.claims or uid in other_boot:
            continue
        devices = [PreparedDevice((request,), pool, device, (cdi.device_id(uid, device),))
                   for request, pool, device in record.devices]
        if any((d.pool, d.device) in held for d in devices):
            # Not answered from, never completed: a leftover of a prepare that failed and whose
            # files could not be removed. A spec's claim keeps the device.
            log.warning("device metadata names a device a prepared claim holds; not reserving it again",
                        extra={"claim": uid})
            continue
        cp.claims[uid] = ClaimEntry(record.ref, STARTED, boot, devices)
        held |= {(d.pool, d.device) for d in devices}
    return cp, other_boot


def _drop_previous_boot(store: CheckpointStore, cdi: CdiWriter, cp: Checkpoint) -> None:
    """After a reboot nothing is prepared any more: the kubelet re-prepares what is still in use
    (from scratch), so older-boot entries would only reserve devices forever. Their specs go first
    (a persistent --cdi-root keeps them across reboots), then the records: a crash in between
    leaves records the next start drops. Specs of another boot without a record (a rebuild was
    interrupted after its save) go too."""
    boot = store.boot_id
    old = [uid for uid, e in cp.claims.items() if boot and e.boot_id and e.boot_id != boot]
    for uid in old:
        cdi.remove(uid)
        del cp.claims[uid]
    if old:
        store.save(cp)
    leftovers = [s.ref.uid for s in cdi.read_prepared(skip=set(cp.claims)) if boot and s.boot_id and s.boot_id != boot]
    for uid in leftovers:
        cdi.remove(uid)
    if old or leftovers:
        log.info("dropped claims prepared before the last reboot", extra={"claims": len(old) + len(leftovers)})
