#!/usr/bin/env python3
"""Benchmark the usage model (ClusterView.usage, usage_of) behind `fake-dra show --store` and `describe`.

N nodes of the bundled `demo` profile (2 A100-40GB, one vGPU-capable, a 100G NIC with 8 VFs: 94
devices in 3 slices per node, rendered by driver.slices like `run` publishes them) with 3 allocated
claims per node (a MIG 1g.5gb, a whole GPU, a VF with recorded bandwidth). Prints the time of one
`usage_of` over everything (median of --runs; wall clock and this process's CPU time, which a busy
shared machine disturbs less), per node and per device; the time of `usage()` on a view kept
current (what a scheduler that keeps its view reads: its first read builds the per-pool accounts,
the later ones, after a claim changed, copy them); and the time to draw the partition map of every
node.

Usage: .venv/bin/python hack/bench_usage.py [--nodes 1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from driver import DEFAULT_DRIVER_NAME  # noqa: E402
from driver.allocator.cluster import ClusterView  # noqa: E402
from driver.allocator.usage import usage_of  # noqa: E402
from driver.discovery import discover, make_sysfs  # noqa: E402
from driver.e2e.partition_map import render_usage  # noqa: E402
from driver.features import Features  # noqa: E402
from driver.hardware import load_catalog  # noqa: E402
from driver.slices import render_pool, slice_name, to_resource_slices  # noqa: E402


def _node_slices(n: int) -> tuple[list[dict], list[dict]]:
    with tempfile.TemporaryDirectory() as tmp:
        make_sysfs("demo", Path(tmp) / "sys")
        inventory = discover(Path(tmp) / "sys", load_catalog())
    template = to_resource_slices(render_pool(inventory, Features(), node_name="node-x",
                                              driver_name=DEFAULT_DRIVER_NAME))
    slices, claims = [], []
    for i in range(n):
        node = f"node-{i}"
        for k, s in enumerate(template):
            obj = copy.deepcopy(s)
            obj["metadata"] = {"name": slice_name(k, len(template), DEFAULT_DRIVER_NAME, node)}
            obj["spec"]["nodeName"] = node
            obj["spec"]["pool"]["name"] = node
            slices.append(obj)
        for device in ("gpu-0-mig-1g5gb-0", "gpu-1", "nic-0-vf-0"):
            result = {"request": "r", "driver": DEFAULT_DRIVER_NAME, "pool": node, "device": device}
            if device.startswith("nic"):
                result["consumedCounters"] = [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "10G"}}}]
            claims.append({"metadata": {"namespace": "default", "name": f"{node}-{device}"},
                           "status": {"allocation": {"devices": {"results": [result]}}}})
    return slices, claims


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    slices, claims = _node_slices(args.nodes)
    times, cpu = [], []
    for _ in range(args.runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        usage = usage_of(slices, claims)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    devices = sum(len(p.devices) for p in usage.pools.values())
    median = statistics.median(times)
    started = time.perf_counter()
    text = render_usage(usage, [p for _, p in sorted(usage.pools.items())])
    drawn = time.perf_counter() - started
    print(f"usage_of: {args.nodes} nodes, {len(slices)} slices, {devices} devices, {len(claims)} claims: "
          f"median {median:.3f} s of {args.runs} ({median / args.nodes * 1e3:.2f} ms per node, "
          f"{median / devices * 1e6:.1f} us per device; CPU time median {statistics.median(cpu):.3f} s)")
    view = ClusterView(features=Features.all_on())
    view.add_slices(slices)
    view.replace_claims(claims)
    started = time.process_time()
    view.usage()
    first = time.process_time() - started
    kept = []
    for i in range(args.runs):
        view.remove_claim(f"{claims[i]['metadata']['namespace']}/{claims[i]['metadata']['name']}")
        view.set_claim(claims[i])
        started = time.process_time()
        view.usage()
        kept.append(time.process_time() - started)
    print(f"usage() of a view kept current: first read {first:.3f} s CPU, after a claim changed: "
          f"median {statistics.median(kept):.3f} s CPU")
    print(f"partition map of every node: {drawn:.3f} s, {len(text.splitlines())} lines")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
