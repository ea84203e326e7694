"""Nodes as a personality presents them, for the personality tests: slices, DeviceClasses, and the
reference allocator playing kube-scheduler on them pod by pod."""

from __future__ import annotations

import copy
import functools
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from driver.allocator import allocate_claims
from driver.discovery import discover, make_sysfs
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Inventory
from driver.personality import personality_named
from driver.slices import to_resource_slices

NODE = "node-1"


@functools.cache
def inventory(profile: str, gpus: int | None = None) -> Inventory:
    root = Path(tempfile.mkdtemp(prefix="fdp-")) / "sys"
    make_sysfs(profile, root, gpus)
    return discover(root, load_catalog())


def node(profile: str, config: Mapping[str, Any] | None = None, personality: str = "nvidia",
         gpus: int | None = None, hidden: frozenset[str] = frozenset()) -> tuple[list[dict], list[dict]]:
    """(ResourceSlice objects of every driver, DeviceClasses) of a fake node of `profile`."""
    slices, classes = [], []
    for profile_ in personality_named(personality).drivers(dict(config or {})):
        pool = profile_.render(inventory(profile, gpus), Features(), node_name=NODE, hidden=hidden)
        slices.extend(to_resource_slices(pool))
        classes.extend(profile_.device_classes())
    return slices, classes


def devices(slices: Sequence[Mapping[str, Any]]) -> dict[str, dict]:
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", ())}


def claim(name: str, requests: Sequence[Mapping[str, Any]], constraints: Sequence[Mapping] = (),
          config: Sequence[Mapping] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"requests": [dict(r) for r in requests]}
    if constraints:
        spec["constraints"] = [dict(c) for c in constraints]
    if config:
        spec["config"] = [dict(c) for c in config]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": {"devices": spec}}


def schedule(slices: list[dict], classes: list[dict], pods: Sequence[Sequence[dict]]) -> list[list[str] | str]:
    """Each pod's claims allocated in one cycle (kube-scheduler's), pods in order, each seeing the
    earlier allocations. Per pod: the devices it got, or the scheduler's reason when it got none."""
    allocated: list[dict] = []
    out: list[list[str] | str] = []
    for pod in pods:
        claims = [copy.deepcopy(c) for c in pod]
        outcome = allocate_claims([*slices, *classes, *allocated, *claims], node=NODE)
        if not outcome.results or any(r.allocation is None for r in outcome.results):
            reasons = {r.reason for r in outcome.results if r.reason}
            out.append("; ".join(sorted(reasons)) or "not allocated")
            continue
        got = []
        for result in outcome.results:
            allocated.append(result.claim)
            got.extend(r["device"] for r in result.allocation["devices"]["results"])
        out.append(got)
    return out
