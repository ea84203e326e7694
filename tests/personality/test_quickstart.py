"""NVIDIA's own quickstart manifests against the nvidia personality's slices, node model by node model.

What each pod gets follows from what NVIDIA's driver publishes on that node (docs/personalities.md,
from cmd/gpu-kubelet-plugin at kubernetes-sigs/dra-driver-nvidia-gpu@95932046) and kube-scheduler's
first-fit order: a DGX A100 with MIG off offers eight `gpu-N`; with mig-parted's half-balanced layout
(GPUs 0-3: 1g.5gb x2, 2g.10gb, 3g.20gb) those four GPUs offer only their MIG devices; DynamicMIG on an
Ampere GPU in MIG mode offers every placement but no full GPU, on Hopper both; the H100's profiles
are 1g.10gb and up, so a 1g.5gb request finds nothing; `index` is no longer published. The table in
docs/personalities.md is this test's data; a test keeps the two equal.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from driver.personality import personality_named
from driver.state.types import ClaimRef

from .nodes import claim, devices, node, schedule

HERE = Path(__file__).parent
MANIFESTS = yaml.safe_load((HERE / "quickstart.yaml").read_text())["manifests"]
HALF_BALANCED = {g: ["1g.5gb@0", "1g.5gb@1", "2g.10gb@2", "3g.20gb@4"] for g in range(4)}
MIG4 = ["gpu-{g}-mig-1g5gb-19-0", "gpu-{g}-mig-1g5gb-19-1", "gpu-{g}-mig-2g10gb-14-2", "gpu-{g}-mig-3g20gb-9-4"]

# Node model -> (sysfs profile, driver config): DGX A100 = 8x A100-SXM4-40GB, DGX H100 = 8x H100 SXM5.
NODES: dict[str, tuple[str, dict[str, Any]]] = {
    "DGX A100, MIG off": ("dgx-a100", {}),
    "DGX A100, static MIG half-balanced": ("dgx-a100", {"nvidia": {"migDevices": HALF_BALANCED}}),
    "DGX A100, DynamicMIG, MIG mode on": ("dgx-a100", {"nvidia": {"featureGates": {"DynamicMIG": True},
                                                                 "migEnabled": "all"}}),
    "DGX A100, DynamicMIG, MIG mode off": ("dgx-a100", {"nvidia": {"featureGates": {"DynamicMIG": True}}}),
    "DGX H100, MIG off": ("h100", {}),
    "DGX H100, DynamicMIG": ("h100", {"nvidia": {"featureGates": {"DynamicMIG": True}}}),
    "DGX H100, PassthroughSupport": ("h100", {"nvidia": {"featureGates": {"PassthroughSupport": True}}}),
    "DGX H100, ConsumableShares unlimited": ("h100", {"nvidia": {"featureGates": {"ConsumableShares": True},
                                                                 "consumableShares": "unlimited"}}),
}
NO_MATCH = "unschedulable: no device matches"
NO_INDEX = "unschedulable: no such key: index"
# What each manifest's pods get on each node (a pod: its devices, or "unschedulable: <reason>").
EXPECT: dict[str, dict[str, list[Any]]] = {
    "DGX A100, MIG off": {
        "gpu-test1": [["gpu-0"], ["gpu-1"]], "gpu-test2": [["gpu-0"]], "gpu-test3": [["gpu-0"], ["gpu-0"]],
        "gpu-test4": [NO_MATCH] * 4, "gpu-test5": [["gpu-0", "gpu-1"]], "gpu-test6": [NO_INDEX] * 4,
        "gpu-test-mps": [["gpu-0"]], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
    "DGX A100, static MIG half-balanced": {
        "gpu-test1": [["gpu-4"], ["gpu-5"]], "gpu-test2": [["gpu-4"]], "gpu-test3": [["gpu-4"], ["gpu-4"]],
        "gpu-test4": [[n.format(g=g) for n in MIG4] for g in range(4)],
        "gpu-test5": [["gpu-4", "gpu-5"]], "gpu-test6": [NO_INDEX] * 4,
        "gpu-test-mps": [["gpu-4"]], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
    "DGX A100, DynamicMIG, MIG mode on": {
        "gpu-test1": [NO_MATCH] * 2, "gpu-test2": [NO_MATCH], "gpu-test3": [NO_MATCH, "unschedulable"],
        "gpu-test4": [[n.format(g=g) for n in MIG4] for g in range(4)],
        "gpu-test5": [NO_MATCH], "gpu-test6": [NO_MATCH] * 4,
        "gpu-test-mps": [NO_MATCH], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
    "DGX A100, DynamicMIG, MIG mode off": {
        "gpu-test1": [["gpu-0"], ["gpu-1"]], "gpu-test2": [["gpu-0"]], "gpu-test3": [["gpu-0"], ["gpu-0"]],
        "gpu-test4": [NO_MATCH] * 4, "gpu-test5": [["gpu-0", "gpu-1"]], "gpu-test6": [NO_INDEX] * 4,
        "gpu-test-mps": [["gpu-0"]], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
    "DGX H100, MIG off": {
        "gpu-test1": [["gpu-0"], ["gpu-1"]], "gpu-test2": [["gpu-0"]], "gpu-test3": [["gpu-0"], ["gpu-0"]],
        "gpu-test4": [NO_MATCH] * 4, "gpu-test5": [["gpu-0", "gpu-1"]], "gpu-test6": [NO_MATCH] * 4,
        "gpu-test-mps": [["gpu-0"]], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
    "DGX H100, DynamicMIG": {
        "gpu-test1": [["gpu-0"], ["gpu-1"]], "gpu-test2": [["gpu-0"]], "gpu-test3": [["gpu-0"], ["gpu-0"]],
        "gpu-test4": [NO_MATCH] * 4, "gpu-test5": [["gpu-0", "gpu-1"]], "gpu-test6": [NO_MATCH] * 4,
        "gpu-test-mps": [["gpu-0"]], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
    "DGX H100, PassthroughSupport": {
        "gpu-test1": [["gpu-0"], ["gpu-1"]], "gpu-test2": [["gpu-0"]], "gpu-test3": [["gpu-0"], ["gpu-0"]],
        "gpu-test4": [NO_MATCH] * 4, "gpu-test5": [["gpu-0", "gpu-1"]], "gpu-test6": [NO_MATCH] * 4,
        "gpu-test-mps": [["gpu-0"]], "gpu-test-vfiopci": [["gpu-vfio-0"]], "gpu-test-vfio-config": [["gpu-vfio-0"]]},
    # Shared devices: with the "unlimited" policy a request asks for no memory by default, so every
    # claim (and both requests of gpu-test5, as consumable capacity allows) shares gpu-0.
    "DGX H100, ConsumableShares unlimited": {
        "gpu-test1": [["gpu-0"], ["gpu-0"]], "gpu-test2": [["gpu-0"]], "gpu-test3": [["gpu-0"], ["gpu-0"]],
        "gpu-test4": [NO_MATCH] * 4, "gpu-test5": [["gpu-0", "gpu-0"]], "gpu-test6": [NO_MATCH] * 4,
        "gpu-test-mps": [["gpu-0"]], "gpu-test-vfiopci": [NO_MATCH], "gpu-test-vfio-config": [NO_MATCH]},
}


def _pods(manifest: dict[str, Any]) -> list[list[dict]]:
    """Each pod's pending claims; a reused claim is the earlier pod's (already allocated: nothing new)."""
    pods = []
    for pod in manifest["pods"]:
        pods.append([claim(name, spec["requests"], spec.get("constraints", ()), spec.get("config", ()))
                     for name, spec in (pod.get("claims") or {}).items()])
    return pods


def run_manifest(model: str, name: str) -> list[list[str] | str]:
    profile, config = NODES[model]
    slices, classes = node(profile, config)
    pods = _pods(MANIFESTS[name])
    got = schedule(slices, classes, [p for p in pods if p])
    # A pod that only reuses an earlier pod's claim gets that claim's devices, or is stuck with it.
    out: list[list[str] | str] = []
    results = iter(got)
    for manifest_pod, pending in zip(MANIFESTS[name]["pods"], pods, strict=True):
        if pending:
            out.append(next(results))
            continue
        first = out[0]
        out.append(first if isinstance(first, list) else "unschedulable")
    return out


def _matches(got: list[str] | str, want: Any) -> bool:
    if isinstance(want, str):
        return isinstance(got, str) and want.removeprefix("unschedulable").lstrip(": ") in got
    return got == want


@pytest.mark.parametrize("model", list(NODES))
@pytest.mark.parametrize("name", list(MANIFESTS))
def test_each_quickstart_manifest_gets_what_the_real_slices_give(model: str, name: str) -> None:
    got = run_manifest(model, name)
    want = EXPECT[model][name]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert _matches(g, w), f"{model}, {name}, pod {i}: got {g!r}, want {w!r}"


def _prepare(model: str, name: str, gates: dict[str, bool]) -> list[str]:
    """Allocate the manifest's first pod, then resolve its configs as NVIDIA's plugin would."""
    profile, config = NODES[model]
    config = {"nvidia": {**config.get("nvidia", {}), "featureGates": {**config.get("nvidia", {}).get("featureGates", {}),
                                                                      **gates}}}
    slices, classes = node(profile, config)
    gpu = personality_named("nvidia").drivers(config)[0]
    pod = _pods(MANIFESTS[name])[0]
    from driver.allocator import allocate_claims

    outcome = allocate_claims([*slices, *classes, *pod], node="node-1")
    errors = []
    for result in outcome.results:
        alloc = result.allocation
        assert alloc is not None, result.reason
        config_entries = [{"source": "FromClaim", **c} for c in result.claim["spec"]["devices"].get("config", ())]
        ref = ClaimRef("default", result.claim["metadata"]["name"], result.claim["metadata"]["uid"])
        try:
            applied = gpu.resolve_configs(ref, config_entries, alloc["devices"]["results"], devices(slices))
            errors.extend(f"ok: {a.kind}" + ("".join(f" {k}={v}" for k, v in a.env.items())) for a in applied)
        except Exception as exc:  # noqa: BLE001 - the message is what is checked
            errors.append(str(exc))
    return errors


def test_gpu_test5_needs_the_time_slicing_gate_first() -> None:
    """With NVIDIA's default gates the TimeSlicing config is refused at prepare (validate.go)."""
    [error] = _prepare("DGX H100, MIG off", "gpu-test5", {})
    assert error.endswith('"TimeSlicing" is selected as the GPU sharing strategy, but the "TimeSlicingSettings" '
                          "feature gate is not enabled")
    assert "prepare devices failed: error validating GPU config: " in error


def test_gpu_test5_prepares_with_both_gates_and_the_mps_gpu_gets_the_pipe_directory() -> None:
    out = _prepare("DGX H100, MIG off", "gpu-test5", {"TimeSlicingSettings": True, "MPSSupport": True})
    assert out == ["ok: GpuConfig", "ok: GpuConfig CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"]


def test_gpu_test_mps_is_refused_with_consumable_shares() -> None:
    out = _prepare("DGX H100, ConsumableShares unlimited", "gpu-test-mps", {"MPSSupport": True})
    assert out[0].endswith("error applying config: MPS sharing is not supported when consumable shares is enabled")


def test_the_vfio_config_manifest_prepares_with_passthrough() -> None:
    assert _prepare("DGX H100, PassthroughSupport", "gpu-test-vfio-config", {}) == ["ok: VfioDeviceConfig"]


def test_gpu_test4_on_static_mig_uses_exactly_the_devices_mig_parted_created() -> None:
    """half-balanced leaves GPUs 4-7 whole; their slices hold no MIG device at all."""
    slices, _ = node(*NODES["DGX A100, static MIG half-balanced"])
    names = set(devices(slices))
    assert {n.format(g=0) for n in MIG4} <= names
    assert not any(n.startswith("gpu-4-mig") for n in names) and "gpu-0" not in names and "gpu-4" in names


def _doc_rows() -> dict[tuple[str, str], str]:
    """The quickstart table of docs/personalities.md: (manifest, node) -> cell."""
    text = (HERE.parents[1] / "docs" / "personalities.md").read_text()
    block = text.split("<!-- quickstart-table -->")[1].strip().splitlines()
    lines = list(itertools.takewhile(lambda ln: ln.startswith("|"), block))  # the table, not later ones
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for model, cell in zip(header[1:], cells[1:], strict=True):
            out[(cells[0].strip("`"), model)] = cell
    return out


def _cell(results: list[list[str] | str]) -> str:
    """Per pod: its devices (a GPU's four MIG devices as `gpu-N: 4 MIG`), `none`, or `CEL error`;
    pods with the same outcome written once with a count."""
    parts = []
    for r in results:
        if isinstance(r, list):
            parts.append(", ".join(r) if len(r) <= 2 else f"{r[0].rsplit('-mig-', 1)[0]}: {len(r)} MIG")
        elif "no such key" in r:
            parts.append("CEL error (no `index`)")
        else:
            parts.append("none")
    if len(parts) > 1 and len(set(parts)) == 1:
        return f"{parts[0]} (x{len(parts)})"
    return "; ".join(parts)


def test_the_docs_table_is_what_the_test_computes() -> None:
    rows = _doc_rows()
    assert {m for m, _ in rows} == set(MANIFESTS)
    for model in NODES:
        for name in MANIFESTS:
            assert rows[(name, model)] == _cell(EXPECT_CELLS[model][name]), (name, model)


def _expected_results(model: str, name: str) -> list[list[str] | str]:
    return [w if isinstance(w, list) else re.sub(r"^unschedulable: ?", "", w) for w in EXPECT[model][name]]


EXPECT_CELLS = {m: {n: _expected_results(m, n) for n in MANIFESTS} for m in NODES}
