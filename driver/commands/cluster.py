"""`fake-dra cluster`: run the local control plane over the store — controllers, kubelets as kwok, and the scheduler.

    fake-dra cluster                         run until interrupted, following the store's watch
    fake-dra cluster --until-settled         run until a pass changes nothing, then exit 0
    fake-dra cluster --until-settled --timeout 60   ... or exit 1 after 60 s, saying what is left

What runs (docs/control-plane.md has each rule and its upstream source): the garbage collector,
the resourceclaim controller, pod GC, the Deployment, ReplicaSet and Job controllers, kwok's pod
stages for fleet nodes (a node agent's prepare for the Node `fake-dra run` registers), and
kube-scheduler's cycle (`fake-dra schedule`) whenever pods, claims, nodes or slices changed.
`fake-dra schedule` stays the one-shot scheduler; both may run at once, with `apply` beside them:
every write is checked against what is stored.
Exit 0 when settled or interrupted; 1 at --timeout; 2 for bad input.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from driver.commands import _store, common
from driver.errors import FakeDraError, InputError

log = logging.getLogger("fake-dra.cluster")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cluster", help="run the local control plane: garbage collector, resourceclaim, pod GC, Deployment, "
                        "ReplicaSet, Job controllers, kwok's pod stages and the scheduler",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--until-settled", action="store_true",
                        help="exit 0 once a pass changes nothing (nothing queued, nothing delayed)")
    common.add_flag(parser, "--timeout", None, "with --until-settled: give up after this many seconds (exit 1)")
    common.add_flag(parser, "--terminated-pod-gc-threshold", "12500",
                    "kube-controller-manager's threshold: terminated pods beyond it are deleted, oldest first")
    parser.add_argument("--no-scheduler", action="store_true", help="run the controllers only (another process schedules)")
    from driver.schedule import POLICIES

    parser.add_argument("--policy", choices=POLICIES, default="first", help="the scheduler's node choice (see schedule)")
    common.add_features(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _threshold(value: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InputError(f"--terminated-pod-gc-threshold: expected a whole number, got {value!r}") from None
    if number < 0:
        raise InputError(f"--terminated-pod-gc-threshold: must be 0 or more, got {number}")
    return number


def scheduler_cycle(store, features, policy: str):
    """kube-scheduler's cycle as the runner calls it: schedule the pending pods, if any; how
    many objects it wrote."""
    from driver.schedule import Scheduler
    from driver.schedule.scheduler import is_pending

    def cycle() -> int:
        if not any(is_pending(p) for p in store.iter("pods", all_namespaces=True)):
            return 0
        report = Scheduler(store, features=features, policy=policy).run()
        return report.writes
    return cycle


def run(args: argparse.Namespace) -> int:
    from driver.commands.apply import _features
    from driver.commands._node_agents import PluginAgents
    from driver.controllers import Runner, default_controllers

    threshold = _threshold(args.terminated_pod_gc_threshold)
    timeout = common.positive_seconds(args.timeout, "--timeout") if args.timeout is not None else None
    if timeout is not None and not args.until_settled:
        raise InputError("--timeout goes with --until-settled")
    store = _store.open_store(args, write=True)
    features = _features(args, store.root)
    controllers = default_controllers(terminated_pod_threshold=threshold, agents=PluginAgents(), features=features)
    scheduler = None if args.no_scheduler else scheduler_cycle(store, features, args.policy)
    runner = Runner(store, controllers, scheduler=scheduler)
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        summary = runner.run(until_settled=args.until_settled, timeout_s=timeout, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        summary = runner.summary
    writes = ", ".join(f"{name} {n}" for name, n in sorted(summary.writes.items())) or "none"
    if args.until_settled and not summary.settled and not stop.is_set():
        left = len(runner.queue)
        raise FakeDraError(f"not settled after {timeout:g} s: {left} object(s) still queued "
                          f"({summary.passes} passes, writes: {writes}); see `fake-dra get events -A`")
    state = "settled" if summary.settled else "stopped"
    print(f"{state} after {summary.passes} passes in {summary.seconds:.1f} s: {summary.total_writes} writes ({writes})",
          file=sys.stdout)
    return 0
