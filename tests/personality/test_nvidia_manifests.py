"""NVIDIA's demo, docs and e2e manifests (beyond the v1 quickstart) against the nvidia personality.

The data is nvidia_manifests.yaml (kubernetes-sigs/dra-driver-nvidia-gpu@95932046: demo/specs,
tests/bats/specs and the bats files' inline specs, test/e2e/framework/specs, site/content/docs): per
manifest, what each pod gets on each node model, and what prepare answers for the configs it carries
with the gates NVIDIA's own test installs the driver with. What a pod gets follows from NVIDIA's
slices (test_nvidia_slices.py holds those facts) and kube-scheduler's first-fit order; docs/
personalities.md lists every manifest checked and every one skipped, and a test keeps the two equal.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from driver.allocator import allocate_claims
from driver.commands._local import seed_device_classes
from driver.features import Features
from driver.model.quantity import parse_quantity
from driver.personality import personality_named
from driver.schedule import Scheduler
from driver.state.types import ClaimRef
from driver.store import ObjectStore

from .nodes import claim, devices, node, schedule
from .test_quickstart import NODES as QUICKSTART_NODES

HERE = Path(__file__).parent
MANIFESTS: dict[str, dict[str, Any]] = yaml.safe_load((HERE / "nvidia_manifests.yaml").read_text())["manifests"]


def _gates(**gates: Any) -> dict[str, Any]:
    return {"featureGates": gates}


# The quickstart's node models, and those NVIDIA's bats suites and demos install the driver for.
NODES: dict[str, tuple[str, dict[str, Any]]] = {
    **QUICKSTART_NODES,
    "DGX H100, ConsumableShares memory": ("h100", {"nvidia": {**_gates(ConsumableShares=True),
                                                              "consumableShares": "memory"}}),
    "DGX H100, ConsumableShares 4": ("h100", {"nvidia": {**_gates(ConsumableShares=True), "consumableShares": 4}}),
    "DGX H100, static MIG 1g.10gb": ("h100", {"nvidia": {"migDevices": {0: ["1g.10gb@0"]}}}),
    "GH200, DynamicMIG": ("gh200", {"nvidia": _gates(DynamicMIG=True)}),
}
CASES = [(name, model) for name, m in MANIFESTS.items() for model in m["expect"]]


def _first_gpu(slices: list[dict]) -> dict[str, Any]:
    """The first full GPU the slices publish, as NVIDIA's e2e framework's DetectGPU picks it."""
    return next(d for d in devices(slices).values() if d["attributes"]["type"]["string"] == "gpu")


def _template_value(key: str, slices: list[dict]) -> str:
    """A value NVIDIA's tests read from the slices before rendering a spec (test/e2e/framework/gpu.go
    DetectGPU, LowerKebab, StripSemverLeadingZeros; gpu_allocation_test.go's 90% memory threshold;
    test_gpu_robustness.bats's architecture)."""
    gpu = _first_gpu(slices)
    if key == "architecture":
        return str(gpu["attributes"]["architecture"]["string"])
    if key == "driverVersion":
        return ".".join(str(int(part)) for part in gpu["attributes"]["driverVersion"]["version"].split("."))
    if key == "productPattern":
        return str(gpu["attributes"]["productName"]["string"]).replace("-", " ").lower()
    if key == "requiredMemoryGi":
        gib = int(parse_quantity(gpu["capacity"]["memory"]["value"]) // Fraction(2**30))
        return str(gib * 9 // 10)
    raise AssertionError(f"unknown template value {key!r}")


def _classes(manifest: dict[str, Any], classes: list[dict]) -> list[dict]:
    own = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": c["name"]},
            "spec": {"selectors": [{"cel": {"expression": c["expression"]}}],
                     "extendedResourceName": c["extendedResourceName"]}}
           for c in manifest.get("classes", ())]
    return [*classes, *own]


def _extended_resource_claim(pod: int, limits: dict[str, int], classes: list[dict]) -> dict[str, Any]:
    """The claim kube-scheduler makes for a pod's extended resources (KEP-5004): one request per
    resource, on the DeviceClass naming it in extendedResourceName."""
    requests = []
    for i, (resource, count) in enumerate(limits.items()):
        [cls] = [c["metadata"]["name"] for c in classes if c["spec"].get("extendedResourceName") == resource]
        requests.append({"name": f"container-0-request-{i}",
                         "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}})
    return claim(f"pod-{pod}-extended-resources", requests)


def _pods(manifest: dict[str, Any], slices: list[dict], classes: list[dict]) -> list[list[dict]]:
    """Each pod's pending claims; a reused claim is the earlier pod's (nothing new to allocate)."""
    text = yaml.safe_dump(manifest["pods"])
    if "template" in manifest:
        key = manifest["template"]
        text = text.replace("{" + key + "}", _template_value(key, slices))
    pods = []
    for i, pod in enumerate(yaml.safe_load(text)):
        claims = [claim(name, spec["requests"], spec.get("constraints", ()), spec.get("config", ()))
                  for name, spec in (pod.get("claims") or {}).items()]
        if "extendedResources" in pod:
            claims.append(_extended_resource_claim(i, pod["extendedResources"], classes))
        pods.append(claims)
    return pods


def run_manifest(name: str, model: str) -> list[list[str] | str]:
    manifest = MANIFESTS[name]
    profile, config = NODES[model]
    slices, classes = node(profile, config)
    classes = _classes(manifest, classes)
    pods = _pods(manifest, slices, classes)
    got = iter(schedule(slices, classes, [p for p in pods if p]))
    out: list[list[str] | str] = []
    for pending in pods:
        # A pod that only reuses an earlier pod's claim gets that claim's devices.
        out.append(next(got) if pending else out[0])
    return out


@pytest.mark.parametrize(("name", "model"), CASES, ids=[f"{n}|{m}" for n, m in CASES])
def test_each_manifest_gets_what_the_real_slices_give(name: str, model: str) -> None:
    got = run_manifest(name, model)
    want = MANIFESTS[name]["expect"][model]
    assert len(got) == len(want), got
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if isinstance(w, str):
            assert isinstance(g, str) and w.removeprefix("unschedulable: ") in g, f"pod {i}: got {g!r}, want {w!r}"
        else:
            assert g == w, f"pod {i}"


PREPARES = [(name, p) for name, m in MANIFESTS.items() for p in m.get("prepare", ())]


@pytest.mark.parametrize(("name", "case"), PREPARES, ids=[f"{n}|{c['node']}|{c['gates']}" for n, c in PREPARES])
def test_the_manifest_configs_prepare_as_nvidia_plugin_answers(name: str, case: dict[str, Any]) -> None:
    profile, config = NODES[case["node"]]
    nvidia = copy.deepcopy(dict(config.get("nvidia", {})))
    nvidia["featureGates"] = {**nvidia.get("featureGates", {}), **case["gates"]}
    config = {"nvidia": nvidia}
    slices, classes = node(profile, config)
    gpu = personality_named("nvidia").drivers(config)[0]
    pod = _pods(MANIFESTS[name], slices, classes)[0]
    outcome = allocate_claims([*slices, *classes, *pod], node="node-1")
    answers = []
    for result in outcome.results:
        assert result.allocation is not None, result.reason
        entries = [{"source": "FromClaim", **c} for c in result.claim["spec"]["devices"].get("config", ())]
        ref = ClaimRef("default", result.claim["metadata"]["name"], result.claim["metadata"]["uid"])
        try:
            applied = gpu.resolve_configs(ref, entries, result.allocation["devices"]["results"], devices(slices))
        except Exception as exc:  # noqa: BLE001 - the message is what is checked
            answers.append(str(exc))
            continue
        answers.extend(f"ok: {a.kind}" + "".join(f" {k}={v}" for k, v in a.env.items()) for a in applied)
    want = case["want"]
    if want.startswith("ok: "):
        assert answers == [want]
    else:
        [answer] = answers
        assert answer.startswith("error preparing devices for claim ") and answer.endswith(want), answer


def test_every_node_model_named_in_the_data_exists() -> None:
    named = {model for _, model in CASES} | {c["node"] for _, c in PREPARES}
    assert named <= set(NODES), named - set(NODES)


def test_the_docs_list_every_manifest_checked() -> None:
    text = (HERE.parents[1] / "docs" / "personalities.md").read_text()
    block = text.split("<!-- nvidia-manifests -->")[1].split("<!-- /nvidia-manifests -->")[0]
    listed = {line.split("|")[1].strip().strip("`") for line in block.splitlines() if line.startswith("| `")}
    assert listed == set(MANIFESTS)


def _store_pod(name: str, claims: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A Pod as NVIDIA's bats specs write them: one container using every claim it names."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "ctr", "image": "ubuntu:24.04",
                                     "resources": {"claims": [{"name": c} for c in claims]}}],
                     "resourceClaims": [{"name": c, **ref} for c, ref in claims.items()]}}


def _store(tmp_path: Path, model: str) -> ObjectStore:
    """A local store holding the node model's slices, NVIDIA's DeviceClasses and node-1's Node."""
    store = ObjectStore(tmp_path / "store")
    slices, classes = node(*NODES[model])
    seed_device_classes(store, classes)
    for s in slices:
        store.create("resourceslices", s)
    store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    return store


def test_bats_pods_and_templates_schedule_through_the_local_store(tmp_path: Path) -> None:
    """tests/bats/specs/gpu-2pods-2gpus.yaml, gpu-2pods-1gpu.yaml and gpu-two-claims-one-pod.yaml as
    `fake-dra apply` + `fake-dra schedule` see them (Pods, a ResourceClaimTemplate, a shared
    ResourceClaim): the resourceclaim controller's claims get the devices the allocator path gives."""
    store = _store(tmp_path, "DGX H100, MIG off")
    gpu = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}
    store.create("resourceclaimtemplates", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                                            "metadata": {"name": "rct-single-gpu-full", "namespace": "default"},
                                            "spec": {"spec": gpu}})
    store.create("resourceclaims", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                    "metadata": {"name": "rc-single-gpu-full", "namespace": "default"}, "spec": gpu})
    template, shared = {"resourceClaimTemplateName": "rct-single-gpu-full"}, {"resourceClaimName": "rc-single-gpu-full"}
    for name, claims in [("pod1", {"gpu": template}), ("pod2", {"gpu": template}),
                         ("pod3", {"gpu": shared}), ("pod4", {"gpu": shared}),
                         ("pod-two-claims", {"gpu-a": template, "gpu-b": template})]:
        store.create("pods", _store_pod(name, claims))
    report = Scheduler(store, features=Features()).run()
    assert [o.reason for o in report.outcomes] == [None] * 5
    by_claim = {c["metadata"]["name"]: [r["device"] for r in c["status"]["allocation"]["devices"]["results"]]
                for c in store.list("resourceclaims", all_namespaces=True)}
    got = {}
    for p in store.list("pods", all_namespaces=True):
        statuses = {s["name"]: s["resourceClaimName"] for s in p["status"].get("resourceClaimStatuses", ())}
        names = [statuses.get(e["name"], e.get("resourceClaimName")) for e in p["spec"]["resourceClaims"]]
        got[p["metadata"]["name"]] = sorted(d for n in names for d in by_claim[n])
    assert got == {"pod1": ["gpu-0"], "pod2": ["gpu-1"], "pod3": ["gpu-2"], "pod4": ["gpu-2"],
                   "pod-two-claims": ["gpu-3", "gpu-4"]}
    [rc] = [c for c in store.list("resourceclaims", all_namespaces=True)
          if c["metadata"]["name"] == "rc-single-gpu-full"]
    assert len(rc["status"]["reservedFor"]) == 2


@pytest.mark.parametrize(("model", "limits", "own_class", "want"), [
    ("DGX H100, MIG off", {"nvidia.com/gpu": 1}, None, ["gpu-0"]),
    ("GH200, DynamicMIG", {"nvidia.com/mig-1g.12gb": 1}, "extended-resources-mig-1g-12gb", ["gpu-0-mig-1g12gb-19-0"]),
])
def test_extended_resource_pods_get_a_device_through_the_class(tmp_path: Path, model: str, limits: dict[str, int],
                                                              own_class: str | None, want: list[str]) -> None:
    """demo/specs/extended-resources/{gpu-full,mig-1g-12gb}.yaml and tests/bats/test_gpu_extres.bats:
    a pod with `limits: {nvidia.com/...: 1}` and no claim gets the device through the DeviceClass's
    extendedResourceName, in a claim kube-scheduler makes (KEP-5004, GA in 1.37)."""
    store = _store(tmp_path, model)
    if own_class:
        seed_device_classes(store, _classes(MANIFESTS[own_class], [])[-1:])
    store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-full-pod", "namespace": "default"},
                          "spec": {"containers": [{"name": "cuda-container", "image": "x", "resources": {"limits": limits}}],
                                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})
    (outcome,) = Scheduler(store, features=Features()).run().outcomes
    assert outcome.node == "node-1", outcome.reason
    [claim] = store.list("resourceclaims", all_namespaces=True)
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == want
