"""`fake-dra run`: the node agent — kubelet plugin (prepare/unprepare/health) plus slice publishing.

Composition only: it picks the claim source (API server with --kubeconfig or in-cluster, else the
local object store), builds the pool provider (discovery + rendering, cached), the checkpoint, the
CDI writer and the gRPC server, then waits for SIGTERM/SIGINT and hands over (`_hand_over`:
the state directory is released only after the last write; docs/robustness.md). SIGHUP re-scans
the inventory (and re-publishes, unless --no-publish).

Test hooks: with FAKE_DRA_TEST_MODE=1, FAKE_DRA_CRASH_AT=<step> SIGKILLs the process at that step
of prepare/unprepare (prepare-read: before the claims are read, so a pause there stands in for a
slow API server; prepare-started, prepare-cdi-written, prepare-completed, unprepare-cdi-removed,
unprepare-completed) or of the start-up recovery of a lost checkpoint
(recover-read, recover-saved; driver.state.recovery) and FAKE_DRA_PAUSE_AT=<step>:<seconds>[,...]
stalls the call there (a slow disk or API server, for hand-over and cancellation tests); without
FAKE_DRA_TEST_MODE both are ignored.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.commands import common
from driver.errors import InputError
from driver.features import Features

log = logging.getLogger("fake-dra.run")
CALL_STEPS = ("prepare-read", "prepare-started", "prepare-cdi-written", "prepare-completed", "unprepare-cdi-removed",
              "unprepare-completed")
RECOVERY_STEPS = ("recover-read", "recover-saved")  # at start, rebuilding a lost checkpoint (driver.state.recovery)
CRASH_STEPS = CALL_STEPS + RECOVERY_STEPS
CANCEL_WINDOW_S = 5.0  # after the grace period: at most this long (and at most the grace) to roll back
# Longer than a predecessor's hand-over with the default flags (10 s grace + 5 s cancel window), so a
# surging rolling update's successor takes over without a restart; a second `run` by mistake is told
# who owns the node within this time. deploy/ sets 'forever'.
LOCK_WAIT_S = 30.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="serve the kubelet plugin (DRA + health gRPC) and publish this node's ResourceSlices",
        description="Run the node agent: kubelet plugin over unix sockets and the slice publisher.",
    )
    common.add_node_flags(parser)
    common.add_kubelet_dirs(parser)
    from driver.commands.publish import add_publish_flags

    add_publish_flags(parser)
    common.add_flag(parser, "--metrics-addr", None, "serve Prometheus metrics on HOST:PORT (default off)")
    common.add_flag(parser, "--health-interval", "5", "seconds between device health refreshes (kubelet lease is 30)")
    common.add_flag(parser, "--publish-interval", "30", "seconds between slice reconciliations")
    common.add_flag(parser, "--boot-id-file", "/proc/sys/kernel/random/boot_id", "file holding the node boot ID")
    common.add_flag(parser, "--api-deadline", "30", "seconds to keep retrying an unavailable API server per claim "
                    "(never past the kubelet call's own deadline or 45 s)")
    common.add_flag(parser, "--grace-period", "10", "seconds to let in-flight calls finish on SIGTERM; calls still "
                    "running are then cancelled and rolled back (within min(grace, 5) s more)")
    common.add_flag(parser, "--wait-for-lock", str(int(LOCK_WAIT_S)),
                    "seconds to wait while another process owns this node's state directory (a rolling "
                    f"update's predecessor handing over) before giving up; 'forever' waits without a bound "
                    f"(default {int(LOCK_WAIT_S)})")
    parser.add_argument("--no-publish", action="store_true", help="serve the plugin only; do not publish slices")
    parser.add_argument("--device-metadata", type=_on_off, default=True, metavar="true|false",
                        help="write DRA device metadata files (KEP-5304) and bind-mount them into containers "
                             "(default true)")
    parser.set_defaults(func=run)


def _crash_hook():
    if os.environ.get("FAKE_DRA_TEST_MODE") != "1":
        return lambda _step: None
    step = os.environ.get("FAKE_DRA_CRASH_AT")
    if step and step not in CRASH_STEPS:
        raise InputError(f"FAKE_DRA_CRASH_AT: unknown step {step!r} (known: {', '.join(CRASH_STEPS)})")
    pauses = _pauses(os.environ.get("FAKE_DRA_PAUSE_AT"))
    if step:
        log.warning("test mode: will SIGKILL at step", extra={"step": step})
    for pause_step, pause_s in pauses.items():
        log.warning("test mode: will pause at step", extra={"step": pause_step, "seconds": pause_s})

    def hook(current: str) -> None:
        if current in pauses:
            time.sleep(pauses[current])
        if current == step:
            os.kill(os.getpid(), signal.SIGKILL)
    return hook


def _pauses(value: str | None) -> dict[str, float]:
    """FAKE_DRA_PAUSE_AT: `<step>:<seconds>[,<step>:<seconds>...]`."""
    out: dict[str, float] = {}
    for item in (value or "").split(","):
        if not item:
            continue
        step, _, seconds = item.partition(":")
        if step not in CRASH_STEPS:
            raise InputError(f"FAKE_DRA_PAUSE_AT: unknown step {step!r} (known: {', '.join(CRASH_STEPS)})")
        out[step] = common.positive_seconds(seconds, "FAKE_DRA_PAUSE_AT seconds")
    return out


def lock_wait_seconds(value: str) -> float | None:
    """--wait-for-lock: seconds (0: do not wait), or 'forever' (None)."""
    if str(value).strip().lower() == "forever":
        return None
    out = common.seconds(value, "--wait-for-lock")
    if out < 0:
        raise InputError(f"--wait-for-lock: must be zero, positive or 'forever', got {value!r}")
    return out


def _claim_source(args: argparse.Namespace, deadline_s: float) -> Any:
    """API server when configured (--kubeconfig, or in-cluster without --store), else the local store."""
    from driver.commands.publish import uses_api_server

    if uses_api_server(args):
        from driver.kube.claims import KubeClaimSource
        from driver.kube.rawapi import load_api_client

        api = load_api_client(args.kubeconfig)
        log.info("reading claims from the API server", extra={"kubeconfig": args.kubeconfig or "in-cluster"})
        return KubeClaimSource(api, deadline_s=deadline_s)
    from driver.state.sources import StoreClaimSource
    from driver.store.objectstore import ObjectStore

    root = common.store_dir(args, write=True)
    store = ObjectStore(root)
    log.info("reading claims from the local object store", extra={"store": str(root)})
    from driver.commands._local import seed_device_classes

    seed_device_classes(store, [dc for profile in args.profiles for dc in profile.device_classes()])
    return StoreClaimSource(store)


def _on_off(value: str) -> bool:
    """--device-metadata's value: the on/off words every boolean FAKE_DRA_* variable takes."""
    from driver.commands._envflags import FALSE_WORDS, TRUE_WORDS

    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _device_info(args: argparse.Namespace, claims: Any, driver_name: str, state_dir: Path) -> dict[str, Any]:
    """DeviceState's metadata writer (--device-metadata) and VF claim status reporter (when the
    DRAResourceClaimDeviceStatus gate is on: the API server, or the local store in local mode)."""
    from driver.state.claimstatus import ClaimStatusReporter
    from driver.state.metadata import DeviceMetadataWriter
    from driver.state.netinfo import sysfs_network_data
    from driver.state.sources import StoreClaimSource

    net = sysfs_network_data(args.sysfs_root, driver_name)
    out: dict[str, Any] = {"metadata": DeviceMetadataWriter(state_dir, driver_name, enabled=args.device_metadata,
                                                            network_data=net)}
    if not common.features_from(args).device_status:
        log.info("DRAResourceClaimDeviceStatus is off: no status.devices for VFs")
        return out
    if isinstance(claims, StoreClaimSource):
        from driver.store.claimstatus import StoreClaimStatus

        sink: Any = StoreClaimStatus(claims.store)
    else:
        from driver.kube.claimstatus import kube_status_sink

        sink = kube_status_sink(args.kubeconfig)
    out["claim_status"] = ClaimStatusReporter(sink, driver_name, network_data=net)
    return out


def _node_dirs(args: argparse.Namespace, driver_name: str, node: str) -> common.NodeDirs:
    """Resolve and check the plugin's directories before anything is created (docs/cli.md)."""
    dirs = common.node_dirs(args, driver_name, node)
    for flag, path in dirs.flags():
        common.output_dir(path, flag)
    if dirs.local_root is not None:
        log.info(f"local mode: sockets, CDI specs and checkpoint under {dirs.local_root}",
                 extra={"state_dir": str(dirs.local_root), "driver": driver_name})
    else:
        log.info("kubelet directories", extra={"defaults": dirs.origin, "plugins": str(dirs.plugins),
                                               "registry": str(dirs.registry), "cdi_root": str(dirs.cdi)})
    return dirs


def _log_inventory(pool: Any, driver_name: str) -> None:
    """The start-up summary of one driver's pool (and its warnings)."""
    from driver.commands._startup import inventory_summary

    message, fields = inventory_summary(pool, driver_name)
    log.info(message, extra=fields)
    for warning in getattr(pool, "warnings", ()) or ():
        log.warning(warning)


def _check_local_switch(args: argparse.Namespace) -> None:
    """Local mode: --features may turn KEP-5941 on only when STORE/featuregates.yaml has it on
    (driver.publish.wiring.check_local_switch); refused here, before the plugin starts."""
    from driver.commands.publish import backend_from_args, uses_api_server
    from driver.features import parse_gates
    from driver.publish.wiring import check_local_switch

    if not uses_api_server(args):
        check_local_switch(backend_from_args(args), parse_gates(args.features))


def start_publisher(args: argparse.Namespace, render: Callable[..., Any], interval_s: float,
                    registry: Any, driver_name: str) -> Any | None:
    """The single place `run` wires slice publishing; the flag -> backend/detector/Publisher
    translation is shared with `fake-dra publish` (driver.commands.publish). None when disabled."""
    if args.no_publish:
        return None
    from driver.commands.publish import backend_from_args, build_publisher

    publisher = build_publisher(args, backend_from_args(args), render, interval_s, metrics_registry=registry,
                                driver_name=driver_name)
    if publisher.backend.kind == "store":
        # Local mode: the first pass completes before the sockets open, so a script that waits for
        # the plugin (`fake-dra probe --wait`) finds the slices for `fake-dra apply --allocate`.
        publisher.run_once()
    publisher.start()
    return publisher


class _Agent:
    """One driver's kubelet plugin on this node: its pool cache, prepared state, health model,
    sockets and publisher. A personality with two drivers (NVIDIA's GPUs and the SR-IOV driver's
    NICs) runs two agents in one process, as two plugins would run on a real node."""

    def __init__(self, args: argparse.Namespace, profile: Any, render: Callable[..., Any], node: str,
                 dirs: common.NodeDirs, claims: Any, several: bool, lock_wait_s: float | None) -> None:
        from driver.plugin.metrics import PluginMetrics
        from driver.plugin.server import PluginServer, SocketPaths, check_sockets
        from driver.state.cdi import CdiWriter
        from driver.state.checkpoint import CheckpointStore, read_boot_id
        from driver.state.health import HealthModel
        from driver.state.names import check_subdomain
        from driver.state.pool import PoolCache
        from driver.state.prepare import DeviceState

        driver_name = check_subdomain(profile.name, "--driver-name", 63)
        self.profile, self.render = profile, render
        paths = SocketPaths.for_driver(dirs.plugins, dirs.registry, driver_name, dirs.defaults)
        # The plugin checks claims against the hardware truth: the pool rendered with every gate on
        # (all modes, compatibility groups, valueFrom), whatever the publisher detected for the
        # scheduler. Device names do not depend on gates, so allocations from any published variant
        # are found, and revalidation still knows which modes exclude each other (version skew).
        self.pool_cache = PoolCache(lambda: render(Features.all_on()), max_age_s=max(15.0, args.health_interval))
        _log_inventory(self.pool_cache.refresh(), driver_name)  # also fails fast on a broken sysfs root or config
        # Several drivers and one --state-dir: each keeps its checkpoint in a directory of its own.
        state_dir = dirs.state / driver_name if several and getattr(args, "state_dir", None) else dirs.state
        checkpoint = CheckpointStore(state_dir, driver_name=driver_name, node_name=node,
                                     boot_id=read_boot_id(args.boot_id_file))
        # Sockets are probed as soon as this process owns the state directory and before it touches
        # anything: a live one belongs to another instance (a surge successor waits for the lock first).
        self.state = DeviceState(driver_name=driver_name, claims=claims, pool=self.pool_cache,
                                 cdi=CdiWriter(dirs.cdi, driver_name, profile.cdi), checkpoint=checkpoint,
                                 crash_hook=_crash_hook(), when_owned=lambda: check_sockets(paths), profile=profile,
                                 lock_wait_s=lock_wait_s, **_device_info(args, claims, driver_name, state_dir))
        log.info(f"restored {self.state.count()} prepared claims",
                 extra={"claims": self.state.count(), "state_dir": str(state_dir), "driver": driver_name})

        def devices():
            # Faults are read every health interval (cheap); the inventory is rediscovered when the
            # cache is older than 15 s, so a vanished device turns UNKNOWN well inside the 30 s lease.
            pool, devs = self.pool_cache.get()
            return pool.name, devs

        self.metrics = PluginMetrics.create()
        self.metrics.prepared.set(self.state.count())
        self.server = PluginServer(driver_name=driver_name, paths=paths, state=self.state,
                                   health=HealthModel(args.sysfs_root, devices, driver_name).snapshot,
                                   metrics=self.metrics, health_interval_s=args.health_interval)
        self.publisher: Any = None

    def publish_render(self, features: Features) -> Any:
        """What the publisher publishes: the pool without the devices the driver stops offering while
        a sibling of theirs is prepared (NVIDIA's passthrough; nothing for the others)."""
        hidden = self.profile.hidden_by(self.state.prepared_devices(), self.pool_cache.get(refresh_if_stale=False)[1])
        return self.render(features, hidden=hidden)

    def start(self, args: argparse.Namespace, publish_interval: float) -> None:
        self.publisher = start_publisher(args, self.publish_render, publish_interval, self.metrics.registry,
                                         self.profile.name)
        if self.publisher is not None and self.profile.hides_siblings:
            # Republish before answering the kubelet, as NVIDIA's plugin does after a prepare or unprepare
            # with PassthroughSupport: the prepared device's sibling leaves (or rejoins) the slice.
            self.state.after_change = self.publisher.run_once
        self.server.start()


def run(args: argparse.Namespace) -> int:
    from driver.metrics import parse_addr

    node = common.require_node_name(args)
    # Every flag is checked before anything starts: a bad --grace-period must not surface only at
    # SIGTERM (skipping the drain and socket clean-up), nor --publish-interval with sockets up.
    args.health_interval = common.positive_seconds(args.health_interval, "--health-interval")
    publish_interval = common.positive_seconds(args.publish_interval, "--publish-interval")
    grace_s = common.positive_seconds(args.grace_period, "--grace-period")
    api_deadline = common.positive_seconds(args.api_deadline, "--api-deadline")
    lock_wait = lock_wait_seconds(args.wait_for_lock)
    if args.metrics_addr:
        parse_addr(args.metrics_addr)
    if not args.no_publish:
        _check_local_switch(args)  # before anything is created or locked
    from driver.commands.publish import renderers_from_args

    renderers = renderers_from_args(args)
    args.profiles = [profile for profile, _ in renderers]
    dirs = [_node_dirs(args, profile.name, node) for profile in args.profiles]  # checked before anything opens
    claims = _claim_source(args, api_deadline)
    from driver.state.sources import StoreClaimSource

    if isinstance(claims, StoreClaimSource):  # local mode: register the Node as a kubelet does
        from driver.commands._register_node import register_node

        register_node(claims.store, node, dirs[0].registry)
    agents = [_Agent(args, profile, render, node, d, claims, len(renderers) > 1, lock_wait)
              for (profile, render), d in zip(renderers, dirs, strict=True)]
    from driver.commands._startup import empty_inventory_warning

    empty = empty_inventory_warning([agent.pool_cache.get(refresh_if_stale=False)[0] for agent in agents],
                                    args.sysfs_root)
    if empty:
        log.warning(empty, extra={"sysfs_root": args.sysfs_root})
    # --metrics-addr serves the first driver's metrics (a second driver's are kept, not exported).
    metrics_server = agents[0].metrics.serve(args.metrics_addr) if args.metrics_addr else None

    signals = _Signals()
    started: list[_Agent] = []
    try:
        for agent in agents:
            started.append(agent)
            agent.start(args, publish_interval)
    except BaseException:
        for agent in started:
            if agent.publisher is not None:
                agent.publisher.stop()
            _hand_over(agent.server, agent.state, grace_s)
        raise
    try:
        while signals.wait():  # SIGHUP: re-scan the inventory now (with --no-publish too)
            for agent in agents:
                _rescan(agent.pool_cache, agent.publisher)
    finally:
        log.info("shutting down")
        for agent in agents:
            if agent.publisher is not None:
                agent.publisher.stop()
        for agent in agents:
            _hand_over(agent.server, agent.state, grace_s)
        if metrics_server is not None:
            metrics_server.shutdown()
    return 0


class _Signals:
    """SIGTERM/SIGINT end the process, SIGHUP asks for a re-scan; installed together before the
    sockets exist, so no signal ever meets its default action (SIGHUP's would kill us)."""

    def __init__(self) -> None:
        self._wake = threading.Event()
        self.stop = self.rescan = False
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, self._on_hup)

    def _on_stop(self, *_: object) -> None:
        self.stop = True
        self._wake.set()

    def _on_hup(self, *_: object) -> None:
        self.rescan = True
        self._wake.set()

    def wait(self) -> bool:
        """Block until a signal; True for a re-scan request, False when asked to stop."""
        while not self.stop:
            self._wake.wait()
            self._wake.clear()
            if self.rescan and not self.stop:
                self.rescan = False
                return True
        return False


def _rescan(pool_cache: Any, publisher: Any) -> None:
    log.info("SIGHUP: re-scanning the inventory")
    try:
        pool_cache.refresh()
    except Exception:  # noqa: BLE001 - a failed re-scan keeps the last inventory; the process lives on
        log.exception("re-scan failed; keeping the previous inventory")
    if publisher is not None:
        publisher.trigger()


def _hand_over(server: Any, state: Any, grace_s: float) -> None:
    """Stop so that a successor never sees a write of ours once it owns the state directory
    (driver.state.ownership): refuse new calls, let running ones finish for the grace period,
    cancel and roll back the rest, remove our sockets, and only then release the lock."""
    cancel_s = min(grace_s, CANCEL_WINDOW_S)
    server.stop_serving(abort_after_s=grace_s + cancel_s)
    drained = state.shutdown(grace_s, cancel_s)
    server.finish_stop()
    if not drained:
        # Releasing the lock now could let a successor in while our call still writes; exiting
        # drops the lock and that thread together, like a SIGKILL (which the write order survives).
        log.error("a call is still writing after cancellation; exiting without releasing the state directory",
                  extra={"cancel_s": cancel_s})
        logging.shutdown()
        os._exit(1)
    state.close()
    log.info("state directory released")
