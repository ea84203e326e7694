#!/usr/bin/env python3
"""Benchmark the local control plane (issue 26): "a settle of 1,000 pods on 100 nodes takes seconds".

Everything goes through the documented commands, each in its own process, as a user runs them:
1. `fake-dra fleet apply` of N `dgx-a100` nodes into an empty temporary store (not timed here:
   hack/bench_fleet.py measures it);
2. `fake-dra apply` of a ResourceClaimTemplate (one 1g.5gb MIG device) and D Deployments whose
   replicas total P, each pod with one claim from that template (not timed);
3. `fake-dra cluster --until-settled`, timed: wall clock, CPU (user + system of that process),
   its peak RSS, and the writes per controller from the summary line it prints. Settled means
   P pods Running on the fleet with P claims allocated and reserved;
4. every Deployment scaled down to a tenth, then settled again (timed the same way);
5. every Deployment deleted (background cascade), then settled again: no pod, no claim is left.
After each settle the script counts pods and claims in the store and says so if a count is not
what the settle promises (it prints figures; it asserts no time).

Usage: .venv/bin/python hack/bench_cluster.py [--nodes 100] [--pods 1000] [--deployments 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
TOLERATE_KWOK = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
SUMMARY = re.compile(r"settled after (\d+) passes in ([\d.]+) s: (\d+) writes \((.*)\)")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(args: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run([*FAKE_DRA, *args], capture_output=True, text=True, env=env, cwd=ROOT, input=stdin)
    if done.returncode != 0:
        raise SystemExit(f"fake-dra {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def timed_settle(store: Path, env: dict[str, str]) -> dict[str, object]:
    """`fake-dra cluster --until-settled` in a child process: wall, CPU and peak RSS of that child."""
    out, err = store.parent / "settle.out", store.parent / "settle.err"
    started = time.perf_counter()
    # --timeout is generous: the figure is the point, and a settle that never comes must still end.
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen([*FAKE_DRA, "cluster", "--until-settled", "--timeout", "1800", "--store", str(store)],
                                 stdout=stdout, stderr=stderr, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own CPU and peak RSS
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"fake-dra cluster failed ({child.returncode}): {err.read_text()[-2000:]}")
    stdout_text = out.read_text()
    line = stdout_text.strip().splitlines()[-1]
    found = SUMMARY.search(line)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024, "line": line,
            "passes": int(found.group(1)) if found else None,
            "writes": dict(w.rsplit(" ", 1) for w in found.group(4).split(", ")) if found and found.group(4) != "none"
            else {}}


def deployments(count: int, replicas: list[int]) -> str:
    docs = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": "mig-1g", "namespace": "default"},
             "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "mig.fake-dra.example.com",
                 "selectors": [{"cel": {"expression":
                                        f'device.attributes["fake-dra.example.com"].profile == "{PROFILE}"'}}]}}]}}}}]
    for i in range(count):
        labels = {"app": f"bench-{i:02d}"}
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"bench-{i:02d}", "namespace": "default"},
                     "spec": {"replicas": replicas[i], "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels}, "spec": {
                                  "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                                  "tolerations": TOLERATE_KWOK,
                                  "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "mig-1g"}]}}}})
    return "\n---\n".join(json.dumps(d) for d in docs)


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def census(store_dir: Path) -> dict[str, int]:
    store = ObjectStore(store_dir)
    pods = store.list("pods", all_namespaces=True)
    claims = store.list("resourceclaims", all_namespaces=True)
    return {"pods": len(pods),
            "running": sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running"),
            "claims": len(claims),
            "allocated": sum(1 for c in claims if (c.get("status") or {}).get("allocation")),
            "reserved": sum(1 for c in claims if (c.get("status") or {}).get("reservedFor"))}


def report(title: str, figures: dict[str, object], counts: dict[str, int], want_pods: int) -> None:
    writes = ", ".join(f"{k} {v}" for k, v in sorted(figures["writes"].items())) or "none"  # type: ignore[union-attr]
    print(f"{title}: {figures['wall']:.1f} s wall, {figures['cpu']:.1f} s CPU, peak RSS {figures['rss_mib']:.0f} MiB, "
          f"{figures['passes']} passes; writes: {writes}; load {load()}")
    print(f"  store after: {counts['pods']} pods ({counts['running']} Running), {counts['claims']} claims "
          f"({counts['allocated']} allocated, {counts['reserved']} reserved)")
    wrong = [k for k in ("pods", "running", "claims", "allocated", "reserved") if counts[k] != want_pods]
    if wrong:
        print(f"  NOT what the settle promises: expected {want_pods} of each, got " +
              ", ".join(f"{k} {counts[k]}" for k in wrong))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--deployments", type=int, default=10)
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="fdra-bench-cluster-"))
    work.mkdir(parents=True, exist_ok=True)
    store = work / "store"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_")}
    env["XDG_STATE_HOME"] = str(work / "state")
    try:
        print(f"fake-dra cluster: {args.pods} pods in {args.deployments} Deployments on {args.nodes} dgx-a100 nodes "
              f"(cpus {os.cpu_count()}, load {load()} at start)")
        fleet = {"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet", "metadata": {"name": "bench"},
                 "spec": {"nodeGroups": [{"name": "a100", "count": args.nodes, "profile": "dgx-a100"}]}}
        run(["fleet", "apply", "-f", "-", "--store", str(store)], env, json.dumps(fleet))
        run(["apply", "-f", "-", "--store", str(store)], env, deployments(args.deployments, split(args.pods, args.deployments)))

        up = timed_settle(store, env)
        report(f"settle {args.pods} new pods", up, census(store), args.pods)

        down = max(args.deployments, args.pods // 10)
        run(["apply", "-f", "-", "--store", str(store)], env, deployments(args.deployments, split(down, args.deployments)))
        scaled = timed_settle(store, env)
        report(f"scale down to {down} pods", scaled, census(store), down)

        run(["delete", "deployments", "--all", "--store", str(store)], env)
        gone = timed_settle(store, env)
        report("delete every Deployment", gone, census(store), 0)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
