#!/usr/bin/env python3
"""Benchmark the local store at fleet scale (issue 25) and print the figures beside their floors.

Every figure is a whole `fake-dra` command in a child process, measured by the kernel (os.wait4):
CPU seconds (user + system) and peak RSS. Wall time on a shared machine moves with its load, so it
is printed but not judged; the load average is printed with each figure.

1. Floor: a JSON round trip (json.dumps + json.loads) of one DGX-A100 node's slices, in this
   process. Target: `fleet apply` CPU per node <= 2.5x that floor.
2. `fleet apply` of N DGX-A100 nodes into an empty store; again with nothing changed (0 writes);
   shrunk by 10%; grown back; deleted. Target: each at most 300 MB of peak RSS.
3. One-object commands in the N-node store against the same commands in a 1-node store
   (`get node`, `get -o yaml` of a claim, `describe node`, `describe resourceclaim`,
   `get resourceslices -o name` of one node's slices by label): target <= 1.5x.
4. `apply -f` of many small objects (ResourceClaims) in one file: objects/s (target >= 1,000).

Usage: .venv/bin/python hack/bench_store.py [--nodes 5000] [--objects 2500] [--keep DIR]
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

FAKE_DRA = [sys.executable, "-m", "driver"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_measured(args: list[str], env: dict[str, str], stdin: str | None = None) -> dict[str, float | str]:
    """Run `fake-dra ARGS`: its CPU seconds and peak RSS (its own, read by wait4), wall seconds, stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen([*FAKE_DRA, *args], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"fake-dra {' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024, "wall": wall,
            "out": out.decode()}


def fleet_file(path: Path, nodes: int) -> Path:
    path.write_text(json.dumps({"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet",
                                "metadata": {"name": "bench"},
                                "spec": {"nodeGroups": [{"name": "a100", "count": nodes, "profile": "dgx-a100"}]}}))
    return path


def json_floor(store: Path) -> float:
    """CPU seconds of dumps + loads of one node's slices (the first node's, read back from the store)."""
    from driver.store import ObjectStore

    slices = ObjectStore(store).find("resourceslices", "node", "a100-0000")
    assert slices, "no slices for a100-0000"
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(20):
            json.loads(json.dumps(slices, separators=(",", ":")))
        best = min(best, (time.process_time() - started) / 20)
    return best


def show(label: str, m: dict[str, float | str], extra: str = "") -> None:
    print(f"{label:<44} cpu {m['cpu']:8.2f} s  rss {m['rss_mb']:7.0f} MB  wall {m['wall']:8.2f} s  "
          f"load {load()}{extra}", flush=True)


def claims_file(path: Path, count: int) -> Path:
    docs = []
    for i in range(count):
        docs.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                "metadata": {"name": f"claim-{i:05d}", "namespace": "default"},
                                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                                    "deviceClassName": "gpu.fake-dra.example.com"}}]}}}))
    path.write_text("\n---\n".join(docs) + "\n")
    return path


def one_object_commands(store: Path, env: dict[str, str]) -> dict[str, dict[str, float | str]]:
    s = ["--store", str(store)]
    out = {}
    for label, args in (("get node", ["get", "node", "a100-0000", *s]),
                        ("get claim -o yaml", ["get", "resourceclaim", "claim-00000", "-o", "yaml", *s]),
                        ("describe node", ["describe", "node", "a100-0000", *s]),
                        ("describe resourceclaim", ["describe", "resourceclaim", "claim-00000", *s]),
                        ("get nodes -l (one node) -o name", ["get", "nodes", "-l", "kubernetes.io/hostname=a100-0000",
                                                             "-o", "name", *s])):
        out[label] = run_measured(args, env)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--objects", type=int, default=2500)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="fdra-bench-store-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(work / "state")}
    print(f"bench_store: {args.nodes} DGX-A100 nodes, {os.cpu_count()} CPUs, load {load()}", flush=True)
    try:
        small, big = work / "small", work / "big"
        fleet_small = fleet_file(work / "small.json", 1)
        fleet_big = fleet_file(work / "big.json", args.nodes)
        for store, path in ((small, fleet_small), (big, fleet_big)):
            m = run_measured(["fleet", "apply", "-f", str(path), "--store", str(store), "-o", "json"], env)
            n = json.loads(str(m["out"]))["nodes"]
            if store is big:
                floor = json_floor(big)
                per_node = float(m["cpu"]) / n
                show(f"fleet apply {n} nodes", m, f"  {per_node * 1000:.1f} ms/node = {per_node / floor:.2f}x "
                                                  f"the JSON round trip ({floor * 1000:.1f} ms)")
        m = run_measured(["fleet", "apply", "-f", str(fleet_big), "--store", str(big), "-o", "json"], env)
        show("fleet apply again (unchanged)", m, f"  writes {json.loads(str(m['out']))['writes']}")
        shrunk = fleet_file(work / "shrunk.json", args.nodes - args.nodes // 10)
        show("fleet apply shrunk by 10%", run_measured(["fleet", "apply", "-f", str(shrunk), "--store", str(big)], env))
        show("fleet apply grown back", run_measured(["fleet", "apply", "-f", str(fleet_big), "--store", str(big)], env))
        for store in (small, big):
            run_measured(["apply", "-f", str(claims_file(work / "claims.yaml", 1)), "--store", str(store)], env)
        ones = {store: one_object_commands(store, env) for store in (small, big)}
        for label in ones[small]:
            a, b = ones[small][label], ones[big][label]
            show(f"{label} ({args.nodes} nodes)", b, f"  {float(b['cpu']) / float(a['cpu']):.2f}x the 1-node store "
                                                     f"({float(a['cpu']):.2f} s)")
        claims = claims_file(work / "many.yaml", args.objects)
        m = run_measured(["apply", "-f", str(claims), "--store", str(work / "claims-store")], env)
        show(f"apply {args.objects} claims in one file", m, f"  {args.objects / float(m['wall']):.0f} objects/s wall")
        show(f"fleet delete {args.nodes} nodes", run_measured(["fleet", "delete", "-f", str(fleet_big), "--store",
                                                               str(big)], env))
        print(f"store on disk after delete: {sum(f.stat().st_size for f in big.iterdir() if f.is_file()) / 1e6:.0f} MB")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
