"""`fake-dra publish`: reconcile this node's ResourceSlices once (`--once`) or continuously.

Also the one place that turns command-line flags into a slice backend, a gate detector and a
Publisher, so `fake-dra run` (driver/commands/run.py) and `fake-dra gates` wire them identically:
`add_publish_flags`, `backend_from_args`, `detector_from_args`, `build_publisher`.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from driver.commands import common
from driver.errors import InputError
from driver.features import Features, parse_gates

log = logging.getLogger("fake-dra.publish")


def add_gate_flags(parser: argparse.ArgumentParser) -> None:
    """How to learn the scheduler's and apiserver's gates (`publish`, `run`, `gates`)."""
    common.add_flag(parser, "--scheduler-metrics-url", None,
                    "kube-scheduler /metrics URL to read kubernetes_feature_enabled from, or 'apiserver' "
                    "for the apiserver's /metrics through the client (local store: STORE/featuregates.yaml)")
    common.add_flag(parser, "--scheduler-features", None,
                    "kube-scheduler gates G=true|false,... when its metrics are unreachable")
    common.add_flag(parser, "--metrics-token-file", None, "bearer token file for --scheduler-metrics-url")
    common.add_flag(parser, "--metrics-ca-file", None, "CA bundle for an https --scheduler-metrics-url")
    parser.add_argument("--metrics-insecure-skip-verify", action="store_true",
                        help="do not verify the TLS certificate of --scheduler-metrics-url")


def add_publish_flags(parser: argparse.ArgumentParser) -> None:
    """Gate-detection and publishing flags of `publish` and `run` (add_node_flags supplies the rest)."""
    add_gate_flags(parser)
    common.add_flag(parser, "--gate-interval", None, "seconds between gate re-detections (default: the publish interval)")
    parser.add_argument("--delete-slices-on-exit", action="store_true",
                        help="delete this node's slices on shutdown (default: leave them; the kubelet wipes "
                             "them if the plugin stays away)")


def default_store_dir() -> Path:
    return common.default_store_dir()


def uses_api_server(args: argparse.Namespace) -> bool:
    """--kubeconfig, or in a cluster without --store; otherwise the local object store."""
    return bool(getattr(args, "kubeconfig", None)) or (common.in_cluster() and not getattr(args, "store", None))


def backend_from_args(args: argparse.Namespace, *, write: bool = True) -> Any:
    """API server with --kubeconfig (or in-cluster without --store), else the local object store
    (checked first: a --store that is a file or unwritable is refused before any work)."""
    if uses_api_server(args):
        from driver.kube.slices import api_backend

        return api_backend(args)
    from driver.publish import store_backend
    from driver.store.objectstore import ObjectStore

    return store_backend(ObjectStore(common.store_dir(args, write=write)))


def detector_from_args(args: argparse.Namespace, backend: Any, interval_s: float, driver_name: str | None = None) -> Any:
    from driver.publish import make_detector

    for flag in ("--metrics-token-file", "--metrics-ca-file"):
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value:
            common.input_file(value, flag)  # a typo must not turn into "scheduler gates unknown"

    gate_interval = common.positive_seconds(args.gate_interval, "--gate-interval") if getattr(args, "gate_interval", None) else interval_s
    try:
        sched = parse_gates(args.scheduler_features) if getattr(args, "scheduler_features", None) else None
    except InputError as exc:
        raise InputError(str(exc).replace("--features", "--scheduler-features")) from None
    return make_detector(
        backend, node_name=common.require_node_name(args), driver_name=driver_name or common.require_driver_name(args),
        overrides=parse_gates(getattr(args, "features", None)),
        scheduler_metrics_url=getattr(args, "scheduler_metrics_url", None), scheduler_flags=sched,
        metrics_token_file=getattr(args, "metrics_token_file", None),
        metrics_ca_file=getattr(args, "metrics_ca_file", None),
        metrics_insecure=bool(getattr(args, "metrics_insecure_skip_verify", False)), interval_s=gate_interval,
    )


def renderers_from_args(args: argparse.Namespace) -> list[tuple[Any, Any]]:
    """(driver profile, features -> Pool) for each driver of the --personality, re-discovering the
    sysfs tree on every call (picks up hotplug). `render(features, hidden=...)` leaves out the
    devices a driver stops offering while their siblings are prepared."""
    from driver.commands._personality import profiles_from_args
    from driver.discovery import discover
    from driver.hardware import load_catalog

    node = common.require_node_name(args)
    config = common.load_driver_config(getattr(args, "driver_config", None))
    profiles = profiles_from_args(args, config)
    common.require_driver_name(args)
    catalog = load_catalog(config.get("hardware"))
    root = common.existing_dir(args.sysfs_root, "--sysfs-root")

    def renderer(profile: Any) -> Any:
        def render(features: Features, hidden: frozenset[str] = frozenset()) -> Any:
            return profile.render(discover(root, catalog), features, node_name=node, hidden=hidden)
        return render
    return [(profile, renderer(profile)) for profile in profiles]


def build_publisher(args: argparse.Namespace, backend: Any, render: Any, interval_s: float,
                    metrics_registry: Any = None, driver_name: str | None = None) -> Any:
    """Publisher of one driver's pool with gate detection (explicit --features still win per gate)."""
    from driver.publish import Publisher
    from driver.publish.metrics import PublishMetrics
    from driver.publish.wiring import check_local_switch

    name = driver_name or args.driver_name
    detector = detector_from_args(args, backend, interval_s, driver_name=name)
    check_local_switch(backend, detector.overrides)
    return Publisher(backend, render, detector, interval_s, node_name=common.require_node_name(args),
                     driver_name=name, delete_on_exit=bool(getattr(args, "delete_slices_on_exit", False)),
                     metrics=PublishMetrics(metrics_registry))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "publish", help="reconcile this node's ResourceSlices (once or continuously)",
        description="Discover devices, detect feature gates and make the stored ResourceSlices match.")
    common.add_node_flags(parser)
    add_publish_flags(parser)
    parser.add_argument("--once", action="store_true", help="one reconcile, print its statistics, exit")
    common.add_flag(parser, "--interval", "30", "seconds between reconciles (default 30)")
    common.add_flag(parser, "--metrics-addr", None, "serve Prometheus metrics (detected gates, writes) on HOST:PORT")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text", help="statistics format")
    parser.set_defaults(func=run)


def _stats(result: Any, backend: Any) -> dict[str, Any]:
    stats = result.stats.as_dict()
    stats["requests"] = getattr(backend, "requests", None)
    stats["backend"] = backend.kind
    stats["features"] = str(result.features)
    return stats


def _print(result: Any, backend: Any, output: str) -> None:
    stats = _stats(result, backend)
    if output == "json":
        print(json.dumps(stats, indent=2))
        return
    print(f"backend={backend.kind} slices={stats['slices']} devices={stats['devices']} generation={stats['generation']}")
    print(f"writes={stats['writes']} (created={stats['created']} updated={stats['updated']} deleted={stats['deleted']}) "
          f"unchanged={stats['unchanged']} conflicts={stats['conflicts']} requests={stats['requests']}")
    print(f"features={stats['features']}")
    for d in stats["dropped"]:
        print(f"dropped fields in {d['slice']}: {', '.join(sorted(d['gates']))}")
    for name in stats["protectedGroups"]:
        print(f"kept published compatibility groups of allocated device {name}")


def run(args: argparse.Namespace) -> int:
    interval = common.positive_seconds(args.interval, "--interval")
    if args.metrics_addr:
        from driver.metrics import parse_addr

        parse_addr(args.metrics_addr)  # also with --once, which serves no metrics: a typo is still a typo
    backend = backend_from_args(args)
    renderers = renderers_from_args(args)
    # One publisher per driver of the personality (NVIDIA's: the GPU driver and the SR-IOV driver, each
    # its own pool); the first driver's publish metrics are the ones --metrics-addr serves.
    publishers = [build_publisher(args, backend, render, interval, driver_name=profile.name)
                  for profile, render in renderers]
    if args.once:
        results = [(p, p.run_once()) for p in publishers]
        _print_all(results, backend, args.output)
        if args.delete_slices_on_exit:
            for publisher in publishers:
                publisher.stop()
        return 0
    metrics_server = publishers[0].metrics.serve(args.metrics_addr) if args.metrics_addr else None
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    signal.signal(signal.SIGHUP, lambda *_: [p.trigger() for p in publishers])  # re-scan the inventory now
    watcher = _hotplug_watcher(args, publishers)
    for publisher in publishers:
        publisher.start()
    log.info("publishing", extra={"interval_s": interval, "backend": backend.kind,
                                  "drivers": [p.driver_name for p in publishers]})
    done.wait()
    if watcher is not None:
        watcher.stop()
    for publisher in publishers:
        publisher.stop()
    if metrics_server is not None:
        metrics_server.shutdown()
    return 0


def _print_all(results: list[tuple[Any, Any]], backend: Any, output: str) -> None:
    """One driver: its statistics as always; several: one block (text) or entry (JSON) per driver."""
    if len(results) == 1:
        _print(results[0][1], backend, output)
        return
    if output == "json":
        print(json.dumps([{"driver": p.driver_name, **_stats(r, backend)} for p, r in results], indent=2))
        return
    for publisher, result in results:
        print(f"driver={publisher.driver_name}")
        _print(result, backend, output)


def _hotplug_watcher(args: argparse.Namespace, publishers: list[Any]) -> Any:
    """udev events on a real host trigger a pass; fake sysfs roots rely on the interval and SIGHUP."""
    from driver.discovery import udev

    if not udev.udev_usable(args.sysfs_root):
        return None
    watcher = udev.HotplugWatcher(lambda event: [p.trigger() for p in publishers])
    try:
        watcher.start()
    except Exception as exc:  # noqa: BLE001 - hotplug is an optimisation; the interval still re-scans
        print(f"warning: udev hotplug monitoring unavailable: {exc}", file=sys.stderr)
        return None
    return watcher
