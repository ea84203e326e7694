#!/usr/bin/env python3
"""The fleet benchmark's input: N nodes of 8 A100-SXM4-40GB, 19 MIG devices per GPU on shared counters.

Each node's slices are made by the project's renderer (driver.slices.render_pool) for a fake
`dgx-a100` node with MIG only (NICs left out; compatibility groups off, so the devices declare no
groups and the input means the same to an allocator without the alpha gate); of what it renders,
the full-GPU device and six of the seven `1g.5gb+me` placements are dropped, which leaves the 19
MIG devices per GPU of the issue's input (7x 1g.5gb, 1x 1g.5gb+me, 4x 1g.10gb, 3x 2g.10gb,
2x 3g.20gb, 1x 4g.20gb, 1x 7g.40gb). One claim is already allocated per node: on nine nodes in ten it
holds a 1g.5gb on each GPU (so no 7g.40gb fits there), on every tenth node only one 1g.5gb on GPU 0.

Three pods, one claim each:
- `any-1g5gb`: any 1g.5gb MIG device (fits on every node);
- `named-gpu`: a 1g.5gb on one GPU named by its UUID (fits on exactly one node);
- `7g40gb`: a full-GPU MIG device (fits on every tenth node: 10%).

`write(directory, nodes)` writes `fleet-<N>.json` (JSON documents, one per line: the DeviceClass, the
slices and the allocated claims) and `fleet-<N>-pod-<name>.json` per pod, for `fake-dra allocate --all-nodes`
or any other allocator that reads Kubernetes objects.
Usage: .venv/bin/python hack/fleet_input.py DIR [--nodes N ...]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DRIVER = "fake-dra.example.com"
CLASS_NAME = "mig.fake-dra.example.com"
KEEP_ME = "mig-1g5gbme-0"  # the one 1g.5gb+me placement kept per GPU
PODS = ("any-1g5gb", "named-gpu", "7g40gb")


def _renderer() -> Any:
    """render(node) -> slices of one node, with the inventory discovered once."""
    from driver.discovery import discover
    from driver.discovery.fakesysfs import make_sysfs
    from driver.features import Features
    from driver.hardware import load_catalog
    from driver.slices import render_pool, to_resource_slices
    from driver.slices.config import SliceConfig

    with tempfile.TemporaryDirectory() as tmp:
        make_sysfs("dgx-a100", Path(tmp))
        inventory = dataclasses.replace(discover(Path(tmp), load_catalog()), nics=())
    features = Features(compatibility_groups=False)
    config = SliceConfig(single_mode="mig", timeshare_modes=())

    def keep(device: dict) -> bool:
        name = device["name"]
        return "-mig-" in name and ("-mig-1g5gbme-" not in name or name.endswith(KEEP_ME))

    def render(node: str) -> list[dict]:
        slices = to_resource_slices(render_pool(inventory, features, node_name=node, driver_name=DRIVER, config=config))
        for s in slices:
            if s["spec"].get("devices") is not None:
                s["spec"]["devices"] = [d for d in s["spec"]["devices"] if keep(d)]
        return slices

    return render


def _attr(device: dict, name: str) -> Any:
    return next(iter(device["attributes"][name].values()))


def device_class() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS_NAME},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}" && '
                                                          f'device.attributes["{DRIVER}"].type == "mig"'}}]}}


def _claim(name: str, selector: str, allocation: dict | None = None, namespace: str = "bench") -> dict:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
             "spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                 "deviceClassName": CLASS_NAME, "selectors": [{"cel": {"expression": selector}}]}}]}}}
    if allocation is not None:
        claim["status"] = {"allocation": allocation}
    return claim


def _held(node: str, slices: list[dict], gpus: int) -> dict:
    """The node's allocated claim: a 1g.5gb on each of its first `gpus` GPUs."""
    pool = slices[0]["spec"]["pool"]["name"]
    results = [{"request": "mig", "driver": DRIVER, "pool": pool, "device": f"gpu-{g}-mig-1g5gb-0"} for g in range(gpus)]
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return _claim(f"held-{node}", f'device.attributes["{DRIVER}"].profile == "1g.5gb"',
                  {"devices": {"results": results}, "nodeSelector": selector}, namespace="running")


def fleet(nodes: int) -> tuple[list[dict], dict[str, dict], dict[str, Any]]:
    """(cluster objects, pods by name, facts: node names, expected feasible nodes per pod)."""
    render = _renderer()
    objects: list[dict] = [device_class()]
    names = [f"node-{i:04d}" for i in range(nodes)]
    named_node = names[nodes // 2 + 1]
    named_uuid = ""
    for i, node in enumerate(names):
        slices = render(node)
        objects.extend(slices)
        objects.append(_held(node, slices, 1 if i % 10 == 0 else 8))
        if node == named_node:
            gpu3 = next(d for s in slices for d in s["spec"].get("devices") or () if d["name"] == "gpu-3-mig-1g5gb-0")
            named_uuid = _attr(gpu3, "parentUUID")
    attr = f'device.attributes["{DRIVER}"]'
    pods = {
        "any-1g5gb": _claim("any-1g5gb", f'{attr}.profile == "1g.5gb"'),
        "named-gpu": _claim("named-gpu", f'{attr}.profile == "1g.5gb" && {attr}.parentUUID == "{named_uuid}"'),
        "7g40gb": _claim("7g40gb", f'{attr}.profile == "7g.40gb"'),
    }
    facts = {"nodes": names, "feasible": {
        "any-1g5gb": names, "named-gpu": [named_node], "7g40gb": [n for i, n in enumerate(names) if i % 10 == 0]}}
    return objects, pods, facts


def write(directory: Path, nodes: int) -> tuple[Path, dict[str, Path], dict[str, Any]]:
    """Write the input files; returns (cluster file, pod files, facts)."""
    objects, pods, facts = fleet(nodes)
    directory.mkdir(parents=True, exist_ok=True)
    cluster = directory / f"fleet-{nodes}.json"
    cluster.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objects))
    files = {}
    for name, claim in pods.items():
        files[name] = directory / f"fleet-{nodes}-pod-{name}.json"
        files[name].write_text(json.dumps(claim, indent=1) + "\n")
    (directory / f"fleet-{nodes}.facts.json").write_text(json.dumps(facts))
    return cluster, files, copy.deepcopy(facts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000])
    args = parser.parse_args()
    for n in args.nodes:
        cluster, _, _ = write(args.directory, n)
        print(f"{cluster}: {cluster.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
