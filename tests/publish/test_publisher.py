"""Publisher passes against the kube-apiserver STAND-IN: gate flips, dropped fields, protection, loop."""

from __future__ import annotations

import copy

import pytest

from driver.errors import FakeDraError
from driver.features import Features
from driver.publish import Publisher, make_detector, reconcile
from driver.publish.fields import CONSUMABLE, DETECTED_GATES, GROUPS, PARTITIONABLE, SHARED_CONSUMABLE
from driver.publish.metrics import PublishMetrics
from driver.slices import Pool
from publish.pools import DRIVER, NODE, inventory, render
from waiting import wait_until


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(api, server, clock=None, inv=None, **kw):
    clock = clock or Clock()
    det = make_detector(api, node_name=NODE, driver_name=DRIVER, scheduler_metrics_url=server.url + "/metrics",
                        interval_s=30)
    det.clock = clock
    inv = inv or inventory(gpus=2, nics=1, vfs=8)
    return Publisher(api, lambda f: render(inv, f), det, 30, node_name=NODE, driver_name=DRIVER, **kw), clock


def devices(server):
    return {d["name"]: d for o in server.state.slices.values() for d in o["spec"].get("devices", [])}


def uses(server, gate):
    specs = [o["spec"] for o in server.state.slices.values()]
    if gate == PARTITIONABLE:
        return any(s.get("sharedCounters") for s in specs)
    if gate == GROUPS:
        return any(e.get("compatibilityGroups") for d in devices(server).values() for e in d.get("consumesCounters", []))
    if gate == CONSUMABLE:
        return any("allowMultipleAllocations" in d for d in devices(server).values())
    return any("valueFrom" in c for d in devices(server).values() for e in d.get("consumesCounters", [])
               for c in e["counters"].values())


@pytest.mark.parametrize("gate", DETECTED_GATES)
@pytest.mark.parametrize("component", ["apiserver", "scheduler"])
def test_gate_flip_is_republished_within_one_interval(api, server, gate, component):
    pub, clock = make(api, server)
    first = pub.run_once()
    assert all(s.effective for s in first.report.gates.values())
    assert uses(server, gate)
    gates = server.state.apiserver_gates if component == "apiserver" else server.state.scheduler_gates
    gates[gate] = False
    clock.now += 30  # one interval later
    result = pub.run_once()
    assert result.report.gates[gate].effective is False
    assert not uses(server, gate)
    assert result.stats.writes > 0
    clock.now += 30
    assert pub.run_once().stats.writes == 0  # steady again
    gates[gate] = True  # flip back on
    clock.now += 30
    back = pub.run_once()
    assert back.report.gates[gate].effective is True
    assert uses(server, gate)


def test_dropped_fields_trigger_redetection_and_republish_in_the_same_pass(api, server):
    pub, clock = make(api, server)
    real_probe = pub.detector.dry_run
    # HA skew: the probed apiserver keeps groups, the one serving writes strips them.
    pub.detector.dry_run = lambda obj: copy.deepcopy(obj) if "groups" in obj["metadata"]["name"] else real_probe(obj)
    server.state.apiserver_gates[GROUPS] = False
    result = pub.run_once()
    assert result.stats.dropped and GROUPS in result.stats.dropped_gate_names()
    assert result.features.compatibility_groups is False
    assert "real write" in result.report.gates[GROUPS].apiserver_source
    assert not uses(server, GROUPS)
    assert pub.run_once().stats.writes == 0  # no update loop on the dropped field


def test_write_failure_forces_redetection(api, server):
    pub, clock = make(api, server)
    pub.run_once()
    server.state.apiserver_gates[SHARED_CONSUMABLE] = False
    pub.detector.dry_run = lambda obj: copy.deepcopy(obj)  # a probe that (wrongly) says all on
    server.state.slices.clear()
    with pytest.raises(FakeDraError, match="422"):  # valueFrom stripped -> counter without value
        pub.run_once()
    assert pub.detector.due() and pub.last_error is not None


def test_fixed_features_skip_detection(api, server):
    inv = inventory()
    pub = Publisher(api, lambda f: render(inv, f), Features(compatibility_groups=False), 30,
                    node_name=NODE, driver_name=DRIVER)
    result = pub.run_once()
    assert not uses(server, GROUPS)
    assert result.report.gates[GROUPS].effective_source == "--features override"
    assert not [r for r in server.state.requests if "dryRun" in r[2]]


def test_pass_logs_its_write_counts_at_info(api, server, caplog):
    # `fake-dra run` logs at INFO; a log call with a reserved LogRecord key ("created") used to raise.
    caplog.set_level("INFO", logger="fake-dra")
    pub = Publisher(api, lambda f: render(inventory(), f), Features(), 30, node_name=NODE, driver_name=DRIVER)
    pub.run_once()
    record = next(r for r in caplog.records if r.getMessage() == "reconciled")
    assert record.slices_created >= 1
    assert pub.last_error is None


def regroup(pool: Pool, device: str, groups: list[str]) -> Pool:
    slices = copy.deepcopy(list(pool.slices))
    for s in slices:
        for d in s.get("devices", []):
            if d["name"] == device:
                for e in d["consumesCounters"]:
                    e["compatibilityGroups"] = groups
    return Pool(name=pool.name, slices=tuple(slices))


def claim(device: str, pool: str = NODE, driver: str = DRIVER) -> dict:
    return {"metadata": {"name": "c1", "namespace": "default"},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": driver, "pool": pool, "device": device}]}}}}


def test_allocated_device_keeps_published_groups_until_released(api, server):
    pool = render(inventory())
    mig = next(n for n, d in pool.devices().items() if "mig-1g5gb" in n)
    other = next(n for n, d in pool.devices().items() if "mig-2g10gb" in n)
    reconcile(api, pool, node_name=NODE, driver_name=DRIVER)
    before = copy.deepcopy(devices(server)[mig]["consumesCounters"][0]["compatibilityGroups"])
    server.state.claims.append(claim(mig))
    server.state.claims.append(claim(other, pool="node-2"))  # another node's pool: not ours
    wanted = regroup(regroup(pool, mig, ["vgpu"]), other, ["vgpu"])
    stats = reconcile(api, wanted, node_name=NODE, driver_name=DRIVER, groups_enabled=True)
    assert [p.device for p in stats.protected] == [mig]
    assert devices(server)[mig]["consumesCounters"][0]["compatibilityGroups"] == before
    assert devices(server)[other]["consumesCounters"][0]["compatibilityGroups"] == ["vgpu"]
    server.state.claims.clear()  # released
    stats = reconcile(api, wanted, node_name=NODE, driver_name=DRIVER, groups_enabled=True)
    assert not stats.protected
    assert devices(server)[mig]["consumesCounters"][0]["compatibilityGroups"] == ["vgpu"]


def test_groups_are_dropped_for_allocated_devices_when_scheduler_gate_is_off(api, server):
    pool = render(inventory())
    mig = next(n for n in pool.devices() if "mig-1g5gb" in n)
    reconcile(api, pool, node_name=NODE, driver_name=DRIVER)
    server.state.claims.append(claim(mig))
    stats = reconcile(api, render(inventory(), Features(compatibility_groups=False)), node_name=NODE,
                      driver_name=DRIVER, groups_enabled=False)
    assert not stats.protected and not uses(server, GROUPS)


def test_steady_state_does_not_list_claims(api, server):
    pool = render(inventory())
    server.state.claims.append(claim(next(iter(pool.devices()))))
    reconcile(api, pool, node_name=NODE, driver_name=DRIVER)
    reconcile(api, pool, node_name=NODE, driver_name=DRIVER)
    assert not [r for r in server.state.requests if "resourceclaims" in r[1]]


def test_metrics_expose_detected_gates_and_writes(api, server):
    metrics = PublishMetrics()
    server.state.scheduler_gates[GROUPS] = False
    pub, _ = make(api, server, metrics=metrics)
    pub.run_once()
    get = metrics.registry.get_sample_value
    assert get("fake_dra_feature_gate_enabled", {"gate": GROUPS, "component": "scheduler"}) == 0
    assert get("fake_dra_feature_gate_enabled", {"gate": GROUPS, "component": "apiserver"}) == 1
    assert get("fake_dra_feature_gate_enabled", {"gate": GROUPS, "component": "effective"}) == 0
    assert get("fake_dra_publish_writes_total", {"op": "create"}) == len(server.state.slices)
    assert get("fake_dra_published_devices") == len(devices(server))


def test_background_loop_trigger_and_stop_leaves_slices(api, server):
    inv = {"value": inventory(gpus=1, nics=0)}
    pub = Publisher(api, lambda f: render(inv["value"], f), Features(), 3600, node_name=NODE, driver_name=DRIVER)
    pub.start()
    _wait(lambda: pub.passes >= 1)
    inv["value"] = inventory(gpus=2, nics=0)  # hotplug
    pub.trigger()
    _wait(lambda: pub.passes >= 2)
    pub.stop()
    assert len([d for d in devices(server) if d == "gpu-1"]) == 1
    assert server.state.slices  # left in place by default


def test_delete_slices_on_exit(api, server):
    pub = Publisher(api, lambda f: render(inventory(), f), Features(), 30, node_name=NODE, driver_name=DRIVER,
                    delete_on_exit=True)
    pub.run_once()
    api.create_slice({"metadata": {"name": "foreign"}, "spec": {"driver": "x.example.com", "nodeName": NODE,
                                                                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}})
    pub.stop()
    assert set(server.state.slices) == {"foreign"}


def _wait(cond):
    wait_until(cond, "the publisher's passes")


def test_override_against_a_stripping_apiserver_settles_instead_of_rewriting(api, server):
    server.state.apiserver_gates[GROUPS] = False
    det = make_detector(api, node_name=NODE, driver_name=DRIVER, overrides={GROUPS: True},
                        scheduler_metrics_url=server.url + "/metrics")
    inv = inventory()
    pub = Publisher(api, lambda f: render(inv, f), det, 30, node_name=NODE, driver_name=DRIVER)
    first = pub.run_once()
    assert first.features.compatibility_groups is True  # the override still wins...
    assert GROUPS in first.stats.dropped_gate_names()   # ...but the server dropped the field
    assert pub.run_once().stats.writes == 0              # and we do not fight it every pass


def test_loop_survives_a_failing_pass(api, server):
    calls = {"n": 0}

    def render_flaky(f):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("sysfs vanished")
        return render(inventory(gpus=1, nics=0), f)
    pub = Publisher(api, render_flaky, Features(), 0.05, node_name=NODE, driver_name=DRIVER)
    pub.start()
    _wait(lambda: pub.last is not None)
    pub.stop()
    assert calls["n"] >= 2 and server.state.slices


def test_unlistable_claims_keep_all_changing_groups(api, server, monkeypatch):
    from driver.kube.rawapi import KubeApiError
    pool = render(inventory())
    mig = next(n for n in pool.devices() if "mig-1g5gb" in n)
    reconcile(api, pool, node_name=NODE, driver_name=DRIVER)

    def forbidden(driver, pool_name):
        raise KubeApiError("GET /apis/resource.k8s.io/v1/resourceclaims: HTTP 403: forbidden", 403)
    monkeypatch.setattr(api, "allocated_devices", forbidden)
    stats = reconcile(api, regroup(pool, mig, ["vgpu"]), node_name=NODE, driver_name=DRIVER, groups_enabled=True)
    assert [p.device for p in stats.protected] == [mig]
    assert devices(server)[mig]["consumesCounters"][0]["compatibilityGroups"] == ["mig"]


def test_rejected_write_after_an_undetected_flip_republishes_in_the_same_pass(api, server):
    pub, clock = make(api, server)
    pub.run_once()
    server.state.apiserver_gates[SHARED_CONSUMABLE] = False  # flips between two detections
    server.state.slices.clear()  # creates now carry valueFrom into a server that strips it -> 422
    result = pub.run_once()  # clock did not advance: detection is not due
    assert result.features.shared_consumable_capacity is False
    assert not uses(server, SHARED_CONSUMABLE) and server.state.slices
