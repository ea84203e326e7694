#!/usr/bin/env python3
"""Run kube-scheduler's own DRA benchmark workloads through the local store and `fake-dra schedule`.

The workloads are kubernetes/kubernetes' test/integration/scheduler_perf/dra configs and
templates, read from ../shared/upstream/scheduler_perf/ (found upward from this repository, or
$FAKE_DRA_SCHEDULER_PERF, or --upstream); hack/scheduler_perf.py sets each one up in a fresh local
store as scheduler_perf sets it up in its apiserver. Then:

1. pods created without `collectMetrics` (the init pods) are scheduled by one `fake-dra schedule`,
   not measured (scheduler_perf waits for them before it measures);
2. the measured pods are created and one `fake-dra schedule` (a new process) schedules them all.
   A steady-state workload (scheduler_perf keeps `count` pods in flight for `duration`, deleting
   each batch once scheduled) is run as one burst of --steady-pods pods, at most as many as the
   free devices hold, so the cluster stays at the utilisation the workload names;
3. printed per workload: nodes, pods measured and bound, the command's own seconds (reading the
   store and scheduling, without interpreter start-up: upstream measures a warm scheduler) and
   pods/s, the child's CPU seconds, its peak RSS, double-booked devices (0 expected), and the CI
   threshold in pods/s with whether it is met. The load average is printed with each line:
   thresholds are for kube-scheduler on a CI machine of 4-7 cores (README.md), this is a shared
   2-core VM.

Default: every workload with a threshold, plus Partitionable/2000pods_100nodes (no threshold;
issue 25 measured 7.6 pods/s). --all: every workload but the integration-test ones; --only
NAME (Case/workload, fnmatch patterns) any; --list shows them.

Usage: .venv/bin/python hack/bench_scheduler_perf.py [--only PATTERN ...] [--all] [--list]
           [--steady-pods 1000] [--keep DIR] [--upstream DIR]
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HACK = Path(__file__).resolve().parent
ROOT = HACK.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HACK))

import scheduler_perf as sp  # noqa: E402

from driver.store import ObjectStore  # noqa: E402

EXTRA = ("Partitionable/2000pods_100nodes",)
_SUMMARY = re.compile(r"scheduled (\d+) of (\d+) pending pods on (\d+) nodes in ([\d.]+) s")


@dataclass
class Result:
    workload: str
    nodes: int
    measured: int  # pods created for measurement
    bound: int  # of those, bound
    seconds: float  # the schedule command's own time
    cpu: float  # CPU seconds of the schedule process (or of this process, in-process)
    rss_mb: float
    double_booked: int
    threshold: float | None
    note: str = ""

    @property
    def rate(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def double_booked(store: ObjectStore) -> int:
    """Devices held exclusively by more than one claim."""
    held: Counter[tuple[str, str, str]] = Counter()
    for claim in store.iter("resourceclaims", all_namespaces=True):
        results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
        for r in results:
            if not r.get("adminAccess") and not r.get("shareID"):
                held[(r["driver"], r["pool"], r["device"])] += 1
    return sum(1 for n in held.values() if n > 1)


def bound_in(store: ObjectStore, namespaces: set[str]) -> int:
    return sum(1 for ns in namespaces for p in store.iter("pods", ns) if (p.get("spec") or {}).get("nodeName"))


def schedule(store: ObjectStore, workload: sp.Workload, in_process: bool) -> tuple[float, float, float]:
    """One `fake-dra schedule` run: (its own seconds, CPU seconds, peak RSS in MB)."""
    features = sp.features_for(workload)
    if in_process:
        from driver.schedule import Scheduler

        started = time.process_time()
        report = Scheduler(store, features=features).run()
        return report.seconds, time.process_time() - started, 0.0
    gates = ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(workload.gates.items()) if k in sp.KNOWN_GATES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_") and k != "KUBECONFIG"}
    code, out, err, cpu, rss = run_child([sys.executable, "-m", "driver", "schedule", "--store", str(store.root),
                                          *(["--features", gates] if gates else [])], env)
    if code != 0:
        raise SystemExit(f"{workload.label}: fake-dra schedule failed ({code}): {err[-2000:]}")
    match = _SUMMARY.search(out)
    seconds = float(match.group(4)) if match else 0.0
    return seconds, cpu, rss


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, CPU seconds, peak RSS in MB) of `cmd`, its own figures read with
    wait4: RUSAGE_CHILDREN's ru_maxrss is the largest child so far, not this one."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:  # files: no pipe to drain meanwhile
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def run(workload: sp.Workload, work: Path, *, steady_pods: int = 1000, in_process: bool = False) -> Result:
    store = ObjectStore(work / "store")
    setup = sp.set_up(store, workload)
    if not setup.measured:
        raise SystemExit(f"{workload.label}: no pods are measured")
    if setup.init_pods:
        schedule(store, workload, in_process)
    note = ""
    pods = None
    if setup.steady:
        pods = min(steady_pods, sp.free_for_pods(store, setup))
        note = f"steady state as one burst of {pods} pods"
    made = sp.create_measured(store, workload, setup, pods)
    seconds, cpu, rss = schedule(store, workload, in_process)
    namespaces = {ns for ns, _, _, _ in setup.measured}
    return Result(workload.label, len(setup.nodes), made, bound_in(store, namespaces), seconds, cpu, rss,
                  double_booked(store), workload.threshold, note)


def selected(workloads: list[sp.Workload], args: argparse.Namespace) -> list[sp.Workload]:
    if args.only:
        return [w for w in workloads if any(fnmatch.fnmatchcase(w.label, p) for p in args.only)]
    if args.all:
        return [w for w in workloads if "integration-test" not in w.labels]
    return [w for w in workloads if w.threshold is not None or w.label in EXTRA]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", default=None, help="the scheduler_perf directory (default: found upward)")
    parser.add_argument("--only", nargs="*", default=None, help="Case/workload patterns")
    parser.add_argument("--all", action="store_true", help="every workload but the integration-test ones")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--steady-pods", type=int, default=1000, help="pods of a steady-state workload's burst")
    parser.add_argument("--keep", default=None, help="work in this directory and keep the stores")
    args = parser.parse_args()
    upstream = Path(args.upstream) if args.upstream else sp.find_upstream(ROOT)
    if upstream is None or not upstream.is_dir():
        raise SystemExit("scheduler_perf files not found: pass --upstream DIR (../shared/upstream/scheduler_perf)")
    workloads = sp.load_workloads(upstream)
    if args.list:
        for w in workloads:
            why = sp.NOT_RUNNABLE.get(w.case)
            print(f"{w.label:60} threshold {w.threshold or '-':>5}  {','.join(w.labels) or '-'}"
                  + (f"  (not run: {why})" if why else ""))
        return 0
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-scheduler-perf-"))
    print(f"machine: {os.cpu_count()} CPUs; load average {load()}; Python {sys.version.split()[0]}; files: {upstream}")
    print(f"{'workload':58} {'nodes':>5} {'pods':>5} {'bound':>5} {'sched s':>7} {'pods/s':>7} {'CPU s':>6} "
          f"{'RSS MB':>6} {'2x':>3} {'floor':>6}  verdict  load")
    try:
        for w in selected(workloads, args):
            if w.case in sp.NOT_RUNNABLE:
                print(f"{w.label:58} not run: {sp.NOT_RUNNABLE[w.case]}")
                continue
            folder = work / w.label.replace("/", "-")
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            r = run(w, folder, steady_pods=args.steady_pods)
            verdict = "-" if r.threshold is None else ("met" if r.rate >= r.threshold else "MISSED")
            print(f"{r.workload:58} {r.nodes:>5} {r.measured:>5} {r.bound:>5} {r.seconds:>7.1f} {r.rate:>7.0f} "
                  f"{r.cpu:>6.1f} {r.rss_mb:>6.0f} {r.double_booked:>3} {r.threshold or '-':>6}  {verdict:7}  {load()}"
                  + (f"  ({r.note})" if r.note else ""), flush=True)
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
