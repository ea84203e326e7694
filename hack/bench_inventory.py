#!/usr/bin/env python3
"""Benchmark: discovery + slice rendering time for the largest fake sysfs profile (target < 200 ms).

Usage: .venv/bin/python hack/bench_inventory.py [--profile NAME] [--runs N]
Prints per-phase median / max over N runs; exits 1 if the median total exceeds the target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver.discovery import PROFILES, discover, make_sysfs  # noqa: E402
from driver.features import Features  # noqa: E402
from driver.hardware import load_catalog  # noqa: E402
from driver.slices import render_pool, to_resource_slices  # noqa: E402

TARGET_MS = 200.0


def largest_profile(tmp: Path) -> str:
    """The profile whose rendered pool has the most devices."""
    catalog, sizes = load_catalog(None), {}
    for name in PROFILES:
        make_sysfs(name, tmp / name)
        pool = render_pool(discover(tmp / name, catalog), Features(), node_name="bench", driver_name="fake-dra.example.com")
        sizes[name] = len(pool.devices())
    return max(sorted(sizes), key=sizes.__getitem__)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), help="default: the largest profile")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        profile = args.profile or largest_profile(tmp)
        root = tmp / profile
        if not root.exists():
            make_sysfs(profile, root)
        catalog_ms, discover_ms, render_ms, total_ms = [], [], [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            catalog = load_catalog(None)
            t1 = time.perf_counter()
            inventory = discover(root, catalog)
            t2 = time.perf_counter()
            pool = render_pool(inventory, Features(), node_name="bench", driver_name="fake-dra.example.com")
            objects = to_resource_slices(pool)
            t3 = time.perf_counter()
            catalog_ms.append((t1 - t0) * 1e3)
            discover_ms.append((t2 - t1) * 1e3)
            render_ms.append((t3 - t2) * 1e3)
            total_ms.append((t3 - t0) * 1e3)
    print(f"profile {profile}: {len(inventory.gpus)} GPUs, {len(inventory.nics)} NIC PFs -> "
          f"{len(pool.devices())} devices, {len(pool.counter_sets())} counter sets, {len(objects)} slices")
    for label, values in (("load_catalog", catalog_ms), ("discover", discover_ms), ("render", render_ms),
                          ("total", total_ms)):
        print(f"  {label:<13} median {statistics.median(values):7.2f} ms   max {max(values):7.2f} ms   ({args.runs} runs)")
    median = statistics.median(total_ms)
    verdict = "OK" if median < TARGET_MS else "OVER TARGET"
    print(f"target < {TARGET_MS:.0f} ms (discovery + render): {verdict}")
    return 0 if median < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
