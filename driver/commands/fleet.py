"""`fake-dra fleet apply|delete|run -f FLEET`: many simulated nodes from one process.

    fake-dra fleet apply -f lab.yaml              create or update the Nodes and their slices
    fake-dra fleet apply -f lab.yaml --dry-run    sizes per node group and in total; writes nothing
    fake-dra fleet delete -f lab.yaml             remove every Node and slice the fleet made
    fake-dra fleet run -f /etc/fleet/fleet.yaml   reconcile continuously (the kwok-fleet Deployment)

Target: the local object store (default, or --store), or an API server with --kubeconfig (or the
in-cluster service account when running in a pod without --store). Each node group has a
personality (`personality:`, default fake-dra); `--driver-name` names the fake-dra personality's
driver, NVIDIA's and the SR-IOV driver's keep their names. In the local store `apply` and `run` put
the DeviceClasses of every personality the fleet uses in place, as `fake-dra run` does, once
every check has passed (a refused `apply` writes nothing). Feature gates are detected as
`fake-dra run` detects them (STORE/featuregates.yaml locally; dry-run probes and the scheduler's
metrics on a cluster), so each node publishes exactly what `fake-dra run --node-name NODE` would.
Exit 0; 2 for bad input (the fleet file, a flag, a Node the fleet would take over); 130 on Ctrl-C,
after which the same `apply` completes the work.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from typing import Any

from driver.commands import _store, common
from driver.commands.publish import add_gate_flags, uses_api_server
from driver.errors import FakeDraError, InputError
from driver.features import Features, parse_gates
from driver.model.quantity import parse_quantity

log = logging.getLogger("fake-dra.fleet")
ACTIONS = ("apply", "delete", "run")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fleet", help="publish a fleet of simulated nodes (kwok-style Nodes and their slices): apply, delete, run",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=ACTIONS, metavar="ACTION", help="apply, delete or run")
    parser.add_argument("-f", "--filename", required=False, default=None,
                        help="the fleet file (kind: Fleet; docs/fleet.md); '-' reads standard input (apply, delete)")
    parser.add_argument("--dry-run", action="store_true",
                        help="apply: print nodes, slices, devices and bytes per node group and in total; write nothing")
    common.add_flag(parser, "--etcd-budget", "1Gi", "warn when the fleet's slice JSON exceeds this (etcd's default "
                    "quota is 2Gi)")
    common.add_driver_name(parser)
    common.add_features(parser)
    common.add_api_flags(parser)
    add_gate_flags(parser)
    common.add_flag(parser, "--qps", "50", "API server only: requests per second on average (client-side limit)")
    common.add_flag(parser, "--burst", "100", "API server only: requests allowed at once above --qps")
    common.add_flag(parser, "--interval", "30", "run: seconds between reconcile passes")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text", help="summary format")
    parser.set_defaults(func=run)


# ---- inputs ---------------------------------------------------------------------------------

def _fleet(args: argparse.Namespace) -> Any:
    from driver.fleet.spec import load_fleet

    if not args.filename:
        raise InputError("-f/--filename: required (the fleet file)")
    if args.filename == "-" and args.action == "run":
        raise InputError("-f -: fleet run re-reads its file every pass; give a path")
    return load_fleet(_store.read_manifest(args.filename), f"-f {args.filename}")


def _positive(value: str, flag: str, kind: type = float) -> Any:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise InputError(f"{flag}: expected a positive number, got {value!r}") from None
    if number <= 0:
        raise InputError(f"{flag}: must be positive, got {value!r}")
    return number


def _budget(value: str) -> int:
    try:
        amount = parse_quantity(value)
    except InputError as exc:
        raise InputError(f"--etcd-budget: expected a size like 1Gi or 500M: {exc}") from None
    if amount <= 0:
        raise InputError(f"--etcd-budget: must be positive, got {value!r}")
    return int(amount)


def _target(args: argparse.Namespace, *, write: bool) -> Any:
    if uses_api_server(args):
        from driver.kube.fleet import kube_fleet_target

        return kube_fleet_target(args.kubeconfig, qps=args.qps_value, burst=args.burst_value)
    from driver.fleet.targets import StoreFleetTarget

    return StoreFleetTarget(_store.open_store(args, write=write))


def _features(args: argparse.Namespace, target: Any, probe_node: str) -> Features:
    """The gates `fake-dra run` would publish with on this target (same detector, same sources)."""
    from driver.publish import make_detector

    for flag in ("--metrics-token-file", "--metrics-ca-file"):
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value:
            common.input_file(value, flag)
    try:
        sched = parse_gates(args.scheduler_features) if args.scheduler_features else None
    except InputError as exc:
        raise InputError(str(exc).replace("--features", "--scheduler-features")) from None
    detector = make_detector(
        target.slices, node_name=probe_node, driver_name=common.require_driver_name(args),
        overrides=parse_gates(args.features), scheduler_metrics_url=args.scheduler_metrics_url,
        scheduler_flags=sched, metrics_token_file=args.metrics_token_file, metrics_ca_file=args.metrics_ca_file,
        metrics_insecure=bool(args.metrics_insecure_skip_verify))
    if args.action != "run":  # a one-shot command prints the gates in its summary instead
        logging.getLogger("fake-dra.gates").setLevel(logging.WARNING)
    report = detector.detect()
    for warning in report.warnings:
        log.warning(warning)
    return report.features


def _gates(features: Features) -> str:
    """The detected gates only (the others are locked or follow 1.37's defaults)."""
    from driver.publish.fields import DETECTED_GATES

    return ",".join(f"{g}={'true' if features.enabled(g) else 'false'}" for g in DETECTED_GATES)


def _where(target: Any, args: argparse.Namespace) -> str:
    if target.kind == "store":
        return f"local store {target.store.root}"
    return f"API server ({args.kubeconfig or 'in-cluster'})"


# ---- actions ----------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    fleet = _fleet(args)
    if args.dry_run and args.action != "apply":
        raise InputError(f"--dry-run: only with `fleet apply` (not {args.action})")
    budget = _budget(args.etcd_budget)
    interval = _positive(args.interval, "--interval")
    args.qps_value, args.burst_value = _positive(args.qps, "--qps"), _positive(args.burst, "--burst", int)
    common.require_driver_name(args)
    from driver.fleet.template import fleet_drivers

    fleet_drivers(args.driver_name)  # refuses another personality's driver name before anything is read
    if args.action == "delete":
        return _delete(args, fleet)
    target = _target(args, write=not args.dry_run)
    features = _features(args, target, fleet.nodes()[0][0] if fleet.size else "fleet-gate-probe")
    if args.dry_run:
        return _dry_run(args, fleet, features, budget)
    if args.action == "apply":
        return _apply(args, target, fleet, features)
    return _run_loop(args, target, features, interval)


def _seed_classes(args: argparse.Namespace, target: Any, fleet: Any) -> None:
    """In the local store, as `fake-dra run` does: the DeviceClasses of the fleet's personalities'
    drivers. On a cluster the drivers' installations own them (deploy/overlays/nvidia has NVIDIA's)."""
    if target.kind != "store":
        return
    from driver.commands._local import seed_device_classes
    from driver.fleet.template import device_classes

    seed_device_classes(target.store, device_classes(fleet.personalities(), args.driver_name), logger=log)


def _apply(args: argparse.Namespace, target: Any, fleet: Any, features: Features) -> int:
    from driver.fleet.apply import apply_fleet, group_templates
    from driver.fleet.template import Templates

    progress = common.Progress(f"fleet {fleet.name}: applied", "nodes")
    from driver.fleet.apply import check_foreign

    with Templates(args.driver_name) as templates:
        # Every refusal before the first write, so a refused apply writes nothing at all: a group
        # that cannot be rendered, a Node of the fleet's names that belongs to someone else.
        group_templates(fleet, templates, features)
        check_foreign(fleet, {(n.get("metadata") or {}).get("name"): n for n in target.list_nodes()})
        _seed_classes(args, target, fleet)
        try:
            stats = apply_fleet(target, fleet, driver_name=args.driver_name, features=features,
                                templates=templates, progress=progress)
        except KeyboardInterrupt:
            print(f"fleet {fleet.name}: interrupted after {progress.done} of {progress.total or fleet.size} nodes; "
                  "nothing is half-written (the batch of nodes in progress was undone whole): `fleet apply` again "
                  "finishes the rest", file=sys.stderr)
            raise
    _report(args, target, fleet.name, stats, features)
    return 0


def _report(args: argparse.Namespace, target: Any, name: str, stats: Any, features: Features | None) -> None:
    out = stats.as_dict()
    out.update(fleet=name, target=target.kind, requests=target.requests)
    if features is not None:
        out["features"] = str(features)
    if args.output == "json":
        print(json.dumps(out, indent=2))
        return
    rate = stats.nodes / stats.seconds if stats.seconds and stats.nodes >= 50 else 0.0
    print(f"fleet {name} on {_where(target, args)}: {stats.nodes} nodes, {stats.slices} slices, {stats.devices} devices")
    print(f"nodes: {stats.nodes_created} created, {stats.nodes_updated} updated, {stats.nodes_deleted} deleted; "
          f"slices: {stats.slices_created} created, {stats.slices_updated} updated, {stats.slices_deleted} deleted "
          f"({stats.writes} writes, {target.requests} requests) in {stats.seconds:.1f} s"
          + (f", {rate:.0f} nodes/s" if rate else ""))
    if features is not None:
        print(f"gates: {_gates(features)}")
    for warning in stats.warnings:
        print(f"warning: {warning}")


def _dry_run(args: argparse.Namespace, fleet: Any, features: Features, budget: int) -> int:
    from driver.fleet.apply import group_templates
    from driver.fleet.sizing import group_sizes
    from driver.fleet.template import Templates
    from driver.tables import table

    with Templates(args.driver_name) as templates:
        sizes = group_sizes(fleet, group_templates(fleet, templates, features))
    total = sum(s.bytes for s in sizes)
    over = total > budget
    if args.output == "json":
        print(json.dumps({"fleet": fleet.name, "features": str(features), "groups": [
            {"name": s.group, "profile": s.profile, "personality": s.personality, "fidelity": s.fidelity,
             "nodes": s.nodes, "slices": s.slices,
             "devices": s.devices, "bytes": s.bytes, "bytesPerNode": s.bytes_per_node} for s in sizes],
            "total": {"nodes": sum(s.nodes for s in sizes), "slices": sum(s.slices for s in sizes),
                      "devices": sum(s.devices for s in sizes), "bytes": total},
            "etcdBudget": budget, "overBudget": over}, indent=2))
    else:
        rows: list[list[object]] = [[s.group, s.profile, s.personality, s.fidelity, s.nodes, s.slices, s.devices,
                                     _size(s.bytes), _size(s.bytes_per_node)] for s in sizes]
        rows.append(["total", "", "", "", sum(s.nodes for s in sizes), sum(s.slices for s in sizes),
                     sum(s.devices for s in sizes), _size(total), ""])
        print(f"fleet {fleet.name} (dry run, nothing written; gates: {_gates(features)})")
        print(table(["GROUP", "PROFILE", "PERSONALITY", "FIDELITY", "NODES", "SLICES", "DEVICES", "SLICE JSON",
                     "PER NODE"], rows))
    if over:
        print(f"warning: the fleet's slices are {_size(total)} of JSON, over --etcd-budget {_size(budget)} "
              "(etcd's default quota is 2 GiB for everything the cluster stores); use fewer nodes or "
              "fidelity: whole", file=sys.stderr)
    return 0


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _delete(args: argparse.Namespace, fleet: Any) -> int:
    from driver.fleet.apply import delete_fleet

    target = _target(args, write=True)
    progress = common.Progress(f"fleet {fleet.name}: deleted", "nodes")
    try:
        stats = delete_fleet(target, fleet.name, driver_name=args.driver_name, progress=progress)
    except KeyboardInterrupt:
        print(f"fleet {fleet.name}: interrupted after {progress.done} of {progress.total} nodes; `fleet delete` "
              "again removes the rest", file=sys.stderr)
        raise
    _report(args, target, fleet.name, stats, None)
    return 0


def _run_loop(args: argparse.Namespace, target: Any, features: Features, interval: float) -> int:
    from driver.fleet.loop import FleetLoop

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    loop = FleetLoop(target, lambda: _fleet(args), driver_name=args.driver_name, features=features,
                     on_fleet=lambda fleet: _seed_classes(args, target, fleet))
    log.info("reconciling fleet continuously", extra={"file": args.filename, "interval_s": interval,
                                                      "target": target.kind})
    try:
        while not done.is_set():
            try:
                stats = loop.run_once()
                if stats is not None and (stats.writes or loop.passes == 1):
                    log.info("fleet reconciled", extra={"fleet_" + k: v for k, v in stats.as_dict().items()
                                                        if v and k != "warnings"})
            except FakeDraError as exc:
                log.error("fleet pass failed; retrying next interval", extra={"error": str(exc)})
            done.wait(interval)
    finally:
        loop.close()
    return 0
