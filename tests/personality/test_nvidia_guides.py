"""NVIDIA's documentation examples and e2e (bats) specs against the nvidia personality's slices.

Quoted requests come from kubernetes-sigs/dra-driver-nvidia-gpu@95932046:
site/content/docs/guides/gpu-allocation/{allocating-gpus,mig}.md and tests/bats/specs/*.yaml. What
each gets follows from NVIDIA's slices (see test_nvidia_slices.py for those facts) and first-fit
allocation: an A100-SXM4-40GB reports exactly 40Gi (so "more than 40Gi" misses it), an H100 80GB
HBM3 81559Mi (< 80Gi, so the guide's "Hopper with more than 80 GiB" misses it too); DynamicMIG
devices are walked in name order (`1g10gb` sorts before `1g5gb`).
"""

from __future__ import annotations

from typing import Any

import pytest

from .nodes import claim, node, schedule

GPU = "gpu.nvidia.com"
DYNAMIC_MIG_ON = {"nvidia": {"featureGates": {"DynamicMIG": True}, "migEnabled": "all"}}


def request(name: str, cls: str = GPU, expression: str | None = None, **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, **extra}
    if expression:
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {"name": name, "exactly": exactly}


A100 = "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')\n"
OVER_40GI = "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity(\"40Gi\"))\n"
HOPPER_80GI = ("device.attributes['gpu.nvidia.com'].architecture == 'Hopper'\n&&\n"
               "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity(\"80Gi\"))\n")


@pytest.mark.parametrize(("profile", "expression", "want"), [
    ("dgx-a100", A100, [["gpu-0"]]),
    ("h100", A100, "no device matches"),
    ("dgx-a100", OVER_40GI, "no device matches"),  # 40Gi is not greater than 40Gi
    ("h100", OVER_40GI, [["gpu-0"]]),
    ("h100", HOPPER_80GI, "no device matches"),  # 81559Mi < 80Gi
])
def test_allocating_gpus_guide(profile: str, expression: str, want: Any) -> None:
    got = schedule(*node(profile), [[claim("c", [request("gpu", expression=expression)])]])
    assert got == want if isinstance(want, list) else want in got[0]


def test_mig_guide_any_mig_device_gets_the_first_name_not_the_smallest_profile() -> None:
    """mig.md's any-mig.yaml (and bats gpu-anymig.yaml) under DynamicMIG on an A100 in MIG mode."""
    got = schedule(*node("dgx-a100", DYNAMIC_MIG_ON), [[claim("c", [request("mig", "mig.nvidia.com")])]])
    assert got == [["gpu-0-mig-1g10gb-15-0"]]


def test_mig_guide_two_profiles_on_one_parent() -> None:
    """mig.md's multi-mig.yaml: 1g.5gb and 2g.10gb with matchAttribute parentUUID."""
    profile = "device.attributes['gpu.nvidia.com'].profile == '{}'"
    c = claim("c", [request("mig-small", "mig.nvidia.com", profile.format("1g.5gb")),
                    request("mig-medium", "mig.nvidia.com", profile.format("2g.10gb"))],
              constraints=[{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}])
    assert schedule(*node("dgx-a100", DYNAMIC_MIG_ON), [[c]]) == [["gpu-0-mig-1g5gb-19-0", "gpu-0-mig-2g10gb-14-2"]]
    static = {"nvidia": {"migDevices": {1: ["1g.5gb@6", "2g.10gb@0"]}}}
    assert schedule(*node("dgx-a100", static), [[c]]) == [["gpu-1-mig-1g5gb-19-6", "gpu-1-mig-2g10gb-14-0"]]


def test_bats_multiple_mig_capacity_selectors() -> None:
    """tests/bats/specs/gpu-multiple-mig.yaml on an H100 under DynamicMIG: fewer than 30 SMs, then more
    than 50; the counters move the second off the memory slice the first took."""
    c = claim("c", [
        request("mig1", "mig.nvidia.com", "device.capacity['gpu.nvidia.com'].multiprocessors.isLessThan(quantity(\"30\"))\n"),
        request("mig2", "mig.nvidia.com",
                "device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"50\"))\n")])
    got = schedule(*node("h100", {"nvidia": {"featureGates": {"DynamicMIG": True}}}), [[c]])
    assert got == [["gpu-0-mig-1g10gb-19-0", "gpu-0-mig-3g40gb-9-4"]]


def test_bats_cel_nomatch() -> None:
    c = claim("c", [request("gpu", expression='device.attributes["gpu.nvidia.com"].productName == "NONEXISTENT-GPU-XYZ"')])
    assert "no device matches" in schedule(*node("h100"), [[c]])[0]


@pytest.mark.parametrize(("mode", "capacity"), [("memory", {"memory": "2Gi"}), ("4", {"shares": "1"})])
def test_bats_consumable_shares_two_pods_share_one_gpu(mode: str, capacity: dict[str, str]) -> None:
    """gpu-consumable-shares-{memory,integer}.yaml: two pods, each its own claim, land on gpu-0."""
    config = {"nvidia": {"featureGates": {"ConsumableShares": True}, "consumableShares": mode}}
    pods = [[claim(f"c{i}", [request("gpu", capacity={"requests": capacity})])] for i in range(2)]
    assert schedule(*node("h100", config), pods) == [["gpu-0"], ["gpu-0"]]


def test_consumable_shares_memory_mode_takes_the_whole_gpu_by_default() -> None:
    """With `memory` a request that names no amount gets the policy's default: all of it."""
    config = {"nvidia": {"featureGates": {"ConsumableShares": True}, "consumableShares": "memory"}}
    pods = [[claim(f"c{i}", [request("gpu")])] for i in range(2)]
    assert schedule(*node("h100", config), pods) == [["gpu-0"], ["gpu-1"]]
