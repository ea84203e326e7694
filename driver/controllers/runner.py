"""The control plane's loop: controllers (and a scheduler) over the local store's watch, until settled.

As kube-controller-manager runs its controllers: each controller lists what it watches once
(`resync`), then follows the store's watch (driver.store.watch: every change after a revision)
and reconciles the keys each change makes dirty, one work queue of keys, each key at most once in
the queue, and a key whose reconcile lost an optimistic-concurrency race (ConflictError) requeued
with a growing delay (client-go's rate-limited requeue). A reconcile may ask to be called again
after a delay (kwok's stage delays).

Reconciles run in chunks, each chunk one store transaction and each reconcile a savepoint in it
(one fsync per chunk, not per write; a failed reconcile undoes only its own writes). A chunk ends
after `CHUNK_S` so that other writers (`fake-dra schedule`, `apply`) wait at most that long.

The scheduler (kube-scheduler's cycle, driver.schedule, passed in by the command as a callable
that returns how many objects it wrote) runs when the queue is empty and something it reads has
changed since it last ran: pods, claims, templates, nodes, slices, classes.

Settled: the queue holds nothing (not even a delayed key), the watch has nothing new and the
scheduler has nothing new to look at: a pass that changed nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from driver.controllers.base import Controller
from driver.controllers.objects import Key, label
from driver.errors import ConflictError, InputError, NotFoundError
from driver.store.objectstore import ObjectStore
from driver.store.watch import Expired

log = logging.getLogger("fake-dra.cluster")

CHUNK_S = 0.25  # longest a chunk of reconciles holds the store's writer lock
CHUNK_KEYS = 500
SCHEDULER_READS = ("pods", "resourceclaims", "resourceclaimtemplates", "nodes", "resourceslices", "deviceclasses")
MAX_BACKOFF_S = 5.0


@dataclass
class Summary:
    settled: bool = False
    passes: int = 0
    reconciles: int = 0
    writes: dict[str, int] = field(default_factory=dict)  # by controller (and "scheduler")
    seconds: float = 0.0

    @property
    def total_writes(self) -> int:
        return sum(self.writes.values())


@dataclass
class _Item:
    due: float
    failures: int = 0


class Runner:
    def __init__(self, store: ObjectStore, controllers: Sequence[Controller], *,
                 scheduler: Callable[[], int] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.controllers = list(controllers)
        self.scheduler = scheduler
        self.clock = clock
        self.queue: dict[tuple[int, Key], _Item] = {}
        self.watched = sorted({r for c in self.controllers for r in c.watches} | set(SCHEDULER_READS))
        self.summary = Summary()

    # ---- queue ----------------------------------------------------------------------------------
    def _add(self, index: int, key: Key, due: float, failures: int = 0) -> None:
        item = self.queue.get((index, key))
        if item is None or due < item.due:
            self.queue[(index, key)] = _Item(due, failures if item is None else max(failures, item.failures))

    def _resync(self) -> None:
        now = self.clock()
        for i, c in enumerate(self.controllers):
            for key in c.resync(self.store):
                self._add(i, key, now)

    def _due(self, now: float) -> list[tuple[int, Key]]:
        return [k for k, item in self.queue.items() if item.due <= now]

    # ---- the loop -------------------------------------------------------------------------------
    def run(self, *, until_settled: bool = False, timeout_s: float | None = None,
            stop: threading.Event | None = None) -> Summary:
        """Run until settled (`until_settled`), `stop` is set, or `timeout_s` passes (then
        `summary.settled` is False)."""
        started = self.clock()
        with self.store.snapshot() as revision:
            self._resync()
        scheduler_dirty = True
        while True:
            if stop is not None and stop.is_set():
                break
            if timeout_s is not None and self.clock() - started > timeout_s:
                break
            now = self.clock()
            due = self._due(now)
            if due:
                self._chunk(due)
                continue
            revision, changed = self._follow(revision)
            if changed:
                scheduler_dirty = scheduler_dirty or bool(changed & set(SCHEDULER_READS))
                continue
            if self.scheduler is not None and scheduler_dirty:
                scheduler_dirty = False
                wrote = self.scheduler()
                if wrote:
                    self.summary.writes["scheduler"] = self.summary.writes.get("scheduler", 0) + wrote
                continue
            if until_settled and not self.queue:
                self.summary.settled = True
                break
            wait = min((item.due for item in self.queue.values()), default=now + 1.0) - now
            if timeout_s is not None:
                wait = min(wait, timeout_s - (now - started))
            self._wait(revision, max(0.0, min(wait, 1.0)), stop)
        self.summary.seconds = self.clock() - started
        return self.summary

    def _chunk(self, due: list[tuple[int, Key]]) -> None:
        self.summary.passes += 1
        deadline = self.clock() + CHUNK_S
        with self.store.batch():
            for n, (index, key) in enumerate(due):
                if n >= CHUNK_KEYS or (n and self.clock() > deadline):
                    break
                item = self.queue.pop((index, key))
                self._reconcile(index, key, item)

    def _reconcile(self, index: int, key: Key, item: _Item) -> None:
        controller = self.controllers[index]
        self.summary.reconciles += 1
        try:
            with self.store.locked():
                result = controller.reconcile(self.store, key)
        except ConflictError as exc:
            delay = min(MAX_BACKOFF_S, 0.005 * 2 ** item.failures)
            log.debug("%s: %s lost a race, again in %.3f s: %s", controller.name, label(key), delay, exc)
            self._add(index, key, self.clock() + delay, item.failures + 1)
            return
        except NotFoundError:
            return
        except InputError as exc:  # an object the controller cannot act on: say so, do not spin
            log.warning("%s: %s: %s", controller.name, label(key), exc)
            return
        if result.writes:
            self.summary.writes[controller.name] = self.summary.writes.get(controller.name, 0) + result.writes
        if result.requeue_after is not None:
            self._add(index, key, self.clock() + result.requeue_after)

    def _follow(self, revision: int) -> tuple[int, set[str]]:
        """Queue the keys of every change after `revision`; the new revision and the resources changed."""
        changed: set[str] = set()
        while True:
            try:
                batch, top = self.store.changes(revision, self.watched)
            except Expired:
                log.info("the store's change log moved past revision %d: listing again", revision)
                with self.store.snapshot() as top:
                    self._resync()
                return top, set(SCHEDULER_READS)
            now = self.clock()
            for change in batch:
                changed.add(change.resource)
                for i, c in enumerate(self.controllers):
                    if change.resource in c.watches:
                        for key in c.keys_for(self.store, change):
                            self._add(i, key, now)
            if top == revision:
                return top, changed
            revision = top

    def _wait(self, revision: int, seconds: float, stop: threading.Event | None) -> None:
        """Until something changes after `revision`, or `seconds` pass."""
        if seconds <= 0:
            return
        for _ in self.store.watch(revision, self.watched, timeout_s=seconds, stop=stop, bookmark_s=seconds + 1):
            return
