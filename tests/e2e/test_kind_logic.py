"""The kind backend's bookkeeping against an in-memory stand-in for the API (NOT a real cluster).

A real cluster run is opt-in (tests/e2e/test_kind.py, `-m kind`); this file only proves that the
backend turns API objects into the right observations: the allocator's prediction from the
cluster's own slices, the skewed scheduler's status write, the pod's scheduling condition, phase,
prepare-failure events, and the container env from its log.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.discovery import discover, make_sysfs
from driver.e2e import kind
from driver.e2e.manifests import NAMESPACE, claim_object, device_classes
from driver.features import parse_features
from driver.hardware import load_catalog
from driver.slices import render_pool, to_resource_slices

NODE = "kind-worker"
D = 'device.attributes["fake-dra.example.com"]'


class FakeApi:
    """Objects by (kind, namespace, name); pods get a status from `pod_status` when created."""

    def __init__(self, tmp: Path) -> None:
        make_sysfs("demo", tmp / "sysfs")
        pool = render_pool(discover(tmp / "sysfs", load_catalog()), kind.CLUSTER_FEATURES, node_name=NODE,
                           driver_name=DEFAULT_DRIVER_NAME)
        self.objs: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        for s in to_resource_slices(pool):
            self.put("ResourceSlice", s)
        for dc in device_classes():
            self.put("DeviceClass", dc)
        self.pod_status: dict[str, Any] = {"phase": "Running"}
        self.pod_spec_node: str | None = NODE
        self.events: list[dict[str, Any]] = []
        self.logs = "FAKE_DRA_X_TYPE=gpu\n"  # the container printed its env
        self.status_writes: list[dict[str, Any]] = []
        self.container_files: dict[str, str] = {}  # what `cat` finds inside the pod's container
        self.kubectl_calls: list[list[str]] = []

    def kubectl(self, args: list[str], check: bool = True) -> str | None:
        self.kubectl_calls.append(args)
        assert args[:6] == ["exec", "-n", NAMESPACE, args[3], "-c", "ctr"] and args[6:8] == ["--", "cat"], args
        return self.container_files.get(args[8])

    def put(self, k: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        meta.setdefault("uid", f"uid-{meta['name']}")
        self.objs[(k, meta.get("namespace"), meta["name"])] = copy.deepcopy(obj)
        return obj

    # the driver.kube.e2e_client functions the backend uses
    def get(self, api, k, name, namespace=None):
        return copy.deepcopy(self.objs[(k, namespace, name)])

    def get_or_none(self, api, k, name, namespace=None):
        return copy.deepcopy(self.objs.get((k, namespace, name)))

    def list_items(self, api, k, namespace=None, field_selector=None, label_selector=None):
        if k == "Event":
            return list(self.events)
        return [copy.deepcopy(o) for (kk, ns, _), o in self.objs.items()
                if kk == k and (namespace is None or ns == namespace)]

    def create(self, api, obj):
        obj = copy.deepcopy(obj)
        if obj["kind"] == "Pod":
            obj["spec"]["nodeName"] = self.pod_spec_node
            obj["status"] = copy.deepcopy(self.pod_status)
        return self.put(obj["kind"], obj)

    def update_status(self, api, obj):
        self.status_writes.append(copy.deepcopy(obj))
        return self.put(obj["kind"], obj)

    def pod_log(self, api, namespace, name, container=None):
        return self.logs


@pytest.fixture
def backend(tmp_path, monkeypatch) -> tuple[kind.KindBackend, FakeApi]:
    fake = FakeApi(tmp_path)
    for fn in ("get", "get_or_none", "list_items", "create", "update_status", "pod_log"):
        monkeypatch.setattr(kind.k, fn, getattr(fake, fn))
    monkeypatch.setattr(kind.k, "connect", lambda cfg, timeout_s=15.0: object())
    b = kind.KindBackend(kubeconfig=None)
    b._kubectl = fake.kubectl  # type: ignore[method-assign]
    monkeypatch.setattr(kind.shutil, "which", lambda name: f"/usr/bin/{name}")
    b.node = NODE
    b.timeout_s = 3
    return b, fake


def _claim(fake: FakeApi, name: str, cls: str, selector: str | None = None) -> None:
    req = {"name": "gpu", "class": cls}
    if selector:
        req["selector"] = selector
    fake.put("ResourceClaim", claim_object(name, [req]))


def test_running_pod_with_env(backend) -> None:
    b, fake = backend
    _claim(fake, "mig", "mig", f'{D}.profile == "1g.5gb"')
    fake.logs = "FAKE_DRA_GPU_0_MIG_1G5GB_0_TYPE=mig\nFAKE_DRA_GPU_0_MIG_1G5GB_0_PROFILE=1g.5gb\nPATH=/bin\n"
    obs = b.run_pod("p", ["mig"], None, skewed=False)
    assert obs.predicted == (True, "") and obs.scheduled is True and obs.prepared is True
    assert obs.env["FAKE_DRA_GPU_0_MIG_1G5GB_0_PROFILE"] == "1g.5gb" and "PATH" not in obs.env
    assert obs.cdi_devices == ["FAKE_DRA_GPU_0_MIG_1G5GB_0_TYPE"]
    assert fake.status_writes == [], "the default scheduler writes allocations itself"


def test_device_metadata_is_read_inside_the_container(backend) -> None:
    from driver.state.metadata import encode

    b, fake = backend
    _claim(fake, "mig", "mig", f'{D}.profile == "1g.5gb"')
    path = ("/var/run/kubernetes.io/dra-device-attributes/resourceclaims/mig/gpu/"
            f"{DEFAULT_DRIVER_NAME}-metadata.json")
    fake.container_files[path] = encode({"metadata": {"name": "mig"}, "requests": []}, 1).decode()
    obs = b.run_pod("p", ["mig"], None, skewed=False)
    assert obs.metadata == {path: fake.container_files[path]}
    assert fake.kubectl_calls[-1][3] == "p", "read in the scenario's pod"


def test_device_metadata_missing_in_the_container_or_without_kubectl(backend, monkeypatch) -> None:
    b, fake = backend
    _claim(fake, "mig", "mig", f'{D}.profile == "1g.5gb"')
    assert b.run_pod("p", ["mig"], None, skewed=False).metadata == {}, "no file: nothing seen"
    monkeypatch.setattr(kind.shutil, "which", lambda name: None)
    assert b.run_pod("p2", ["mig"], None, skewed=False).metadata is None, "not observed"


def test_unschedulable_pod_and_prediction(backend) -> None:
    b, fake = backend
    _claim(fake, "vgpu", "vgpu", f'{D}.profile == "A100-99C"')  # no such profile
    fake.pod_spec_node = None
    fake.pod_status = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: 1 cannot allocate all claims"}]}
    obs = b.run_pod("p", ["vgpu"], None, skewed=False)
    assert obs.scheduled is False and "(kube-scheduler: 0/3 nodes are available" in obs.reason
    assert obs.predicted[0] is False and "no device matches the selectors" in obs.predicted[1]
    assert obs.reason.startswith(obs.predicted[1]), "the reason in words comes from the reference allocator"
    assert obs.prepared is None, "an unscheduled pod says nothing about preparation"


def test_skewed_scheduler_writes_the_allocation_and_prepare_failure_is_seen(backend) -> None:
    b, fake = backend
    _claim(fake, "vgpu", "vgpu", f'{D}.profile == "A100X-4C"')
    fake.pod_status = {"phase": "Pending"}
    fake.events = [{"reason": "FailedPrepareDynamicResources",
                    "message": "NodePrepareResources: groups incompatible on counter set gpu-1-counters"}]
    obs = b.run_pod("p", ["vgpu"], None, skewed=True)
    (written,) = fake.status_writes
    assert written["status"]["allocation"]["devices"]["results"][0]["device"].startswith("gpu-1-vgpu-a100x-4c")
    assert obs.scheduled is True and obs.prepared is False
    assert "groups incompatible" in obs.prepare_error


def test_allocations_of_other_claims_count_in_the_prediction(backend) -> None:
    b, fake = backend
    _claim(fake, "full", "gpu")
    b.run_pod("p1", ["full"], None, skewed=True)  # skewed: the harness writes the allocation
    full = fake.objs[("ResourceClaim", NAMESPACE, "full")]
    gpu = full["status"]["allocation"]["devices"]["results"][0]["device"]
    uuid = next(d["uuid"] for d in b.published_devices() if d["name"] == gpu)
    _claim(fake, "mig", "mig", f'{D}.parentUUID == "{uuid}"')
    obs = b.run_pod("p2", ["mig"], None, skewed=False)
    assert obs.predicted[0] is False, "the whole GPU is taken, so no MIG partition of it fits"


def test_cluster_features_are_the_1_37_defaults_with_groups() -> None:
    # What the kind overlay gives the plugin is checked against these in
    # tests/deploy/test_kustomize.py::test_kind_overlay_matches_the_kind_cluster.
    assert kind.CLUSTER_FEATURES == parse_features("DRASharedConsumableCapacity=false")
    assert kind.CLUSTER_FEATURES.enabled("DRADeviceCompatibilityGroups")


def test_counters_and_unobservable_on_kind(backend) -> None:
    b, fake = backend
    _claim(fake, "mig", "mig", f'{D}.profile == "3g.20gb"')
    b.run_pod("p", ["mig"], None, skewed=True)
    obs = b.run_pod("p2", ["mig"], None, skewed=False)
    assert "prepare_calls_same" in obs.unobservable
    assert obs.counters["gpu-0-counters"]["multiprocessors"] == 108 - 42, "a 3g.20gb holds 42 of 108 SMs"


def test_skewed_view_strips_groups_from_a_copy_and_turns_the_gate_off() -> None:
    from driver.e2e.views import skewed_view
    from driver.features import Features

    cc = {"counterSet": "c", "counters": {}, "compatibilityGroups": ["g"]}
    slices = [{"spec": {"devices": [{"name": "d", "consumesCounters": [cc]}]}}]
    seen, features = skewed_view(slices, Features(compatibility_groups=True))
    assert "compatibilityGroups" not in seen[0]["spec"]["devices"][0]["consumesCounters"][0]
    assert cc["compatibilityGroups"] == ["g"], "the backend's own slices must stay intact"
    assert features.compatibility_groups is False


def test_kubectl_helper_passes_the_kubeconfig_and_maps_failures(tmp_path, monkeypatch) -> None:
    script = tmp_path / "kubectl"
    script.write_text('#!/bin/sh\nif [ "$4" = "fail" ]; then echo "boom" >&2; exit 1; fi\necho "$@"\n')
    script.chmod(0o755)
    monkeypatch.setattr(kind.shutil, "which", lambda name: str(script))
    b = kind.KindBackend.__new__(kind.KindBackend)
    b.kubeconfig = "/k/config"
    assert b._kubectl(["exec", "pod"]) == "--kubeconfig /k/config exec pod\n"
    assert b._kubectl(["exec", "fail"], check=False) is None
    with pytest.raises(kind.InputError, match="kubectl exec fail failed: boom"):
        b._kubectl(["exec", "fail"])
    monkeypatch.setattr(kind.shutil, "which", lambda name: None)
    with pytest.raises(kind.InputError, match="kubectl is required on PATH"):
        b._kubectl(["exec", "pod"])
