"""ResourceClaim objects as the scheduler would write them, for tests that place devices by hand
(to play a scheduler that reuses a device the moment it believes it free)."""

from __future__ import annotations

import uuid
from typing import Any

from plugin.harness import DRIVER, NODE


def allocated_claim(name: str, devices: list[str], namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": f"gpu.{DRIVER}"}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": DRIVER, "pool": NODE, "device": d} for d in devices]}}},
    }


def ref(claim: dict[str, Any]) -> tuple[str, str, str]:
    meta = claim["metadata"]
    return meta["namespace"], meta["name"], meta["uid"]
