"""Reconciles the desired pool into a slice store and detects feature gates.

Public API (other areas import from here):
- SliceBackend (protocol), store_backend(ObjectStore), LocalGateConfig (STORE/featuregates.yaml)
- reconcile(backend, pool, *, node_name, driver_name, owner_uid=None, groups_enabled=None) -> ReconcileStats
- Publisher(backend, render, gates, interval_s) with run_once(), start(), stop(), trigger()
- GateDetector, GateReport, parse_feature_metrics
"""

from driver.publish.backend import LocalGateConfig, SliceBackend, StoreSliceBackend, store_backend
from driver.publish.gates import GateDetector, GateReport, GateState, parse_feature_metrics
from driver.publish.publisher import PublishResult, Publisher
from driver.publish.reconcile import ReconcileStats, delete_all, reconcile, slice_name
from driver.publish.wiring import make_detector

__all__ = [
    "GateDetector", "GateReport", "GateState", "LocalGateConfig", "PublishResult", "Publisher",
    "ReconcileStats", "SliceBackend", "StoreSliceBackend", "delete_all", "parse_feature_metrics",
    "make_detector", "reconcile", "slice_name", "store_backend",
]
