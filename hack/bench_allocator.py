#!/usr/bin/env python3
"""Benchmark the reference allocator (driver.allocator) and print the figures.

1. Per-claim latency packing one real 8-GPU node (fake sysfs profile dgx-a100, rendered by
   driver.slices.render_pool) to exhaustion with MIG 1g.5gb claims: median and p99.
2. Scheduling cycle (the issue's kube-scheduler comparison): one node with 8 A100-40GB GPUs,
   19 MIG devices each on shared counters (hack/bench_inputs/scheduling-cycle-8xa100-mig.yaml),
   50 one-device MIG claims allocated in order, each in a new cycle: a new Allocator from the
   slices and the claims allocated so far. Between cycles only what a scheduler plugin may keep
   survives (AllocatorCache: parsed slices keyed by slice object and pool generation, per-device
   selector results, compiled CEL). Prints median/p90/max per cycle (wall and CPU), the same
   without any cache, and the ratio to one persistent Allocator fed the claims one by one.
   Upstream's Go allocator takes about 1.3 ms per cycle on this input on this machine class.
3. Cluster throughput: N synthetic nodes x 8 A100 GPUs (one counter set per GPU with memory-slice
   counters; full GPU, MIG 1g/2g/3g/7g placements in group `mig`, vGPU 4C/8C with one group per
   profile) plus one PF per node whose 8 VFs draw bandwidth through valueFrom. 8 mixed claims per
   node (MIG, vGPU, full GPU, VF bandwidth); each claim goes to the first node, round-robin from
   where the previous claim landed, that can take it (a first-fit scheduler). Prints claims/s for
   500 nodes / 4,000 claims, and the growth from 100 to 1,000 nodes.

Usage: .venv/bin/python hack/bench_allocator.py [--quick] [--cycle-only] [--cycle-input FILE] [--cycle-runs N]
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

from driver.allocator import Allocator, split_objects  # noqa: E402
from driver.allocator.cache import AllocatorCache  # noqa: E402
from driver.errors import AllocationError  # noqa: E402
from driver.features import Features  # noqa: E402

DRIVER = "fake-dra.example.com"
CLASS = {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}
MIG_PLACEMENTS = {"1g.5gb": [(i, 1) for i in range(7)], "2g.10gb": [(0, 2), (2, 2), (4, 2)],
                  "3g.20gb": [(0, 4), (4, 4)], "7g.40gb": [(0, 8)]}
VGPU = {"A100-4C": (4, 10), "A100-8C": (8, 5)}  # profile -> (GiB, instances)


def claim(name: str, selector: str, **exact) -> dict:
    return {"metadata": {"name": name, "namespace": "bench"}, "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": selector}}], **exact}}]}}}


def attr(name: str) -> str:
    return f"device.attributes['{DRIVER}'].{name}"


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def bench_single_node() -> None:
    from driver.discovery import discover
    from driver.discovery.fakesysfs import make_sysfs
    from driver.hardware import load_catalog
    from driver.slices import render_pool, to_resource_slices

    with tempfile.TemporaryDirectory() as tmp:
        make_sysfs("dgx-a100", Path(tmp))
        pool = render_pool(discover(Path(tmp), load_catalog()), Features(), node_name="n1", driver_name=DRIVER)
    slices = to_resource_slices(pool)
    selector = f"{attr('type')} == 'mig' && {attr('profile')} == '1g.5gb'"
    runs: list[float] = []
    cpu: list[float] = []
    for _ in range(5):
        alloc = Allocator(slices=slices, classes=[CLASS], node="n1")
        count = 0
        while True:
            start, start_cpu = time.perf_counter(), time.process_time()
            try:
                alloc.allocate([claim(f"c{count}", selector)])
            except AllocationError:
                break
            runs.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            count += 1
    per_node = len(runs) // 5
    print(f"single dgx-a100 node ({len(pool.devices())} devices): packed {per_node} MIG 1g.5gb claims to exhaustion, 5 runs")
    for label, values in (("wall", runs), ("cpu ", cpu)):
        print(f"  per claim ({label}): median {statistics.median(values) * 1e3:.2f} ms, p99 {_pct(values, 99) * 1e3:.2f} ms, "
              f"max {max(values) * 1e3:.2f} ms (the first claim builds the per-device CEL inputs)")


CYCLE_INPUT = Path(__file__).resolve().parent / "bench_inputs" / "scheduling-cycle-8xa100-mig.yaml"


def _cycle_run(objs, cache: AllocatorCache | None) -> tuple[list[float], list[float], list[list[str]]]:
    """One pass over the claims, one new Allocator per claim; (wall s, cpu s, devices) per cycle."""
    allocated: list[dict] = []
    wall, cpu, devices = [], [], []
    for claim_obj in objs.pending:
        start, start_cpu = time.perf_counter(), time.process_time()
        alloc = Allocator(slices=objs.slices, classes=objs.classes, node="node-1", allocated=allocated, cache=cache)
        (allocation,) = alloc.allocate([claim_obj])
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        devices.append([r["device"] for r in allocation["devices"]["results"]])
        allocated.append({**claim_obj, "status": {"allocation": allocation}})
    return wall, cpu, devices


def bench_scheduling_cycle(path: Path, runs: int) -> None:
    import yaml

    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    objs = split_objects(docs)
    n = len(objs.pending)
    cache = AllocatorCache()
    # The first pass fills the cache, as a running scheduler's informers and plugin cache are warm.
    first_wall, first_cpu, reference = _cycle_run(objs, cache)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        w, c, devices = _cycle_run(objs, cache)
        assert devices == reference, "cached cycles must allocate exactly what the first pass did"
        wall += w
        cpu += c
    cold_wall, cold_cpu, devices = _cycle_run(objs, None)
    assert devices == reference, "the cache must not change any allocation"
    # Persistent (warm) allocator: one Allocator, claims one by one (state kept in memory).
    warm_wall: list[float] = []
    warm_cpu: list[float] = []
    for _ in range(runs):
        alloc = Allocator(slices=objs.slices, classes=objs.classes, node="node-1", cache=cache)
        for i, claim_obj in enumerate(objs.pending):
            start, start_cpu = time.perf_counter(), time.process_time()
            (allocation,) = alloc.allocate([claim_obj])
            warm_wall.append(time.perf_counter() - start)
            warm_cpu.append(time.process_time() - start_cpu)
            assert [r["device"] for r in allocation["devices"]["results"]] == reference[i]
    devices_total = sum(len(p.devices) for p in Allocator(slices=objs.slices, classes=objs.classes, node="node-1").pools)
    print(f"scheduling cycle: {path.name}: {devices_total} devices, {n} one-device MIG claims in order, "
          f"a new Allocator per cycle; {runs} runs after one warm-up pass")
    for label, values in (("wall", wall), ("cpu ", cpu)):
        print(f"  per cycle ({label}): median {statistics.median(values) * 1e3:.3f} ms, p90 {_pct(values, 90) * 1e3:.3f} ms, "
              f"max {max(values) * 1e3:.3f} ms")
    print(f"  first pass, empty cache (cpu): median {statistics.median(first_cpu) * 1e3:.3f} ms, "
          f"first cycle {first_cpu[0] * 1e3:.2f} ms (parses slices, compiles CEL)")
    print(f"  without any cache (cpu): median {statistics.median(cold_cpu) * 1e3:.3f} ms per cycle")
    print(f"  persistent allocator (cpu): median {statistics.median(warm_cpu) * 1e3:.3f} ms per claim; "
          f"cycle / persistent = {statistics.median(cpu) / statistics.median(warm_cpu):.2f}x")
    print("  upstream Go allocator on this input: about 1.3 ms per cycle (issue 9)")


def synthetic_node(node: str) -> list[dict]:
    pool = {"name": node, "generation": 1}
    sets = []
    per_gpu_devices: list[list[dict]] = []
    for g in range(8):
        counters = {f"memory-slice-{i}": {"value": "1"} for i in range(8)}
        counters["memory"] = {"value": "40Gi"}
        sets.append({"name": f"gpu-{g}", "counters": counters})
        base = {"productName": {"string": "NVIDIA A100-SXM4-40GB"}, "index": {"int": g}, "numaNode": {"int": g // 4}}

        def dev(name, typ, slices_, mem, groups, profile=None):
            used = {f"memory-slice-{i}": {"value": "1"} for i in slices_}
            used["memory"] = {"value": f"{mem}Gi"}
            cc = {"counterSet": f"gpu-{g}", "counters": used}
            if groups:
                cc["compatibilityGroups"] = groups
            attrs = {**base, "type": {"string": typ}, "uuid": {"string": f"{node}-{name}"}}
            if profile:
                attrs["profile"] = {"string": profile}
            return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": f"{mem}Gi"}}, "consumesCounters": [cc]}

        devices = [dev(f"gpu-{g}", "gpu", range(8), 40, None)]
        for profile, placements in MIG_PLACEMENTS.items():
            for start, size in placements:
                devices.append(dev(f"gpu-{g}-mig-{profile.replace('.', '')}-{start}", "mig", range(start, start + size),
                                   5 * size, ["mig"], profile))
        for profile, (gib, count) in VGPU.items():
            for k in range(count):
                devices.append(dev(f"gpu-{g}-vgpu-{profile.lower()}-{k}", "vgpu", [], gib, [f"vgpu-{profile.lower()}"], profile))
        per_gpu_devices.append(devices)
    sets.append({"name": "nic-0", "counters": {"bandwidth": {"value": "200G", "requestPolicy": {
        "default": "10G", "validRange": {"min": "100M", "max": "200G", "step": "100M"}}}}})
    vfs = [{"name": f"nic-0-vf-{k}", "attributes": {"type": {"string": "vf"}},
            "consumesCounters": [{"counterSet": "nic-0", "counters": {"bandwidth": {"valueFrom": {"capacityName": "bandwidth"}}}}]}
           for k in range(8)]
    chunks = [per_gpu_devices[i] + per_gpu_devices[i + 1] for i in range(0, 8, 2)] + [vfs]
    count = 1 + len(chunks)
    slices = [{"metadata": {"name": f"{node}-counters"}, "spec": {"driver": DRIVER, "pool": {**pool, "resourceSliceCount": count},
                                                                   "sharedCounters": sets}}]
    for i, chunk in enumerate(chunks):
        slices.append({"metadata": {"name": f"{node}-devices-{i}"}, "spec": {
            "driver": DRIVER, "pool": {**pool, "resourceSliceCount": count}, "nodeName": node, "devices": chunk}})
    return slices


MIX = [
    ("mig-1g", f"{attr('type')} == 'mig' && {attr('profile')} == '1g.5gb'", {}),
    ("mig-2g", f"{attr('type')} == 'mig' && {attr('profile')} == '2g.10gb'", {}),
    ("mig-3g", f"{attr('type')} == 'mig' && {attr('profile')} == '3g.20gb'", {}),
    ("vgpu-4c", f"{attr('type')} == 'vgpu' && {attr('profile')} == 'A100-4C'", {}),
    ("vgpu-8c", f"{attr('type')} == 'vgpu' && {attr('profile')} == 'A100-8C'", {}),
    ("full", f"{attr('type')} == 'gpu'", {}),
    ("vf-20g", f"{attr('type')} == 'vf'", {"capacity": {"requests": {"bandwidth": "20G"}}}),
    ("mig-1g", f"{attr('type')} == 'mig' && {attr('profile')} == '1g.5gb'", {}),
]


def bench_cluster(nodes: int, claims_per_node: int = 8) -> tuple[float, float, float, int, int]:
    template = synthetic_node("node-0")
    setup = time.perf_counter()
    allocators = []
    for n in range(nodes):
        name = f"node-{n}"
        slices = copy.deepcopy(template)
        for s in slices:
            s["metadata"]["name"] = s["metadata"]["name"].replace("node-0", name)
            s["spec"]["pool"]["name"] = name
            if "nodeName" in s["spec"]:
                s["spec"]["nodeName"] = name
        # The VFs draw bandwidth through valueFrom (KEP-5941), which needs its (non-1.37) gate on.
        allocators.append(Allocator(slices=slices, classes=[CLASS], node=name, features=Features.all_on()))
    setup = time.perf_counter() - setup
    total = nodes * claims_per_node
    placed = failed = 0
    cursor = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    for i in range(total):
        kind, selector, extra = MIX[i % len(MIX)]
        obj = claim(f"{kind}-{i}", selector, **extra)
        for step in range(nodes):
            node = (cursor + step) % nodes
            try:
                allocators[node].allocate([obj], explain=False)
            except AllocationError:
                continue
            placed += 1
            cursor = (node + 1) % nodes
            break
        else:
            failed += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return elapsed, cpu, setup, placed, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller cluster sizes (smoke run)")
    parser.add_argument("--cycle-only", action="store_true", help="only the scheduling-cycle figure")
    parser.add_argument("--cycle-input", type=Path, default=CYCLE_INPUT, help="scheduling-cycle input (multi-document YAML)")
    parser.add_argument("--cycle-runs", type=int, default=5, help="passes over the claims for the scheduling-cycle figure")
    args = parser.parse_args()
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at start "
          "(wall times include contention; cpu = this process)")
    bench_scheduling_cycle(args.cycle_input, max(1, args.cycle_runs))
    print()
    if args.cycle_only:
        return 0
    bench_single_node()
    print()
    sizes = [20, 50, 100] if args.quick else [100, 250, 500, 1000]
    print("cluster: nodes x 8 A100 (+8 VFs), 8 mixed claims per node (MIG 1g/2g/3g, vGPU 4C/8C, full GPU, VF 20G), first fit")
    print(f"  {'nodes':>6} {'claims':>7} {'placed':>7} {'failed':>6} {'wall s':>7} {'cpu s':>6} {'claims/s':>9} "
          f"{'claims/cpu-s':>12} {'setup s':>8}")
    for nodes in sizes:
        elapsed, cpu, setup, placed, failed = bench_cluster(nodes)
        total = placed + failed
        print(f"  {nodes:>6} {total:>7} {placed:>7} {failed:>6} {elapsed:>7.2f} {cpu:>6.2f} {total / elapsed:>9.0f} "
              f"{total / cpu:>12.0f} {setup:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
