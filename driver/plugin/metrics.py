"""Prometheus metrics of the kubelet plugin, on a private registry served at --metrics-addr.

Why a private registry: tests start several plugins in one process and the default global
registry would refuse duplicate metric names.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from driver.metrics import serve_metrics

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


@dataclass
class PluginMetrics:
    registry: CollectorRegistry
    requests: Counter
    claims: Counter
    duration: Histogram
    prepared: Gauge
    health: Gauge
    registered: Gauge

    @classmethod
    def create(cls) -> PluginMetrics:
        r = CollectorRegistry()
        return cls(
            registry=r,
            requests=Counter("fake_dra_plugin_requests", "gRPC calls from the kubelet", ["method", "version"], registry=r),
            claims=Counter("fake_dra_plugin_claims", "claims handled, by outcome", ["operation", "result"], registry=r),
            duration=Histogram("fake_dra_plugin_request_duration_seconds", "duration of prepare/unprepare calls",
                               ["operation"], buckets=_BUCKETS, registry=r),
            prepared=Gauge("fake_dra_plugin_prepared_claims", "claims currently prepared on this node", registry=r),
            health=Gauge("fake_dra_plugin_devices", "devices by health status", ["health"], registry=r),
            registered=Gauge("fake_dra_plugin_registered", "1 once the kubelet confirmed registration", registry=r),
        )

    def serve(self, addr: str) -> object:
        """Start the HTTP exporter on HOST:PORT; returns the server (call .shutdown() to stop)."""
        return serve_metrics(self.registry, addr)
