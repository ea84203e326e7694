"""`fake-dra probe`: the DaemonSet's gRPC liveness check, made the way the kubelet talks to the plugin.

It checks that the registration socket exists and that the DRA service answers a
NodePrepareResources call with no claims (a real gRPC round trip through the same server and
thread pool the kubelet uses, with no side effects). Exit 0 healthy, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from driver.commands import common


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("probe", help="liveness: one empty DRA gRPC call over the plugin's socket")
    common.add_driver_name(parser)
    common.add_flag(parser, "--kubelet-plugins-dir", "/var/lib/kubelet/plugins", "kubelet plugins directory")
    common.add_flag(parser, "--kubelet-registry-dir", "/var/lib/kubelet/plugins_registry",
                    "kubelet plugin registry directory")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds for the gRPC call (default 5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from driver.plugin.client import KubeletClient

    reg = Path(args.kubelet_registry_dir) / f"{args.driver_name}-reg.sock"
    dra = Path(args.kubelet_plugins_dir) / args.driver_name / "dra.sock"
    for sock in (reg, dra):
        if not sock.exists():
            print(f"probe: {sock} does not exist", file=sys.stderr)
            return 1
    client = KubeletClient(args.kubelet_registry_dir, args.driver_name, timeout_s=args.timeout,
                           endpoint=str(dra), dra_version="v1")
    try:
        client.prepare([])
    except Exception as exc:  # noqa: BLE001 - any failure means "not alive"
        print(f"probe: DRA call on {dra} failed: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0
