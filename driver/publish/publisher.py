"""The publishing loop of `fake-dra run`: detect gates, render the pool, reconcile, repeat.

Each pass re-renders the pool (the render callable re-scans the inventory), so hotplug and gate
flips are picked up within one interval; `trigger()` (SIGHUP, a udev event) starts a pass at once.
When a write loses fields, gates are re-detected and the pool re-rendered and republished in the
same pass, so the pool never stays in a dropped-field state for a whole interval. A write the
apiserver refuses as invalid (422) is handled the same way: re-detection turns the gate off; when
only a --features override keeps it on, the pool is published without that gate's fields (rendered
without KEP-5941, whose stripped counters would be invalid) and an error says so.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from driver import DEFAULT_DRIVER_NAME
from driver.errors import ConflictError, FakeDraError
from driver.features import Features
from driver.publish.backend import SliceBackend
from driver.publish.fields import SHARED_CONSUMABLE, strip_disabled
from driver.publish.gates import GateDetector, GateReport, fixed_report
from driver.publish.reconcile import PoolLike, ReconcileStats, delete_all, reconcile

log = logging.getLogger("fake-dra.publish")


@dataclass(frozen=True)
class PublishResult:
    stats: ReconcileStats
    report: GateReport

    @property
    def features(self) -> Features:
        """The features this pass published with (those of its gate report)."""
        return self.report.features


# Gates whose fields cannot simply be stripped from a render: a counter whose only `valueFrom` is
# dropped has no value left (invalid). When the apiserver will not take them, render without the gate.
_RENDER_WITHOUT = frozenset({SHARED_CONSUMABLE})


@dataclass(frozen=True)
class _StrippedPool:
    name: str
    slices: tuple[dict[str, Any], ...]


class Publisher:
    """Keeps this node's slices equal to `render(features)`; see the module docstring."""

    def __init__(
        self,
        backend: SliceBackend,
        render: Callable[[Features], PoolLike],
        gates: GateDetector | Features,
        interval_s: float = 30.0,
        *,
        node_name: str | None = None,
        driver_name: str = DEFAULT_DRIVER_NAME,
        delete_on_exit: bool = False,
        metrics: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.render = render
        self.detector = gates if isinstance(gates, GateDetector) else None
        self._fixed = fixed_report(gates) if isinstance(gates, Features) else None
        self.interval_s = interval_s
        self.node_name = node_name
        self.driver_name = driver_name
        self.delete_on_exit = delete_on_exit
        self.metrics = metrics
        self.clock = clock
        self.last: PublishResult | None = None
        self.last_error: FakeDraError | None = None
        self.passes = 0
        self._owner_uid: str | None = None
        self._owner_looked_up = False
        self._node: str | None = node_name
        self._tolerated: set[str] = set()  # gates whose fields the server drops despite an override
        self._tolerated_for: Features | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- one pass ---------------------------------------------------------------------------

    def _report(self) -> GateReport:
        if self.detector is None:
            assert self._fixed is not None
            return self._fixed
        if self.detector.due():  # also true before the first detection
            report = self.detector.detect()
            if self.metrics is not None:
                self.metrics.observe_gates(report)
            return report
        return self.detector.last

    def _owner(self, node: str) -> str | None:
        # The Node's UID does not change while we run; a missing Node is retried next pass.
        if not self._owner_looked_up:
            self._owner_uid = self.backend.node_uid(node)
            self._owner_looked_up = self._owner_uid is not None
        return self._owner_uid

    def _publish(self, report: GateReport) -> ReconcileStats:
        if report.features != self._tolerated_for:
            self._tolerated, self._tolerated_for = set(), report.features
        features = report.features
        rerender = self._tolerated & _RENDER_WITHOUT
        if rerender:
            features = features.with_gates({g: False for g in rerender})
        pool = self.render(features)
        strip = self._tolerated - _RENDER_WITHOUT
        if strip:
            pool = _StrippedPool(pool.name, tuple(strip_disabled(s, strip) for s in pool.slices))
        node = self.node_name or pool.name
        self._node = node
        return reconcile(
            self.backend, pool, node_name=node, driver_name=self.driver_name,
            owner_uid=self._owner(node), groups_enabled=report.features.compatibility_groups,
        )

    def _refused_gates(self, exc: FakeDraError, report: GateReport) -> set[str]:
        """Gates forced on by --features whose fields made the apiserver refuse a write (422): those
        the local store says it dropped, else those the apiserver probe found off."""
        if getattr(exc, "status", None) != 422 or self.detector is None:
            return set()
        overridden = {g for g, on in self.detector.overrides.items() if on}
        named = set(getattr(exc, "dropped_gates", ()) or ())
        off = {g for g, state in report.gates.items() if state.apiserver is False}
        return ((named or off) & overridden) - self._tolerated

    def run_once(self) -> PublishResult:
        """Detect gates if due, render, reconcile; on dropped fields re-detect and republish once."""
        with self._lock:
            self.passes += 1
            try:
                report = self._report()
                try:
                    stats = self._publish(report)
                except FakeDraError as exc:
                    # A rejected write may mean a gate flipped since the last detection: re-detect
                    # now and, if the features changed, publish the new render in this same pass.
                    if self.detector is None or isinstance(exc, ConflictError):
                        raise
                    self.detector.note_write_failure()
                    new_report = self._report()
                    if new_report.features == report.features:
                        refused = self._refused_gates(exc, new_report)
                        if not refused:
                            raise
                        # Only an explicit --features override keeps a gate on that the apiserver
                        # refuses: publish what it accepts, saying so, instead of failing every pass.
                        self._tolerated |= refused
                        log.error("the apiserver refuses the fields --features says to publish; publishing "
                                  "without them", extra={"gates": sorted(refused), "error": str(exc)})
                    else:
                        log.warning("write failed; gates changed, republishing", extra={
                            "error": str(exc), "before": str(report.features), "after": str(new_report.features)})
                    report, stats = new_report, self._publish(new_report)
                if stats.dropped and self.detector is not None:
                    gates = stats.dropped_gate_names()
                    self.detector.note_dropped(gates)
                    new_report = self._report()
                    log.warning("republishing after dropped fields", extra={
                        "gates": sorted(gates), "before": str(report.features), "after": str(new_report.features)})
                    if new_report.features == report.features:
                        # Only an explicit --features override keeps the gate on: publish what the
                        # server can store from now on, instead of rewriting the slices every pass.
                        self._tolerated |= gates
                        log.error("the apiserver drops fields that --features says to publish; publishing "
                                  "without them", extra={"gates": sorted(gates)})
                    else:
                        first = stats
                        report, stats = new_report, self._publish(new_report)
                        stats.created += first.created
                        stats.updated += first.updated
                        stats.deleted += first.deleted
                        stats.dropped = first.dropped + stats.dropped
            except FakeDraError as exc:
                self.last_error = exc
                if self.detector is not None:
                    self.detector.note_write_failure()
                if self.metrics is not None:
                    self.metrics.observe_error()
                raise
            self.last_error = None
            if self.metrics is not None:
                self.metrics.observe_stats(stats)
            self.last = PublishResult(stats, report)
            # Prefixed: "created" is a LogRecord attribute and may not be passed as an extra.
            log.info("reconciled", extra={f"slices_{k}": v for k, v in stats.as_dict().items() if v})
            return self.last

    # -- background loop ------------------------------------------------------------------

    def trigger(self) -> None:
        """Run a pass now (inventory changed, SIGHUP)."""
        self._wake.set()

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="fake-dra-publisher", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except FakeDraError as exc:
                log.error("publishing failed; retrying next interval", extra={"error": str(exc)})
            except Exception:  # keep publishing whatever a pass hit; the plugin depends on it
                log.exception("unexpected error while publishing; retrying next interval")
            self._wake.wait(self.interval_s)
            self._wake.clear()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the loop; slices stay unless delete_on_exit (the kubelet wipes them if we stay away)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if self.delete_on_exit:
            node = self._node
            if node:
                n = delete_all(self.backend, node_name=node, driver_name=self.driver_name)
                log.info("deleted slices on exit", extra={"count": n})
