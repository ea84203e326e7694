"""`fake-dra schedule`: bind the pending Pods of the local object store, as kube-scheduler with DRA would.

    fake-dra schedule                          every pending pod, in creation order
    fake-dra schedule --policy most-allocated  pack: the feasible node with the largest share in use
    fake-dra schedule -o json                  one JSON object per pod: name, node (or null), claims, reason

Claims from templates are made as the resourceclaim controller makes them; each pod's claims are
allocated on the node chosen (status.allocation, reservedFor) and the pod bound (spec.nodeName,
PodScheduled=True). A container's extended resource that a DeviceClass serves (`nvidia.com/gpu: 1`
with NVIDIA's classes) gets a claim of the scheduler's own, as KEP-5004 makes it. A pod that fits nowhere stays pending with PodScheduled=False/Unschedulable and
the nodes grouped by reason. DeviceTaintRules taint the devices they select. ResourcePoolStatusRequests
without a status are answered afterwards (driver/schedule/poolstatus.py). docs/fleet.md lists what is
modelled of kube-scheduler.
Exit 0 (pending pods are an outcome, not an error; `-o json` or `get pods` shows them); 2 for bad input.
"""

from __future__ import annotations

import argparse
import json

from driver.commands import _store, common
from driver.errors import InputError
from driver.schedule import POLICIES


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schedule", help="bind the local store's pending Pods to Nodes, DRA claims included (kube-scheduler)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", choices=POLICIES, default="first",
                        help="which feasible node: first found, most-allocated (pack) or least-allocated (spread)")
    common.add_flag(parser, "--percentage-of-nodes-to-score", "0",
                    "kube-scheduler's percentageOfNodesToScore for the scoring policies: stop after this share of "
                    "the nodes is found feasible; 0 is its adaptive default (50 - nodes/125, at least 5)")
    common.add_features(parser)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text",
                        help="text summary, or one JSON object per pod")
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _percentage(value: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InputError(f"--percentage-of-nodes-to-score: expected a whole number from 0 to 100, got {value!r}") from None
    if not 0 <= number <= 100:
        raise InputError(f"--percentage-of-nodes-to-score: must be between 0 and 100, got {number}")
    return number


def run(args: argparse.Namespace) -> int:
    from driver.commands.apply import _features
    from driver.schedule import Scheduler

    percentage = _percentage(args.percentage_of_nodes_to_score)
    store = _store.open_store(args, write=True)
    scheduler = Scheduler(store, features=_features(args, store.root), policy=args.policy, percentage=percentage,
                          progress=common.Progress("schedule:", "pods"))
    report = scheduler.run()
    from driver.schedule.poolstatus import answer_pending
    answered = answer_pending(store, scheduler.features)
    if args.output == "json":
        for outcome in report.outcomes:
            print(json.dumps(outcome.as_dict()))
        return 0
    rate = len(report.outcomes) / report.seconds if report.seconds and report.outcomes else 0.0
    print(f"scheduled {len(report.scheduled)} of {len(report.outcomes)} pending pods on {report.nodes} nodes "
          f"in {report.seconds:.1f} s ({rate:.0f} pods/s, {report.writes} writes)")
    pending = report.pending
    for outcome in pending[:20]:
        print(f"pending {outcome.name}: {outcome.reason}")
    if len(pending) > 20:
        print(f"... and {len(pending) - 20} more pending (fake-dra get pods, or -o json)")
    for request in answered:
        print(f"answered resourcepoolstatusrequest {request['metadata']['name']}: "
              f"{request['status']['poolCount']} pool(s)")
    return 0
