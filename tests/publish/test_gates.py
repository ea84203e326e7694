"""Feature-gate detection against the kube-apiserver STAND-IN: probes, scheduler metrics, precedence."""

from __future__ import annotations

import logging

import pytest

from driver.errors import FakeDraError
from driver.features import GATE_FIELDS, Features
from driver.publish import GateDetector, parse_feature_metrics
from driver.publish.fields import DETECTED_GATES, GROUPS, PARTITIONABLE, SHARED_CONSUMABLE
from driver.publish.gates import http_metrics_source
from publish.pools import DRIVER, NODE


def detector(api, server, **kw):
    kw.setdefault("scheduler_source", http_metrics_source(server.url + "/metrics"))
    return GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=api.dry_run_create_slice, **kw)


def attr(gate):
    return GATE_FIELDS[gate]


@pytest.mark.parametrize("gate", DETECTED_GATES)
def test_apiserver_gate_off_is_detected_by_dry_run_probe(api, server, gate):
    server.state.apiserver_gates[gate] = False
    report = detector(api, server).detect()
    state = report.gates[gate]
    assert state.apiserver is False and "dry-run" in state.apiserver_source
    assert getattr(report.features, attr(gate)) is False
    others = [g for g in DETECTED_GATES if g != gate and not (gate == PARTITIONABLE and g in (GROUPS, SHARED_CONSUMABLE))]
    assert all(report.gates[g].apiserver is True for g in others)
    assert not server.state.slices, "probes are dry-run: nothing may be stored"


@pytest.mark.parametrize("gate", DETECTED_GATES)
def test_scheduler_gate_off_from_metrics_turns_effective_off(api, server, gate):
    server.state.scheduler_gates[gate] = False
    report = detector(api, server).detect()
    assert report.gates[gate].apiserver is True
    assert report.gates[gate].scheduler is False and report.gates[gate].scheduler_source == "scheduler metrics"
    assert getattr(report.features, attr(gate)) is False


def test_all_on_everywhere(api, server):
    report = detector(api, server).detect()
    assert all(s.effective for s in report.gates.values())
    assert not report.warnings


def test_partitionable_off_implies_nested_gates_off(api, server):
    server.state.scheduler_gates[PARTITIONABLE] = False
    report = detector(api, server).detect()
    assert not report.features.compatibility_groups and not report.features.shared_consumable_capacity
    assert "needs DRAPartitionableDevices" in report.gates[GROUPS].effective_source


def test_gate_unknown_to_scheduler_counts_as_off(api, server):
    del server.state.scheduler_gates[SHARED_CONSUMABLE]
    report = detector(api, server).detect()
    assert report.gates[SHARED_CONSUMABLE].scheduler is False
    assert "unknown to it" in report.gates[SHARED_CONSUMABLE].scheduler_source


def test_unreachable_metrics_fall_back_to_flag(api, server):
    server.state.scheduler_gates = None  # /metrics answers 503
    report = detector(api, server, scheduler_flags={GROUPS: False}).detect()
    assert report.gates[GROUPS].scheduler is False
    assert report.gates[GROUPS].scheduler_source == "--scheduler-features flag"
    assert any("unreachable" in w for w in report.warnings)


def test_no_scheduler_information_assumes_apiserver_and_says_so_loudly(api, server, caplog):
    server.state.apiserver_gates[GROUPS] = False
    with caplog.at_level(logging.WARNING, logger="fake-dra.gates"):
        report = detector(api, server, scheduler_source=None).detect()
    assert report.gates[GROUPS].scheduler is False
    assert report.gates[PARTITIONABLE].scheduler_source == "ASSUMED equal to apiserver"
    assert any("NOT known" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_explicit_features_override_wins_and_is_reported(api, server):
    server.state.apiserver_gates[GROUPS] = False
    report = detector(api, server, overrides={GROUPS: True, "DRAAdminAccess": False}).detect()
    assert report.features.compatibility_groups is True
    assert report.gates[GROUPS].effective_source == "--features override"
    assert report.gates[GROUPS].apiserver is False  # still detected and shown
    assert report.features.admin_access is False


def test_probe_failure_falls_back_to_1_37_defaults(server):
    def broken(obj):
        raise FakeDraError("connection refused")
    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=broken,
                          scheduler_source=http_metrics_source(server.url + "/metrics")).detect()
    assert report.gates[GROUPS].apiserver is None
    assert report.features.compatibility_groups is False  # alpha: unknown means off
    assert report.features.partitionable_devices is True  # beta
    assert "detection failed" in report.gates[GROUPS].effective_source


def test_dropped_fields_mark_gate_off_until_next_probe(api, server):
    det = detector(api, server)
    assert det.detect().features.compatibility_groups
    det.note_dropped({GROUPS})
    assert det.due()
    report = det.detect()
    assert report.gates[GROUPS].apiserver is False and "real write" in report.gates[GROUPS].apiserver_source
    assert det.detect().features.compatibility_groups  # fresh probe next time


def test_redetection_interval_uses_injected_clock(api, server):
    now = [1000.0]
    det = detector(api, server, interval_s=60, clock=lambda: now[0])
    det.detect()
    assert not det.due()
    now[0] += 61
    assert det.due()


def test_parse_feature_metrics():
    text = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRADeviceCompatibilityGroups",stage="ALPHA"} 0
kubernetes_feature_enabled{name="DRAPartitionableDevices",stage="BETA"} 1
apiserver_request_total{code="200"} 5
"""
    assert parse_feature_metrics(text) == {"DRADeviceCompatibilityGroups": False, "DRAPartitionableDevices": True}


def test_metrics_source_errors_name_the_url(server, tmp_path):
    with pytest.raises(FakeDraError, match="no kubernetes_feature_enabled"):
        http_metrics_source(server.url + "/apis/resource.k8s.io/v1/resourceclaims")()
    with pytest.raises(FakeDraError, match=r"metrics-token-file .*missing"):
        http_metrics_source(server.url + "/metrics", token_file=str(tmp_path / "missing"))()
    with pytest.raises(FakeDraError, match="HTTP 404"):
        http_metrics_source(server.url + "/nope")()


def test_fixed_features_publisher_report():
    from driver.publish.gates import fixed_report
    r = fixed_report(Features(compatibility_groups=False))
    assert r.gates[GROUPS].effective is False and r.gates[GROUPS].effective_source == "--features override"


# -- the apiserver's release decides which gates exist ------------------------------------------------


def test_a_gate_the_release_lacks_is_neither_probed_nor_assumed(api, server):
    """Kubernetes 1.36 has no DRADeviceCompatibilityGroups (new in 1.37): no probe, no scheduler
    assumption, no warning about it; off, and said why."""
    probed = []

    def dry_run(obj):
        probed.append(obj["metadata"]["name"])
        return api.dry_run_create_slice(obj)

    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=dry_run,
                          server_version=lambda: "v1.36.3").detect()
    state = report.gates[GROUPS]
    assert state.effective is False and state.effective_source == "not a gate of Kubernetes 1.36"
    assert state.apiserver_source == "not probed: not a gate of Kubernetes 1.36"
    assert not any("compatibilitygroups" in name for name in probed)
    assert all(GROUPS not in w.split(". If the scheduler")[0] for w in report.warnings), "not among the assumed gates"
    # The project-only KEP-5941 gate is in no release's table and is still probed.
    assert any(SHARED_CONSUMABLE.lower() in name for name in probed)


def test_a_1_38_apiserver_uses_the_1_38_table(api, server):
    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=api.dry_run_create_slice,
                          scheduler_source=http_metrics_source(server.url + "/metrics"),
                          server_version=lambda: "v1.38.0").detect()
    assert report.gates[GROUPS].effective is True  # a 1.38 gate: probed and read as before
    assert not report.warnings


def test_release_defaults_apply_when_detection_fails():
    def broken(obj):
        raise FakeDraError("connection refused")
    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=broken, server_version=lambda: "v1.38.1").detect()
    assert "Kubernetes 1.38 default (detection failed)" in report.gates[PARTITIONABLE].effective_source


@pytest.mark.parametrize(("version", "warning"), [
    ("v1.40.0", "kube-apiserver is v1.40.0: no gate table for 1.40 here"),
    ("banana", "kube-apiserver /version: 'banana' is not a Kubernetes version"),
])
def test_an_unknown_release_is_judged_by_the_target_table_with_a_warning(api, server, version, warning):
    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=api.dry_run_create_slice,
                          scheduler_source=http_metrics_source(server.url + "/metrics"),
                          server_version=lambda: version).detect()
    assert any(w.startswith(warning) and "Kubernetes 1.37 table" in w for w in report.warnings), report.warnings
    assert report.gates[GROUPS].effective is True


def test_an_unreachable_version_endpoint_is_a_warning_not_a_failure(api, server):
    def down():
        raise FakeDraError("GET /version: connection refused")
    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=api.dry_run_create_slice,
                          scheduler_source=http_metrics_source(server.url + "/metrics"), server_version=down).detect()
    assert any("kube-apiserver version unknown" in w for w in report.warnings)


def test_the_report_names_the_release(api, server):
    report = GateDetector(node_name=NODE, driver_name=DRIVER, dry_run=api.dry_run_create_slice,
                          scheduler_source=http_metrics_source(server.url + "/metrics"),
                          server_version=lambda: "v1.38.2").detect()
    assert report.release == "1.38" and report.as_dict()["kubernetes"] == "1.38"
    assert detector(api, server).detect().release is None  # no version source: not known


def test_the_apiservers_version_decides_through_the_wiring(api, server):
    """make_detector asks the API-server backend for /version (KubeSliceBackend.server_version)."""
    from driver.publish import make_detector

    server.state.git_version = "v1.36.1"
    report = make_detector(api, node_name=NODE, driver_name=DRIVER, scheduler_metrics_url=server.url + "/metrics").detect()
    assert report.release == "1.36"
    assert report.gates[GROUPS].effective_source == "not a gate of Kubernetes 1.36"
    assert not any("/version" in r[1] and r[0] != "GET" for r in server.state.requests)
    server.state.git_version = "v1.37.4"
    report = make_detector(api, node_name=NODE, driver_name=DRIVER, scheduler_metrics_url=server.url + "/metrics").detect()
    assert report.release == "1.37" and report.gates[GROUPS].effective is True and not report.warnings
