"""Faults across a fleet as DeviceTaintRules: one device, a GPU with its partitions, a node, a node
group, or a seeded fraction of the fleet's GPUs.

A real cluster says "this hardware is broken" with DeviceTaintRules (resource.k8s.io/v1, GA in 1.37):
kube-scheduler stops allocating the devices a rule selects, and with `NoExecute` the device taint
eviction controller evicts the pods using them (driver/allocator/taintrules.py, eviction.py). A rule
selects by driver, pool and device name only, so a GPU "with all its partitions" is one rule per
device: the GPU (attribute `uuid`) and every device of its pool whose `parentUUID` names it (MIG,
vGPU, time-shared devices). A node, or a node group, is one rule per pool its slices publish.

`plan_faults` is pure: it reads slices and Nodes and returns the rules to create (or, for `--clear`,
the names to delete). Every rule carries the label `fake-dra.example.com/fault=true` and the node in
`fake-dra.example.com/fault-node`, so `fake-dra fault --store DIR --clear` with the same target
removes exactly what it made, and `--clear --all` every fault rule.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver.errors import InputError
from driver.fleet.nodes import GROUP_LABEL

FAULT_LABEL = "fake-dra.example.com/fault"
NODE_LABEL = "fake-dra.example.com/fault-node"
MESSAGE_ANNOTATION = "fake-dra.example.com/fault-message"
TAINT_KEY = "fake-dra.example.com/fault"
EFFECTS = ("NoExecute", "NoSchedule", "None")


@dataclass(frozen=True)
class Target:
    """What to fault: exactly one of device (with node), gpu (with node), node, group, fraction."""

    node: str | None = None
    device: str | None = None
    gpu: str | None = None
    group: str | None = None
    fraction: float | None = None
    seed: int = 0

    def describe(self) -> str:
        if self.device:
            return f"device {self.device} of node {self.node}"
        if self.gpu:
            return f"GPU {self.gpu} of node {self.node} with its partitions"
        if self.node:
            return f"node {self.node}"
        if self.group:
            return f"node group {self.group}"
        return f"{self.fraction:g} of the fleet's GPUs (seed {self.seed})"


@dataclass(frozen=True)
class Selected:
    node: str
    driver: str
    pool: str
    device: str | None  # None: the whole pool


def _attr(device: Mapping[str, Any], name: str) -> str | None:
    value = (device.get("attributes") or {}).get(name) or {}
    return value.get("string") if isinstance(value, Mapping) else None


def _node_slices(slices: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        if spec.get("nodeName"):
            out.setdefault(str(spec["nodeName"]), []).append(spec)
    return out


def _gpu_family(specs: Sequence[Mapping[str, Any]], gpu: Mapping[str, Any], driver: str, pool: str) -> list[str]:
    """The GPU's own name and every device of its pool whose parentUUID is its uuid, in slice order."""
    uuid = _attr(gpu, "uuid")
    out = [str(gpu["name"])]
    if uuid:
        for spec in specs:
            if spec.get("driver") != driver or (spec.get("pool") or {}).get("name") != pool:
                continue
            out.extend(str(d["name"]) for d in spec.get("devices") or () if _attr(d, "parentUUID") == uuid)
    return out


def _find_device(specs: Sequence[Mapping[str, Any]], name: str, node: str) -> tuple[str, str, Mapping[str, Any]]:
    hits = [(str(s.get("driver")), str((s.get("pool") or {}).get("name")), d)
            for s in specs for d in s.get("devices") or () if d.get("name") == name]
    if not hits:
        raise InputError(f"node {node}: no ResourceSlice of the node publishes a device named {name!r}")
    return hits[0]


def select(target: Target, slices: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]]) -> list[Selected]:
    """The devices (or whole pools) a target names; InputError naming what does not exist."""
    by_node = _node_slices(slices)
    if target.device or target.gpu:
        specs = by_node.get(str(target.node))
        if not specs:
            raise InputError(f"--node {target.node}: no ResourceSlice names this node")
        name = str(target.device or target.gpu)
        driver, pool, dev = _find_device(specs, name, str(target.node))
        if target.device:
            return [Selected(str(target.node), driver, pool, name)]
        if _attr(dev, "type") not in (None, "gpu"):
            raise InputError(f"--gpu {name}: node {target.node} publishes it as type {_attr(dev, 'type')!r}, not a GPU")
        return [Selected(str(target.node), driver, pool, d) for d in _gpu_family(specs, dev, driver, pool)]
    if target.node or target.group:
        if target.node:
            names = [str(target.node)]
        else:
            names = sorted(str((n.get("metadata") or {}).get("name")) for n in nodes
                           if ((n.get("metadata") or {}).get("labels") or {}).get(GROUP_LABEL) == target.group)
            if not names:
                raise InputError(f"--node-group {target.group}: no Node carries {GROUP_LABEL}={target.group}")
        out = []
        for node in names:
            specs = by_node.get(node)
            if not specs:
                raise InputError(f"node {node}: no ResourceSlice names this node")
            pools = sorted({(str(s.get("driver")), str((s.get("pool") or {}).get("name"))) for s in specs})
            out.extend(Selected(node, d, p, None) for d, p in pools)
        return out
    fraction = float(target.fraction or 0)
    if not 0 < fraction <= 1:
        raise InputError(f"--fraction: must be in (0, 1], got {target.fraction!r}")
    gpus = [(node, str(s.get("driver")), str((s.get("pool") or {}).get("name")), d)
            for node in sorted(by_node) for s in by_node[node] for d in s.get("devices") or ()
            if _attr(d, "type") == "gpu"]
    if not gpus:
        raise InputError("--fraction: no device of type gpu is published")
    count = max(1, round(fraction * len(gpus)))
    chosen = sorted(random.Random(target.seed).sample(range(len(gpus)), count))
    out = []
    for i in chosen:
        node, driver, pool, dev = gpus[i]
        out.extend(Selected(node, driver, pool, d) for d in _gpu_family(by_node[node], dev, driver, pool))
    return out


def rule_name(sel: Selected) -> str:
    """`fault-<node>-<device or pool>`, a DNS subdomain of at most 253 characters (hashed if longer)."""
    base = f"fault-{sel.node}-{sel.device or 'pool-' + sel.pool.replace('/', '.')}".lower()
    if len(base) <= 253:
        return base
    digest = hashlib.sha256(base.encode()).hexdigest()[:12]
    return f"{base[:240]}-{digest}"


def fault_rules(selected: Sequence[Selected], *, effect: str = "NoExecute", message: str = "",
                value: str = "fault") -> list[dict[str, Any]]:
    """The DeviceTaintRule objects for the selected devices or pools."""
    if effect not in EFFECTS:
        raise InputError(f"--effect: must be one of {', '.join(EFFECTS)}, got {effect!r}")
    out = []
    for sel in selected:
        selector: dict[str, Any] = {"driver": sel.driver, "pool": sel.pool}
        if sel.device:
            selector["device"] = sel.device
        meta: dict[str, Any] = {"name": rule_name(sel), "labels": {FAULT_LABEL: "true", NODE_LABEL: sel.node}}
        if message:
            meta["annotations"] = {MESSAGE_ANNOTATION: message}
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": meta,
                    "spec": {"deviceSelector": selector, "taint": {"key": TAINT_KEY, "value": value, "effect": effect}}})
    return out


def is_fault_rule(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(FAULT_LABEL) == "true"
