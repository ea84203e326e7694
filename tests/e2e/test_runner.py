"""Runner semantics without a plugin: template references, error containment, skipping."""

from __future__ import annotations

import pytest

from driver.e2e.manifests import NAMESPACE, claim_object
from driver.e2e.observe import Observation
from driver.e2e.runner import resolve_refs, run_all
from driver.e2e.scenario import parse_scenario
from driver.errors import InputError


class FakeBackend:
    name = "fake"

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on
        self.claims: dict[str, dict] = {}
        self.stopped = 0

    def start(self, scenario):
        pass

    def stop(self):
        self.stopped += 1

    def create_claim(self, name, obj):
        self.claims[name] = obj
        return Observation()

    def run_pod(self, name, claims, podgroup, skewed):
        if name == self.fail_on:
            raise RuntimeError("boom")
        return Observation(scheduled=True, devices=[{"name": "gpu-0", "uuid": "GPU-0"}])

    def claim_devices(self):
        return {"a": [{"name": "gpu-0-mig", "parentUUID": "GPU-0"}], "full": [{"name": "gpu-1", "uuid": "GPU-1"}]}

    def published_devices(self):
        return [{"name": "gpu-0", "type": "gpu", "uuid": "GPU-0"}, {"name": "v", "type": "vgpu", "parentUUID": "GPU-1"}]


def test_resolve_refs() -> None:
    b = FakeBackend()
    assert resolve_refs('x == "${claim:a.parentUUID}"', b) == 'x == "GPU-0"'
    assert resolve_refs('"${claim:full.parentUUID}"', b) == '"GPU-1"', "a whole device is its own parent"
    assert resolve_refs('"${device:type=vgpu.parentUUID}" "${device:name=gpu-0.uuid}"', b) == '"GPU-1" "GPU-0"'
    with pytest.raises(InputError, match="claim 'zzz' has no allocated device"):
        resolve_refs("${claim:zzz.uuid}", b)
    with pytest.raises(InputError, match="no published device has type=nic"):
        resolve_refs("${device:type=nic.uuid}", b)


SCENARIO = {
    "name": "s",
    "reason": "r",
    "steps": [
        {"action": "claim", "name": "c", "requests": [{"name": "g", "class": "mig", "selector": '"${claim:a.parentUUID}"'}]},
        {"action": "pod", "name": "p", "claims": ["c"], "expect": {"scheduled": True}},
        {"action": "pod", "name": "boom", "claims": ["c"], "expect": {"scheduled": True}},
    ],
}


def test_crash_is_contained_and_backend_stopped() -> None:
    backend = FakeBackend(fail_on="boom")
    report = run_all([parse_scenario(SCENARIO)], lambda: backend, claim_object)
    (result,) = report.scenarios
    assert result.status == "FAIL"
    assert result.error == "3. pod boom: RuntimeError: boom"
    assert [c.ok for c in result.checks] == [True]
    assert backend.stopped == 1
    sel = backend.claims["c"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
    assert sel == '"GPU-0"', "references are resolved before the claim is created"


def test_skip_hook() -> None:
    report = run_all([parse_scenario(SCENARIO)], FakeBackend, claim_object, skip=lambda s: "not here")
    assert report.scenarios[0].status == "SKIP" and report.ok


def test_each_result_is_announced_as_it_finishes() -> None:
    from driver.e2e.report import progress_line

    scenarios = [parse_scenario({**SCENARIO, "name": f"s{i}"}) for i in range(4)]
    seen = []
    made = []

    def backend() -> FakeBackend:  # every other backend crashes at step 3
        made.append(1)
        return FakeBackend(fail_on="boom" if len(made) % 2 else None)

    report = run_all(scenarios, backend, claim_object, jobs=2,
                     on_result=lambda r: seen.append((r.name, progress_line(r))))
    assert sorted(name for name, _ in seen) == ["s0", "s1", "s2", "s3"]
    assert [r.name for r in report.scenarios] == ["s0", "s1", "s2", "s3"], "the report keeps scenario order"
    lines = dict(seen)
    assert all(line.startswith(("PASS  s", "FAIL  s")) and line.endswith(" s)") for line in lines.values())
    assert any("harness error" in line for line in lines.values())
    skipped = []
    run_all(scenarios[:1], FakeBackend, claim_object, skip=lambda s: "not here",
            on_result=lambda r: skipped.append(progress_line(r)))
    assert skipped == ["SKIP  s0 (not here)"]


def test_a_scenario_claim_is_checked_as_kube_apiserver_checks_it_before_any_backend_sees_it() -> None:
    """A typo in a scenario's raw `config`/`constraints` fails the step in local mode as on a cluster."""
    typo = {"name": "typo", "reason": "r", "steps": [
        {"action": "claim", "name": "c", "requests": [{"name": "g", "class": "mig"}],
         "config": [{"requests": ["g"], "opaque": {"driver": "fake-dra.example.com", "parameter": {"a": 1}}}]}]}
    backend = FakeBackend()
    report = run_all([parse_scenario(typo)], lambda: backend, claim_object)
    (result,) = report.scenarios
    assert result.status == "FAIL" and backend.claims == {}
    assert result.error == (f'1. claim c: ResourceClaim {NAMESPACE}/c: spec.devices.config[0].opaque.parameter: unknown field "parameter" '
                            '(did you mean "parameters"?); spec.devices.config[0].opaque.parameters: Required value')


def test_the_local_backend_stores_only_what_kube_apiserver_would(tmp_path) -> None:
    """Its claim writes and the slices it reads are checked (no plugin needed for the refusals)."""
    import copy

    from driver.e2e.local import LocalBackend
    from driver.features import Features
    from driver.store.objectstore import ObjectStore

    backend = LocalBackend()
    backend.store, backend.features = ObjectStore(tmp_path / "store"), Features()
    good = claim_object("c", [{"name": "g", "class": "mig"}])
    backend.create_claim("c", good)
    recorded = copy.deepcopy(backend.store.get("resourceclaims", NAMESPACE, "c"))
    recorded["status"] = {"allocation": {"devices": {"results": [
        {"request": "g", "driver": "d.example.com", "pool": "p", "device": "vf-0",
         "consumedCounters": [{"counterSet": "pf", "counters": {"bandwidth": {"value": "1G"}}}]}]}}}
    with pytest.raises(InputError, match=rf'ResourceClaim {NAMESPACE}/c: status.allocation.devices.results\[0\].consumedCounters: '
                                         'unknown field "consumedCounters"'):
        backend._write_claim(recorded)
    backend.features = Features.all_on()
    backend._write_claim(recorded)  # with the scenario's gate on, the same write is stored
    backend.features = Features()
    recorded = backend.store.get("resourceclaims", NAMESPACE, "c")
    recorded["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u"}]
    backend._write_claim(recorded)  # an update keeps the fields its stored object has
    backend.store.create("resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": backend.driver_name, "nodeName": "node-1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "d", "capacity": {"memory": {"valu": "1Gi"}}}]}})
    with pytest.raises(InputError, match=r'published ResourceSlice s: spec.devices\[0\].capacity\[memory\].valu: unknown field'):
        backend._slices()
