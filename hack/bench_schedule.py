#!/usr/bin/env python3
"""Issue 25's `schedule` targets, measured side by side and printed with the load average.

Each figure comes from a new process running one `Scheduler.run()` over a copy of a fleet store
(its own CPU seconds from getrusage, its peak RSS from ru_maxrss), so runs never share caches:

1. Scale: pods with one 1g.5gb MIG claim each (from a template), `--per-node` (10) per node, on
   DGX-A100 fleets of `--small` (500) and `--large` (5,000) nodes. Printed: pods/s over the CPU
   seconds of the run (reading the store and scheduling) and over the scheduling alone, the
   large/small ratio (target >= 0.8: per-pod cost flat in the fleet size, as kube-scheduler's
   numFeasibleNodesToFind makes it), and the large run's peak RSS (target: 50,000 pods on 5,000
   nodes within 1.5 GB).
2. A distinct unschedulable pod: on the `--unschedulable-nodes` (1,000) fleet with `--per-node`
   pods bound per node, one pod asking for something no node has left (`--odd`: 17 3g.20gb MIG
   devices, or a profile no GPU has) is scheduled alone: the CPU milliseconds of its cycle
   (target <= 50 ms).
3. Pods sharing a claim against pods with their own: on the small fleet, the same number of pods
   in groups of five sharing one claim (scheduler_perf's SchedulingWithResourceClaim shape)
   against pods with a claim each from a template: CPU per pod of each (target: sharing costs no
   more).
4. Extended-resource pods (KEP-5004: a DeviceClass of 1g.5gb MIG devices with
   `extendedResourceName: example.com/mig-1g5gb`, asked for in a container's requests) against
   pods with a claim template of that class: CPU per pod.
kube-scheduler's own workloads (with their CI thresholds) are hack/bench_scheduler_perf.py's.

Fleets are made with `fake-dra fleet apply` in --work (kept and reused when it exists: a
5,000-node fleet takes the better part of an hour on a loaded 2-core VM).

Usage: .venv/bin/python hack/bench_schedule.py [--small 500] [--large 5000] [--per-node 10]
           [--unschedulable-nodes 1000] [--odd count|profile] [--work DIR] [--only scale,odd,shared,extended]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from driver.store import ObjectStore  # noqa: E402

DRIVER = "fake-dra.example.com"
TOLERATE_KWOK = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
ODD = {"count": ("3g.20gb", 17), "profile": ("9g.99gb", 1)}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def template(name: str, profile: str = "1g.5gb", count: int = 1) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": _claim_spec(profile, count)}}


def _claim_spec(profile: str, count: int = 1) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": f"mig.{DRIVER}", "count": count,
        "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].profile == "{profile}"'}}]}}]}}


def pod(name: str, *, template_name: str | None = None, claim: str | None = None,
        extended: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    spec: dict[str, Any] = {"containers": [container], "tolerations": TOLERATE_KWOK}
    if extended:
        container["resources"] = {"requests": {extended: "1"}, "limits": {extended: "1"}}
    else:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        entry = {"name": "gpu", "resourceClaimTemplateName": template_name} if template_name else \
            {"name": "gpu", "resourceClaimName": claim}
        spec["resourceClaims"] = [entry]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def fleet(work: Path, nodes: int) -> Path:
    """A DGX-A100 fleet store of `nodes` nodes (made once, kept in --work)."""
    store = work / f"fleet-{nodes}"
    if (store / "store.db").exists() and (work / f"fleet-{nodes}.done").exists():
        return store
    shutil.rmtree(store, ignore_errors=True)
    spec = work / f"fleet-{nodes}.json"
    spec.write_text(json.dumps({"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet", "metadata": {"name": "bench"},
                                "spec": {"nodeGroups": [{"name": "a100", "count": nodes, "profile": "dgx-a100"}]}}))
    print(f"making a {nodes}-node fleet in {store} (load {load()})", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_") and k != "KUBECONFIG"}
    done = subprocess.run([sys.executable, "-m", "driver", "fleet", "apply", "-f", str(spec), "--store", str(store)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"fleet apply failed: {done.stderr[-2000:]}")
    (work / f"fleet-{nodes}.done").write_text("")
    return store


def copy_of(base: Path, work: Path, name: str) -> ObjectStore:
    target = work / f"{name}-{os.getpid()}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    return ObjectStore(target)


def add(store: ObjectStore, objs: list[dict[str, Any]]) -> None:
    kinds = {"Pod": "pods", "ResourceClaimTemplate": "resourceclaimtemplates", "ResourceClaim": "resourceclaims",
             "DeviceClass": "deviceclasses"}
    with store.batch():
        for obj in objs:
            store.create(kinds[obj["kind"]], obj)


def measure(store: ObjectStore) -> dict[str, Any]:
    """One scheduling run in a new process: its figures as the child reports them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_") and k != "KUBECONFIG"}
    done = subprocess.run([sys.executable, __file__, "--child", str(store.root)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"scheduling run failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child(root: str) -> None:
    from driver.features import Features
    from driver.schedule import Scheduler

    report = Scheduler(ObjectStore(root), features=Features()).run()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    pending = report.pending
    print(json.dumps({"pods": len(report.outcomes), "scheduled": len(report.scheduled), "nodes": report.nodes,
                      "seconds": report.seconds, "cpu_load": report.cpu_load, "cpu_cycles": report.cpu_cycles,
                      "cpu_process": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                      "node_reads": report.node_reads, "attempts": report.attempts,
                      "reason": pending[0].reason if pending else None}))


def scale(work: Path, args: argparse.Namespace) -> None:
    rates = {}
    for nodes in (args.small, args.large):
        store = copy_of(fleet(work, nodes), work, "run")
        pods = nodes * args.per_node
        add(store, [template("mig-1g")] + [pod(f"p-{i:06d}", template_name="mig-1g") for i in range(pods)])
        r = measure(store)
        cpu = r["cpu_load"] + r["cpu_cycles"]
        rates[nodes] = r["scheduled"] / cpu
        print(f"scale: {nodes} nodes, {pods} one-1g.5gb pods: scheduled {r['scheduled']}; CPU {cpu:.1f} s "
              f"(reading {r['cpu_load']:.1f} s, scheduling {r['cpu_cycles']:.1f} s) = {rates[nodes]:.0f} pods/CPU-s, "
              f"{r['scheduled'] / r['cpu_cycles']:.0f} scheduling alone; wall {r['seconds']:.0f} s; peak RSS "
              f"{r['rss_mb']:.0f} MB; {r['node_reads']} node reads, {r['attempts']} allocator runs; load {load()}", flush=True)
        shutil.rmtree(store.root, ignore_errors=True)
    print(f"scale: pods/s at {args.large} nodes = {rates[args.large] / rates[args.small]:.2f} x pods/s at "
          f"{args.small} (target >= 0.8)", flush=True)


def odd(work: Path, args: argparse.Namespace) -> None:
    nodes = args.unschedulable_nodes
    store = copy_of(fleet(work, nodes), work, "run")
    add(store, [template("mig-1g")] + [pod(f"p-{i:06d}", template_name="mig-1g") for i in range(nodes * args.per_node)])
    first = measure(store)
    profile, count = ODD[args.odd]
    add(store, [template("odd", profile, count), pod("odd", template_name="odd")])
    r = measure(store)
    print(f"unschedulable: {nodes} nodes with {first['scheduled']} pods bound; a pod asking {count} x {profile}: "
          f"{r['cpu_cycles'] * 1000:.0f} ms CPU for its cycle (target <= 50 ms; reading the store "
          f"{r['cpu_load']:.1f} s); {r['node_reads']} node reads; load {load()}", flush=True)
    print(f"  reason: {(r['reason'] or '')[:300]}")
    shutil.rmtree(store.root, ignore_errors=True)


def per_pod(work: Path, nodes: int, objs: list[dict[str, Any]]) -> dict[str, Any]:
    store = copy_of(fleet(work, nodes), work, "run")
    add(store, objs)
    r = measure(store)
    shutil.rmtree(store.root, ignore_errors=True)
    return r


def shared(work: Path, args: argparse.Namespace) -> None:
    pods = args.small * args.per_node
    own = per_pod(work, args.small, [template("mig-1g")] + [pod(f"p-{i:06d}", template_name="mig-1g") for i in range(pods)])
    claims = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": f"shared-{i:05d}", "namespace": "default"}, "spec": _claim_spec("1g.5gb")}
              for i in range(pods // 5)]
    together = per_pod(work, args.small, claims + [pod(f"p-{i:06d}", claim=f"shared-{i // 5:05d}") for i in range(pods)])
    a, b = own["cpu_cycles"] / own["scheduled"], together["cpu_cycles"] / together["scheduled"]
    print(f"shared claims: {pods} pods on {args.small} nodes: own claim {a * 1000:.2f} ms CPU per pod, five pods "
          f"sharing one {b * 1000:.2f} ms ({b / a:.2f} x; target <= 1); load {load()}", flush=True)


def extended(work: Path, args: argparse.Namespace) -> None:
    """The same devices both ways: a DeviceClass of 1g.5gb MIG devices that also serves the extended
    resource example.com/mig-1g5gb, asked for by a claim template or by a container's requests."""
    pods = args.small * args.per_node
    mig = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "mig"'  # as mig.fake-dra's class
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "mig-1g5gb.bench"},
           "spec": {"selectors": [{"cel": {"expression": mig}},
                                  {"cel": {"expression": f'device.attributes["{DRIVER}"].profile == "1g.5gb"'}}],
                    "extendedResourceName": "example.com/mig-1g5gb"}}
    claim_template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                      "metadata": {"name": "mig-1g", "namespace": "default"},
                      "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                          "deviceClassName": "mig-1g5gb.bench"}}]}}}}
    own = per_pod(work, args.small, [cls, claim_template] + [pod(f"p-{i:06d}", template_name="mig-1g") for i in range(pods)])
    ext = per_pod(work, args.small, [cls] + [pod(f"p-{i:06d}", extended="example.com/mig-1g5gb") for i in range(pods)])
    a, b = own["cpu_cycles"] / own["scheduled"], ext["cpu_cycles"] / ext["scheduled"]
    print(f"extended resources: {pods} pods on {args.small} nodes, one 1g.5gb device each: from a claim template "
          f"{a * 1000:.2f} ms CPU per pod ({own['scheduled']} scheduled), as an extended resource {b * 1000:.2f} ms "
          f"({ext['scheduled']} scheduled; {b / a:.2f} x); load {load()}", flush=True)


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=10)
    parser.add_argument("--unschedulable-nodes", type=int, default=1000)
    parser.add_argument("--odd", choices=sorted(ODD), default="count")
    parser.add_argument("--work", default=None, help="keep fleets here and reuse them")
    parser.add_argument("--only", default="scale,odd,shared,extended")
    args = parser.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-schedule-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs; load average {load()}; Python {sys.version.split()[0]}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    try:
        for part in args.only.split(","):
            {"scale": scale, "odd": odd, "shared": shared, "extended": extended}[part](work, args)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
