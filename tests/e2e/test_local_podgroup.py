"""KEP-5729 on the local backend: a PodGroup member's own claims follow the pod, the group's claim the group.

The resourceclaim controller keeps a claim allocated while anything in its reservedFor remains. A
PodGroup reserves only the claim it references; a member pod's other claims are reserved by the pod
and must be released when that pod is deleted, even while the group keeps running.
"""

from __future__ import annotations

import pytest
import yaml

from driver.cli import main

pytestmark = pytest.mark.slow

GPU0 = 'device.attributes["fake-dra.example.com"].uuid == "${device:name=gpu-0.uuid}"'
ON_GPU0 = 'device.attributes["fake-dra.example.com"].parentUUID == "${device:name=gpu-0.uuid}"'
ON_GPU1 = 'device.attributes["fake-dra.example.com"].parentUUID == "${device:name=gpu-1.uuid}"'

SCENARIO = {
    "name": "podgroup-member-own-claim",
    "reason": "A group member's own MIG claim is released when the member pod is deleted; the group's claim stays.",
    "profile": "demo",
    "steps": [
        {"action": "claim", "name": "shared", "requests": [{"name": "gpu", "class": "mig", "selector": ON_GPU1}]},
        {"action": "claim", "name": "own", "requests": [{"name": "gpu", "class": "mig", "selector": ON_GPU0}]},
        {"action": "podgroup", "name": "workers", "claim": "shared"},
        {"action": "pod", "name": "worker-0", "podgroup": "workers", "claims": ["shared", "own"],
         "expect": {"scheduled": True, "prepared": True}},
        {"action": "pod", "name": "worker-1", "podgroup": "workers", "claims": ["shared"],
         "expect": {"scheduled": True, "prepared": True}},
        {"action": "delete-pod", "name": "worker-0", "expect": {"released": False}},
        # The whole gpu-0 fits only if worker-0's own MIG partition on it was released.
        {"action": "claim", "name": "whole", "requests": [{"name": "gpu", "class": "gpu", "selector": GPU0}]},
        {"action": "pod", "name": "p-whole", "claims": ["whole"], "expect": {"scheduled": True, "prepared": True}},
        {"action": "delete-podgroup", "name": "workers", "expect": {"released": True}},
    ],
}


def test_podgroup_member_own_claim_is_released_with_its_pod(tmp_path, capsys) -> None:
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO))
    code = main(["e2e", "--scenarios-dir", str(tmp_path), "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
