#!/usr/bin/env python3
"""Benchmark: API requests and wall time to publish and re-sync an 8-GPU MIG+vGPU node with 4 NICs x 16 VFs.

Runs the real reconcile through the kubernetes client against the kube-apiserver STAND-IN from
tests/publish/standin.py (a local HTTP server, not a real apiserver: latencies are loopback +
Python JSON, so compare request counts more than milliseconds). Also runs the local object store.

Usage: .venv/bin/python hack/bench_publish.py [--gpus 8 --nics 4 --vfs 16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from driver.features import Features  # noqa: E402
from driver.kube.slices import kube_backend  # noqa: E402
from driver.publish import Publisher, make_detector, reconcile, store_backend  # noqa: E402
from driver.store.objectstore import ObjectStore  # noqa: E402
from publish.pools import DRIVER, NODE, inventory, render, with_vf_interface  # noqa: E402
from publish.standin import StandInServer  # noqa: E402


def phase(name, server, backend, fn):
    before_req = len(server.state.requests) if server else backend.requests
    t0 = time.perf_counter()  # desired pools are rendered before timing: this measures publishing
    stats = fn()
    ms = (time.perf_counter() - t0) * 1000
    reqs = (len(server.state.requests) if server else backend.requests) - before_req
    writes = stats.writes if stats is not None else "-"
    print(f"  {name:<44} requests={reqs:<4} writes={writes:<4} wall={ms:8.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--nics", type=int, default=4)
    ap.add_argument("--vfs", type=int, default=16)
    a = ap.parse_args()
    inv = inventory(gpus=a.gpus, nics=a.nics, vfs=a.vfs, vgpu=True)
    pool = render(inv)
    print(f"node: {a.gpus} GPUs (A100-40GB, MIG+vGPU), {a.nics} NICs x {a.vfs} VFs -> "
          f"{len(pool.devices())} devices, {len(pool.counter_sets())} counter sets, {len(pool.slices)} slices")

    with StandInServer() as server:
        server.state.add_node(NODE)
        api = kube_backend(host=server.url)
        uid = api.node_uid(NODE)
        run = lambda p: reconcile(api, p, node_name=NODE, driver_name=DRIVER, owner_uid=uid)  # noqa: E731
        print("API server (stand-in over HTTP, kubernetes client, raw JSON):")
        phase("first publish", server, api, lambda: run(pool))
        again = render(inv)
        phase("re-sync, nothing changed", server, api, lambda: run(again))
        changed = with_vf_interface(inv, 0, 0, "renamed0")
        changed_pool = render(changed)
        phase("re-sync, one VF changed", server, api, lambda: run(changed_pool))
        victim = sorted(server.state.slices)[2]
        del server.state.slices[victim]
        phase("re-sync, one slice deleted externally", server, api, lambda: run(changed_pool))
        off_pool = render(changed, Features(compatibility_groups=False))
        phase("re-sync, groups gate off (re-render)", server, api, lambda: run(off_pool))
        det = make_detector(api, node_name=NODE, driver_name=DRIVER, scheduler_metrics_url=server.url + "/metrics")
        pub = Publisher(api, lambda f: render(changed, f), det, 30, node_name=NODE, driver_name=DRIVER)
        phase("Publisher pass: detect + render + flip on", server, api, lambda: pub.run_once().stats)
        det.note_write_failure()  # forces detection on the next pass, as the periodic timer would
        phase("Publisher steady pass: detect + render", server, api, lambda: pub.run_once().stats)

    with tempfile.TemporaryDirectory() as tmp:
        local = store_backend(ObjectStore(tmp))
        run = lambda p: reconcile(local, p, node_name=NODE, driver_name=DRIVER)  # noqa: E731
        print("local object store (YAML files):")
        phase("first publish", None, local, lambda: run(pool))
        phase("re-sync, nothing changed", None, local, lambda: run(again))
        phase("re-sync, one VF changed", None, local, lambda: run(changed_pool))
    return 0


if __name__ == "__main__":
    sys.exit(main())
