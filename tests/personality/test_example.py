"""The example personality against dra-example-driver's own facts and manifests: what its `gpu` profile
publishes (internal/profiles/gpu/gpu.go), the DeviceClass its chart installs, GpuConfig's defaults,
checks and env (api/example.com/resource/gpu/v1alpha1, gpu.go applyGpuConfig, cdi.go), and its demo
specs and kubernetes.io's DRA tutorial allocated, scheduled and prepared as on a cluster with that
driver (example_manifests.yaml says where each comes from)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.test_object_commands import cli
from driver.commands._local import seed_device_classes
from driver.errors import ConfigError, PrepareError
from driver.features import Features
from driver.personality import personality_named
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.types import ClaimRef
from driver.store import ObjectStore

from state.conftest import FakeClaims
from .nodes import NODE, inventory

HERE = Path(__file__).parent
MANIFESTS = yaml.safe_load((HERE / "example_manifests.yaml").read_text())
UUID = re.compile(r"gpu-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def driver(**example: Any):
    (profile,) = personality_named("example").drivers({"example": example} if example else {})
    return profile


def pool(**example: Any):
    return driver(**example).render(inventory("demo"), Features(), node_name=NODE)


def test_the_gpu_profile_as_the_chart_installs_it():
    (spec,) = pool().slices
    assert (spec["driver"], spec["pool"]["name"], spec["nodeName"]) == ("gpu.example.com", NODE, NODE)
    devices = spec["devices"]
    assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)], "kubeletPlugin.numDevices: 8"
    first = devices[0]
    assert first["attributes"]["index"] == {"int": 0}
    assert first["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
    assert first["attributes"]["driverVersion"] == {"version": "1.0.0"}
    assert UUID.fullmatch(first["attributes"]["uuid"]["string"])
    assert first["capacity"] == {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}
    assert first["allowMultipleAllocations"] is False, "the driver writes ptr.To(false)"
    assert len({d["attributes"]["uuid"]["string"] for d in devices}) == 8
    assert pool().slices == pool().slices, "stable across renders"
    other = driver().render(inventory("demo"), Features(), node_name="node-2").slices[0]["devices"][0]
    assert other["attributes"]["uuid"] != first["attributes"]["uuid"], "UUIDs are the node's own"
    assert driver().device_classes() == [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                          "metadata": {"name": "gpu.example.com"},
                                          "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}]
    assert driver(extendedResourceName="example.com/gpu").device_classes()[0]["spec"]["extendedResourceName"] == (
        "example.com/gpu")


def test_partitions_and_multiple_allocations():
    counters, devs = pool(numDevices=2, gpuPartitions=4).slices
    assert "devices" not in counters and [c["name"] for c in counters["sharedCounters"]] == ["gpu-0-counters",
                                                                                              "gpu-1-counters"]
    assert counters["sharedCounters"][0]["counters"] == {"compute": {"value": "100"}, "memory": {"value": "80Gi"}}
    names = [d["name"] for d in devs["devices"]]
    assert names[:5] == ["gpu-0-partition-0", "gpu-0-partition-1", "gpu-0-partition-2", "gpu-0-partition-3", "gpu-0-full"]
    part, full = devs["devices"][0], devs["devices"][4]
    assert part["capacity"] == {"memory": {"value": "20Gi"}, "compute": {"value": "25"}}
    assert part["attributes"]["partition"] == {"int": 0} and part["attributes"]["partitionable"] == {"bool": True}
    assert full["attributes"]["full"] == {"bool": True} and "partition" not in full["attributes"]
    assert part["consumesCounters"] == [{"counterSet": "gpu-0-counters",
                                         "counters": {"compute": {"value": "25"}, "memory": {"value": "20Gi"}}}]
    shared = pool(numDevices=1, gpuAllowMultipleAllocations=True).slices[0]["devices"][0]
    assert shared["allowMultipleAllocations"] is True
    assert shared["capacity"]["memory"]["requestPolicy"] == {"default": "80Gi",
                                                             "validRange": {"min": "1Gi", "step": "1Gi", "max": "80Gi"}}
    assert shared["capacity"]["compute"]["requestPolicy"]["validRange"] == {"min": "1", "step": "1", "max": "100"}


@pytest.mark.parametrize("example,message", [
    ({"numDevices": -1}, "example.numDevices: expected a whole number, 0 or more, got -1"),
    ({"numDevices": 129}, "a slice holds at most 128"),
    ({"numDevices": 16, "gpuPartitions": 4}, "a slice holds at most 64 when its devices consume counters"),
    ({"gpuAllowMultipleAllocations": "yes"}, "expected true or false"),
    ({"numGPUs": 2}, "example: unknown key(s) numGPUs"),
])
def test_bad_settings_name_the_key(example, message):
    with pytest.raises(ConfigError) as err:
        driver(**example)
    assert message in str(err.value)


def _opaque(params: dict[str, Any], requests: list[str] | None = None, source: str = "FromClaim") -> dict[str, Any]:
    entry: dict[str, Any] = {"source": source, "opaque": {"driver": "gpu.example.com", "parameters": params}}
    if requests:
        entry["requests"] = requests
    return entry


def _gpu_config(**sharing: Any) -> dict[str, Any]:
    return {"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig", "sharing": sharing}


REF = ClaimRef("default", "c", "uid-1")


@pytest.mark.parametrize("params,message", [
    (_gpu_config(strategy="Bogus"), "error applying config: error validating GPU config: unknown GPU sharing strategy: Bogus"),
    (_gpu_config(strategy="TimeSlicing", timeSlicingConfig={"interval": "Forever"}),
     "unknown time-slice interval: Forever"),
    (_gpu_config(strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": -2}),
     "invalid partition count: -2"),
    (_gpu_config(strategy="TimeSlicing", spacePartitioningConfig={"partitionCount": 2}),
     "unable to get time slicing config for device gpu-0: cannot use SpacePartitioningConfig with the 'TimeSlicing' strategy"),
    ({**_gpu_config(strategy="TimeSlicing"), "extra": 1}, 'error decoding config parameters: strict decoding error: unknown field "extra"'),
    ({"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "CpuConfig"},
     'no kind "CpuConfig" is registered for version "gpu.resource.example.com/v1alpha1"'),
    # encoding/json names the innermost struct and the field's whole path
    (_gpu_config(strategy=3), "json: cannot unmarshal number into Go struct field GpuSharing.sharing.strategy of type "
                              "v1alpha1.GpuSharingStrategy"),
])
def test_gpu_config_errors_carry_the_drivers_messages(params, message):
    with pytest.raises(PrepareError) as err:
        driver().resolve_configs(REF, [_opaque(params)], [{"request": "gpu", "device": "gpu-0"}], {})
    assert str(err.value).startswith("error preparing devices for claim uid-1: prepare failed: ")
    assert message in str(err.value)


def test_the_config_of_highest_precedence_applies_and_defaults_fill_in():
    results = [{"request": "a", "device": "gpu-0", "pool": NODE}, {"request": "b", "device": "gpu-1", "pool": NODE}]
    configs = [_opaque(_gpu_config(strategy="SpacePartitioning"), source="FromClass"),
               _opaque(_gpu_config(strategy="TimeSlicing", timeSlicingConfig={"interval": "Short"}), ["b"])]
    a, b = driver().resolve_configs(REF, configs, results, {})
    assert a.params == {"sharing": {"strategy": "SpacePartitioning", "spacePartitioningConfig": {"partitionCount": 1}}}
    assert b.params == {"sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}}
    (plain,) = driver().resolve_configs(REF, [], results[:1], {})
    assert plain.params == {"sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}}}
    env = driver().device_env(REF, {**results[0], "consumedCapacity": {"memory": "16Gi", "compute": "20"}}, {}, plain, None)
    assert env == {"GPU_DEVICE_0": "gpu-0", "GPU_DEVICE_0_SHARING_STRATEGY": "TimeSlicing",
                   "GPU_DEVICE_0_TIMESLICE_INTERVAL": "Default", "GPU_DEVICE_0_MEMORY": "16Gi",
                   "GPU_DEVICE_0_COMPUTE": "20", "GPU_DEVICE_GPU_0_RESOURCE_CLAIM": "uid-1",
                   "DRA_ADMIN_ACCESS": "false", "KUBERNETES_NODE_NAME": NODE}


# --- the manifests, on a local node as `fake-dra run --personality example` presents it -------------

def _node(tmp_path: Path, capsys, example: dict[str, Any] | None = None) -> str:
    """A store with the example driver's slices of node-1 (published as `run` publishes them), its
    DeviceClass (as `run` seeds it) and the Node object `schedule` binds to."""
    sys_root, store = tmp_path / "sys", tmp_path / "store"
    assert cli(capsys, "make-sysfs", "--profile", "demo", "--out", str(sys_root))[0] == 0
    config = tmp_path / "driver.yaml"
    config.write_text(yaml.safe_dump({"example": example or {}}))
    code, _, err = cli(capsys, "publish", "--once", "--personality", "example", "--sysfs-root", str(sys_root),
                       "--node-name", NODE, "--store", str(store), "--driver-config", str(config))
    assert code == 0, err
    seed_device_classes(ObjectStore(store), driver(**(example or {})).device_classes())
    (tmp_path / "node.yaml").write_text(f"apiVersion: v1\nkind: Node\nmetadata: {{name: {NODE}}}\n")
    assert cli(capsys, "apply", "-f", str(tmp_path / "node.yaml"), "--store", str(store))[0] == 0
    return str(store)


def _apply_and_schedule(tmp_path: Path, capsys, store: str, docs: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    (tmp_path / "objs.yaml").write_text(yaml.safe_dump_all(docs))
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "objs.yaml"), "--store", store)
    assert code == 0, err
    code, out, err = cli(capsys, "schedule", "--store", store)
    assert code == 0, out + err
    pods = ObjectStore(store).list("pods", all_namespaces=True)
    assert all(p["spec"].get("nodeName") == NODE for p in pods), out
    return {c["metadata"]["name"]: [(r["request"], r["device"]) for r in c["status"]["allocation"]["devices"]["results"]]
            for c in ObjectStore(store).list("resourceclaims", all_namespaces=True)}


def _by_prefix(claims: dict[str, list], prefix: str) -> list[tuple[str, str]]:
    (name,) = [n for n in claims if n.startswith(prefix)]
    return claims[name]


def test_kubernetes_io_dra_tutorial(tmp_path, capsys):
    store = _node(tmp_path, capsys, {"numDevices": 9})  # the tutorial's DaemonSet sets NUM_DEVICES=9
    claims = _apply_and_schedule(tmp_path, capsys, store, MANIFESTS["tutorial"])
    assert claims == {"some-gpu": [("some-gpu", "gpu-0")]}


CASES = {
    "basic-resourceclaimtemplate": ({}, {"pod0-gpu-": [("gpu", "gpu-0")], "pod1-gpu-": [("gpu", "gpu-1")]}),
    "basic-resourceclaim-opaque-config": ({}, {"pod0-shared-gpus-": [("ts-gpu", "gpu-0"), ("sp-gpu", "gpu-1")]}),
    "cel-selector": ({}, {"pod0-gpu-": [("gpu", "gpu-0")]}),
    "basic-multiple-requests": ({}, {"pod0-gpus-": [("gpu-1", "gpu-0"), ("gpu-2", "gpu-1")]}),
    "basic-shared-claim-across-pods": ({}, {"single-gpu": [("gpu", "gpu-0")]}),
    "gpu-allow-multiple-allocations": ({"gpuAllowMultipleAllocations": True},
                                       {"shared-gpu-pod0": [("gpu", "gpu-0")], "shared-gpu-pod1": [("gpu", "gpu-0")]}),
    "partitionable-devices": ({"gpuPartitions": 4}, {"pod0-gpu-partitions-": [("gpu-partition", "gpu-0-partition-0"),
                                                                              ("gpu-partition", "gpu-0-partition-1")]}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dra_example_drivers_demo_specs(tmp_path, capsys, name):
    example, want = CASES[name]
    store = _node(tmp_path, capsys, example)
    claims = _apply_and_schedule(tmp_path, capsys, store, MANIFESTS["examples"][name])
    assert len(claims) == len(want)
    for prefix, results in want.items():
        assert _by_prefix(claims, prefix) == results


def test_prioritized_alternatives_take_the_first_that_fits(tmp_path, capsys):
    store = _node(tmp_path, capsys)
    claims = _apply_and_schedule(tmp_path, capsys, store, MANIFESTS["examples"]["prioritized-alternatives"])
    requests = sorted(r for results in claims.values() for r, _ in results)
    assert requests == ["gpu/latest-gpu", "gpu/older-gpu"], "no BLEEDING-EDGE-GPU and no 1Ti GPU here"


def test_the_opaque_config_demo_prepares_with_the_drivers_env_and_cdi(tmp_path, capsys):
    store = _node(tmp_path, capsys)
    _apply_and_schedule(tmp_path, capsys, store, MANIFESTS["examples"]["basic-resourceclaim-opaque-config"])
    (claim,) = ObjectStore(store).list("resourceclaims", "basic-resourceclaim-opaque-config")
    claims = FakeClaims()
    meta = claim["metadata"]
    claims.claims[(meta["namespace"], meta["name"])] = claim
    ref = ClaimRef(meta["namespace"], meta["name"], meta["uid"])
    profile = driver()
    rendered = profile.render(inventory("demo"), Features(), node_name=NODE)
    tmp = Path(tempfile.mkdtemp(prefix="fdp-ex-"))
    state = DeviceState(driver_name=profile.name, claims=claims, pool=PoolCache(lambda: rendered),
                        cdi=CdiWriter(tmp / "cdi", profile.name, profile.cdi), profile=profile,
                        checkpoint=CheckpointStore(tmp / "state", driver_name=profile.name, node_name=NODE, boot_id="b"))
    try:
        out = state.prepare([ref])[ref.uid]
        assert not out.error
        assert [d.cdi_device_ids for d in out.devices] == [(f"k8s.gpu.example.com/gpu={ref.uid}-gpu-0",),
                                                           (f"k8s.gpu.example.com/gpu={ref.uid}-gpu-1",)]
        spec = json.loads((tmp / "cdi" / f"k8s.gpu.example.com-gpu_{ref.uid}.json").read_text())
        assert spec["kind"] == "k8s.gpu.example.com/gpu"
        env = {e for d in spec["devices"] for e in d["containerEdits"]["env"]} | set(spec["containerEdits"]["env"])
        assert {"GPU_DEVICE_0=gpu-0", "GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing", "GPU_DEVICE_0_TIMESLICE_INTERVAL=Long",
                "GPU_DEVICE_1=gpu-1", "GPU_DEVICE_1_SHARING_STRATEGY=SpacePartitioning", "GPU_DEVICE_1_PARTITION_COUNT=10",
                f"GPU_DEVICE_GPU_0_RESOURCE_CLAIM={ref.uid}", "DRA_ADMIN_ACCESS=false",
                "DRA_RESOURCE_DRIVER_NAME=gpu.example.com", f"KUBERNETES_NODE_NAME={NODE}"} <= env
    finally:
        state.close()


def test_a_fleet_of_example_nodes_publishes_what_run_would(tmp_path, capsys):
    fleet = {"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet", "metadata": {"name": "ex"},
             "spec": {"nodeGroups": [{"name": "ex", "count": 2, "profile": "no-gpu", "personality": "example",
                                      "driverConfig": {"example": {"numDevices": 9}}}]}}
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(fleet))
    store = str(tmp_path / "s")
    code, _, err = cli(capsys, "fleet", "apply", "-f", str(tmp_path / "f.yaml"), "--store", store)
    assert code == 0, err
    slices = ObjectStore(store).list("resourceslices")
    assert [s["spec"]["nodeName"] for s in slices] == ["ex-0000", "ex-0001"]
    want = driver(numDevices=9).render(inventory("no-gpu"), Features(), node_name="ex-0001").slices[0]
    got = next(s for s in slices if s["spec"]["nodeName"] == "ex-0001")["spec"]
    assert got["devices"] == want["devices"], "the fleet stamps each node's UUIDs as `run` derives them"
    assert [c["metadata"]["name"] for c in ObjectStore(store).list("deviceclasses")] == ["gpu.example.com"]
