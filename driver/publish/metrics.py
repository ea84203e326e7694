"""Prometheus metrics of the publisher: detected gates per component, writes, reconcile results.

prometheus_client is used only here; the publisher calls `observe_*` and never touches metric
objects. Metrics live in a registry passed by the caller (the plugin's /metrics server), so tests
and several publishers in one process do not collide in the global registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from driver.metrics import serve_metrics

from driver.publish.gates import GateReport
from driver.publish.reconcile import ReconcileStats


class PublishMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.gate = Gauge(
            "fake_dra_feature_gate_enabled",
            "Detected feature gate: 1 on, 0 off, -1 unknown; component is apiserver, scheduler or effective",
            ["gate", "component"], registry=self.registry,
        )
        self.gate_override = Gauge(
            "fake_dra_feature_gate_overridden", "1 if the effective value comes from --features",
            ["gate"], registry=self.registry,
        )
        self.writes = Counter(
            "fake_dra_publish_writes", "ResourceSlice writes by operation", ["op"], registry=self.registry,
        )
        self.reconciles = Counter(
            "fake_dra_publish_reconciles", "Reconcile passes by result (ok, error)", ["result"], registry=self.registry,
        )
        self.conflicts = Counter(
            "fake_dra_publish_conflicts", "Optimistic-concurrency conflicts retried", registry=self.registry,
        )
        self.dropped = Counter(
            "fake_dra_publish_dropped_fields", "Writes whose fields the server dropped, by gate", ["gate"],
            registry=self.registry,
        )
        self.devices = Gauge("fake_dra_published_devices", "Devices in the desired pool", registry=self.registry)
        self.generation = Gauge("fake_dra_pool_generation", "Published pool generation", registry=self.registry)
        self.protected = Gauge(
            "fake_dra_protected_group_devices",
            "Allocated devices whose previous compatibility groups are kept", registry=self.registry,
        )

    def observe_gates(self, report: GateReport) -> None:
        for gate, state in report.gates.items():
            for component, value in (("apiserver", state.apiserver), ("scheduler", state.scheduler),
                                     ("effective", state.effective)):
                self.gate.labels(gate=gate, component=component).set(-1 if value is None else int(value))
            self.gate_override.labels(gate=gate).set(int(state.effective_source.startswith("--features")))

    def observe_stats(self, stats: ReconcileStats) -> None:
        self.reconciles.labels(result="ok").inc()
        for op, n in (("create", stats.created), ("update", stats.updated), ("delete", stats.deleted)):
            if n:
                self.writes.labels(op=op).inc(n)
        if stats.conflicts:
            self.conflicts.inc(stats.conflicts)
        for gate in stats.dropped_gate_names():
            self.dropped.labels(gate=gate).inc()
        self.devices.set(stats.devices)
        self.generation.set(stats.generation)
        self.protected.set(len(stats.protected))

    def observe_error(self) -> None:
        self.reconciles.labels(result="error").inc()

    def serve(self, addr: str) -> object:
        """HTTP exporter on HOST:PORT for standalone `fake-dra publish` (run serves the plugin's registry)."""
        return serve_metrics(self.registry, addr)
