"""`fake-dra probe`: the DaemonSet's gRPC liveness check, made the way the kubelet talks to the plugin.

It checks that the registration socket exists and that the DRA service answers a
NodePrepareResources call with no claims (a real gRPC round trip through the same server and
thread pool the kubelet uses, with no side effects). Exit 0 healthy, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from driver.commands import common


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("probe", help="liveness: one empty DRA gRPC call over the plugin's socket")
    common.add_driver_name(parser)
    common.add_node_name(parser)
    common.add_kubelet_dirs(parser, sockets_only=True)
    common.add_flag(parser, "--timeout", "5", "seconds for the gRPC call (default 5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from driver.plugin.client import KubeletClient

    timeout = common.positive_seconds(args.timeout, "--timeout")
    dirs = common.node_dirs(args, args.driver_name, getattr(args, "node_name", None), sockets_only=True)
    reg = dirs.registry / f"{args.driver_name}-reg.sock"
    dra = dirs.plugins / args.driver_name / "dra.sock"
    for sock in (reg, dra):
        if not sock.exists():
            print(f"probe: {sock} does not exist", file=sys.stderr)
            return 1
    client = KubeletClient(str(dirs.registry), args.driver_name, timeout_s=timeout,
                           endpoint=str(dra), dra_version="v1")
    try:
        client.prepare([])
    except Exception as exc:  # noqa: BLE001 - any failure means "not alive"
        print(f"probe: DRA call on {dra} failed: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0
