#!/usr/bin/env python3
"""Benchmark fleets (issue 20) and print the figures, each with the machine's load.

1. `fake-dra fleet apply` of N `dgx-a100` nodes at full fidelity into an empty local store, in a new
   process (what a user waits for: imports, gate detection, one template, N stamps, Nodes and
   slices written). Target at N = 1,000: at most 30 s. Also: bytes of slice JSON per node (the
   dry run's figure) and on disk.
2. The same apply again with nothing changed: at most 5 s and zero writes (the store's
   resourceVersion must not move).
3. `fake-dra schedule` of P pods, each with one claim from a template asking for a 1g.5gb MIG
   device, onto those N nodes (the pods are written to the store first, not timed). Target at
   P = 10,000, N = 1,000: at least 100 pods/s. With --scaling, also P/10 pods on N/10 nodes, to show
   the rate does not fall as both grow (kube-scheduler's scheduler_perf anchor: ~250-270 pods/s at
   500 nodes on 6 CPUs, CI floor 64; kwok creates ~20 nodes or pods per second).

Usage: .venv/bin/python hack/bench_fleet.py [--nodes 1000] [--pods 10000] [--scaling] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from driver.store import ObjectStore  # noqa: E402

FAKE_DRA = [sys.executable, "-m", "driver"]
PROFILE = "1g.5gb"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def fleet_file(path: Path, nodes: int) -> Path:
    path.write_text(json.dumps({"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet",
                                "metadata": {"name": "bench"},
                                "spec": {"nodeGroups": [{"name": "a100", "count": nodes, "profile": "dgx-a100"}]}}))
    return path


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([*FAKE_DRA, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"fake-dra {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, done.stdout


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.yaml"))


def write_pods(store: ObjectStore, pods: int) -> None:
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "mig-1g", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "mig.fake-dra.example.com",
                    "selectors": [{"cel": {"expression": f'device.attributes["fake-dra.example.com"].profile == "{PROFILE}"'}}]}}]}}}}
    store.create("resourceclaimtemplates", template)
    with store.batch():
        for i in range(pods):
            store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"job-{i:05d}", "namespace": "default"},
                                  "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                                           "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
                                           "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "mig-1g"}]}})


def fleet(work: Path, nodes: int, env: dict[str, str]) -> Path:
    store = work / f"store-{nodes}"
    path = fleet_file(work / f"fleet-{nodes}.json", nodes)
    env = {**env, "FAKE_DRA_STORE": str(store)}
    _, dry = run(["fleet", "apply", "-f", str(path), "--dry-run", "-o", "json"], env)
    sizes = json.loads(dry)
    print(f"load before apply: {load()}")
    seconds, out = run(["fleet", "apply", "-f", str(path), "-o", "json"], env)
    stats = json.loads(out)
    print(f"fleet apply, {nodes} dgx-a100 nodes (full fidelity): {seconds:.1f} s wall ({nodes / seconds:.0f} nodes/s), "
          f"{stats['writes']} writes, {stats['slices']} slices, {stats['devices']} devices; load after: {load()}")
    print(f"  slice JSON per node: {sizes['total']['bytes'] / nodes:,.0f} bytes (as sent to an API server); "
          f"on disk {disk_bytes(store / 'resourceslices' / '_cluster') / nodes:,.0f} bytes per node")
    before = ObjectStore(store).current_resource_version()
    seconds, out = run(["fleet", "apply", "-f", str(path), "-o", "json"], env)
    again = json.loads(out)
    moved = ObjectStore(store).current_resource_version() != before
    print(f"fleet re-apply, nothing changed: {seconds:.1f} s wall, {again['writes']} writes "
          f"(store resourceVersion {'MOVED' if moved else 'unchanged'}); load after: {load()}")
    return store


def schedule(store: Path, pods: int, env: dict[str, str]) -> None:
    write_pods(ObjectStore(store), pods)
    print(f"load before schedule: {load()}")
    seconds, out = run(["schedule", "--store", str(store)], env)
    summary = out.splitlines()[0]
    print(f"schedule, {pods} one-{PROFILE} pods: {seconds:.1f} s wall incl. start-up ({pods / seconds:.0f} pods/s); "
          f"the command: {summary}; load after: {load()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--scaling", action="store_true", help="also P/10 pods on N/10 nodes")
    parser.add_argument("--keep", default=None, help="work in this directory and keep it")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_") and k not in ("KUBECONFIG",)}
    print(f"machine: {os.cpu_count()} CPUs; load average {load()}; Python {sys.version.split()[0]}")
    try:
        sizes = [(args.nodes // 10, args.pods // 10)] if args.scaling else []
        for nodes, pods in [*sizes, (args.nodes, args.pods)]:
            print(f"--- {nodes} nodes, {pods} pods")
            schedule(fleet(work, nodes, env), pods, env)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
