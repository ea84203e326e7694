"""`fake-dra probe`: talk to a running plugin over its sockets the way the kubelet does.

    fake-dra probe                         liveness (the DaemonSet's check): the registration socket
                                           exists and the DRA service answers an empty
                                           NodePrepareResources call (no side effects). Exit 0/1.
    fake-dra probe --wait 30               the same, retried until the plugin is up (scripts)
    fake-dra probe --prepare CLAIM         NodePrepareResources for a claim of the local store, as the
                                           kubelet sends it ({namespace, name, uid}); prints the
                                           devices, the CDI device IDs and the CDI spec's env
    fake-dra probe --unprepare CLAIM       NodeUnprepareResources (the claim may already be deleted:
                                           its uid is then read from its CDI spec)
    fake-dra probe --health [--device D] [--until STATE]
                                           the device health stream (NodeWatchResources); --until
                                           waits up to --timeout for the devices to reach STATE

Exit 1 when the plugin is not reachable or answers the claim with an error, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from driver.commands import _store, common
from driver.errors import FakeDraError, InputError, NotFoundError

HEALTH_STATES = ("HEALTHY", "UNHEALTHY", "UNKNOWN")
# The kubelet gives NodePrepareResources/NodeUnprepareResources 45 s (pkg/kubelet/cm/dra: the plugin
# client's default call timeout). The plugin plans within the deadline it is given (its status
# writer starts a write only with 5 s left), so playing the kubelet with less changes what it does.
KUBELET_CALL_TIMEOUT_S = 45.0
QUICK_TIMEOUT_S = 5.0  # a liveness probe's answer, or a health snapshot, comes at once or not at all


class ProbeFailed(FakeDraError):
    """The plugin is not there or did not do what was asked (exit 1)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "probe", help="liveness check, or prepare/unprepare a claim and watch health over the plugin's sockets",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_driver_name(parser)
    common.add_personality(parser)
    common.add_node_name(parser)
    common.add_kubelet_dirs(parser, sockets_only=True)
    common.add_flag(parser, "--timeout", None,
                    f"seconds for each gRPC call, and for --until (default: {KUBELET_CALL_TIMEOUT_S:g} for --prepare and "
                    f"--unprepare, the kubelet's own deadline; {QUICK_TIMEOUT_S:g} for the liveness check and --health)")
    common.add_flag(parser, "--wait", "0", "retry until the plugin answers, for up to this many seconds "
                    "(default 0: try once)", metavar="SECONDS")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--prepare", metavar="CLAIM", help="prepare this ResourceClaim of the local store")
    action.add_argument("--unprepare", metavar="CLAIM", help="unprepare this ResourceClaim")
    action.add_argument("--health", action="store_true", help="print the device health the plugin streams")
    parser.add_argument("--device", action="append", default=[], metavar="NAME",
                        help="--health: only these devices (repeatable)")
    parser.add_argument("--until", choices=HEALTH_STATES, help="--health: wait until the devices are in this state")
    common.add_flag(parser, "--cdi-root", None, "the plugin's CDI spec directory, to show a prepared claim's spec "
                    f"(default: as for `run`: /var/run/cdi in a cluster or with --kubelet-root, else "
                    f"{common.LOCAL_STATE_HINT}/cdi)")
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _check_flags(args: argparse.Namespace) -> None:
    """Durations become floats on `args`; the socket and CDI directories are resolved like `run` does."""
    if args.timeout is None:
        args.timeout = KUBELET_CALL_TIMEOUT_S if (args.prepare or args.unprepare) else QUICK_TIMEOUT_S
    args.timeout = common.positive_seconds(args.timeout, "--timeout")
    args.wait = common.seconds(args.wait, "--wait")
    if args.wait < 0:
        raise InputError(f"--wait: must be zero or positive, got {args.wait!r}")
    if (args.device or args.until) and not args.health:
        raise InputError("--device and --until go with --health")
    from driver.commands._personality import profiles_from_args
    from driver.plugin.server import SocketPaths

    # The personality's first driver unless --driver-name picks another (NVIDIA's SR-IOV plugin).
    args.profile = profiles_from_args(args, config={})[0]
    node = getattr(args, "node_name", None)
    args.dirs = common.node_dirs(args, args.driver_name, node, sockets_only=not (args.prepare or args.unprepare))
    args.sockets = SocketPaths.for_driver(args.dirs.plugins, args.dirs.registry, args.driver_name, args.dirs.defaults)
    if args.prepare or args.unprepare:
        common.store_dir(args, write=False)  # a bad --store is named before the plugin is called


def _client(args: argparse.Namespace):
    """A KubeletClient on the plugin's DRA socket, once both sockets exist and an empty call answers."""
    from driver.plugin.client import KubeletClient, rpc_error_text

    reg, dra = args.sockets.registration, args.sockets.dra
    deadline = time.monotonic() + args.wait
    while True:
        missing = next((s for s in (reg, dra) if not s.exists()), None)
        problem = f"{missing} does not exist" if missing else ""
        if not problem:
            client = KubeletClient(str(args.dirs.registry), args.driver_name, timeout_s=args.timeout,
                                   endpoint=str(dra), dra_version="v1")
            try:
                client.prepare([])
                return client
            except Exception as exc:  # noqa: BLE001 - any transport failure means "not (yet) alive"
                client.close()
                problem = f"DRA call on {dra} failed: {rpc_error_text(exc) or f'{type(exc).__name__}: {exc}'}"
        if time.monotonic() >= deadline:
            waited = f" (waited {args.wait:g} s)" if args.wait else ""
            raise ProbeFailed(f"{problem}{waited}")
        time.sleep(0.2)


def run(args: argparse.Namespace) -> int:
    from driver.plugin.client import rpc_error_text

    _check_flags(args)
    client = _client(args)
    try:
        if args.prepare:
            return _prepare(client, args)
        if args.unprepare:
            return _unprepare(client, args)
        if args.health:
            return _health(client, args)
        return 0
    except Exception as exc:
        problem = rpc_error_text(exc)  # the plugin went away or refused after the liveness call
        if problem is None:
            raise
        raise ProbeFailed(f"call on {args.sockets.dra} failed: {problem}") from None
    finally:
        client.close()


def _claim_ref(args: argparse.Namespace, name: str, allow_missing: bool) -> tuple[str, str, str]:
    ns = _store.namespace(args)
    try:
        claim = _store.open_store(args, write=False).get("resourceclaims", ns, name)
        return ns, name, str(claim["metadata"]["uid"])
    except NotFoundError:
        if not allow_missing:
            raise NotFoundError(f'resourceclaims.resource.k8s.io "{name}" not found in namespace "{ns}" of the '
                                "local store (create it with `fake-dra apply -f FILE`)") from None
    for ref in _prepared_specs(args):
        if (ref["namespace"], ref["name"]) == (ns, name):
            return ns, name, ref["uid"]
    raise NotFoundError(f"claim {ns}/{name} is neither in the local store nor in a CDI spec under {args.dirs.cdi}")


def _prepared_specs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The claims (namespace, name, uid) recorded in this driver's CDI specs."""
    out = []
    key = f"{args.driver_name}/prepared"
    for path in sorted(args.dirs.cdi.glob(f"{args.profile.cdi.file_prefix}*.json")):
        try:
            note = json.loads(path.read_text()).get("annotations", {}).get(key)
            ref = json.loads(note) if note else None
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(ref, dict) and {"namespace", "name", "uid"} <= set(ref):
            out.append(ref)
    return out


def _spec_env(args: argparse.Namespace, uid: str) -> tuple[Path, dict[str, list[str]]]:
    """The claim's CDI spec path and its env per CDI device name ({} when unreadable)."""
    from driver.state.cdi import CdiWriter

    path = CdiWriter(args.dirs.cdi, args.driver_name, args.profile.cdi).spec_path(uid)
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError):
        return path, {}
    common_env = list((spec.get("containerEdits") or {}).get("env") or [])  # every container of the claim
    return path, {d.get("name", ""): common_env + list((d.get("containerEdits") or {}).get("env") or [])
                  for d in spec.get("devices") or [] if isinstance(d, dict)}


def _prepare(client, args: argparse.Namespace) -> int:
    ns, name, uid = _claim_ref(args, args.prepare, allow_missing=False)
    answer = client.prepare([(ns, name, uid)]).get(uid)
    if answer is None:
        raise ProbeFailed(f"prepare {ns}/{name}: the plugin's answer has no entry for claim uid {uid}")
    if answer.error:
        raise ProbeFailed(f"prepare {ns}/{name} failed: {answer.error}")
    print(f"prepared {ns}/{name}: {len(answer.devices)} device{'s' if len(answer.devices) != 1 else ''}")
    for d in answer.devices:
        print(f"  {', '.join(d.request_names)}: {d.device_name} (pool {d.pool_name})")
    path, env = _spec_env(args, uid)
    lines = sorted({e for d in answer.devices for cdi_id in d.cdi_device_ids
                    for e in env.get(cdi_id.split("=", 1)[-1], [])})
    if lines:
        print("container env from the CDI spec:")
        print("\n".join(f"  {line}" for line in lines))
    print("CDI devices:")
    print("\n".join(f"  {cdi_id}" for d in answer.devices for cdi_id in d.cdi_device_ids))
    print(f"CDI spec: {path}" if path.exists() else f"CDI spec: {path} (not found: is --cdi-root the plugin's?)")
    return 0


def _unprepare(client, args: argparse.Namespace) -> int:
    ns, name, uid = _claim_ref(args, args.unprepare, allow_missing=True)
    error = client.unprepare([(ns, name, uid)]).get(uid)
    if error is None:
        raise ProbeFailed(f"unprepare {ns}/{name}: the plugin's answer has no entry for claim uid {uid}")
    if error:
        raise ProbeFailed(f"unprepare {ns}/{name} failed: {error}")
    path, _ = _spec_env(args, uid)
    print(f"unprepared {ns}/{name} (CDI spec {'still present: ' + str(path) if path.exists() else 'removed'})")
    return 0


def _health(client, args: argparse.Namespace) -> int:
    wanted = set(args.device)
    last: list[Any] = []
    reached = False
    for snapshot in client.watch_health(timeout=args.timeout):
        last = snapshot
        known = {d.device_name for d in snapshot}
        unknown = sorted(wanted - known)
        if unknown:
            raise InputError(f"--device: the plugin reports no device {unknown[0]!r} "
                             f"({len(known)} devices, e.g. {', '.join(sorted(known)[:3])})")
        chosen = [d for d in snapshot if not wanted or d.device_name in wanted]
        reached = args.until is None or all(d.health == args.until for d in chosen)
        if reached:
            break
    if not last:
        raise ProbeFailed(f"the health stream sent nothing within {args.timeout:g} s")
    _print_health(last, wanted)
    if not reached:
        raise ProbeFailed(f"--until {args.until}: not reached within {args.timeout:g} s")
    return 0


def _print_health(snapshot: list[Any], wanted: set[str]) -> None:
    from driver.tables import table

    counts = {s: sum(d.health == s for d in snapshot) for s in HEALTH_STATES}
    print(f"{len(snapshot)} devices: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    shown = [d for d in snapshot if (d.device_name in wanted if wanted else d.health != "HEALTHY")]
    if shown:
        print(table(["DEVICE", "HEALTH", "MESSAGE"], [[d.device_name, d.health, d.message or "-"] for d in shown],
                    wrap=[2]))
