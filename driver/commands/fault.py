"""`fake-dra fault`: inject or clear a simulated device fault in a (fake) sysfs tree.

The running plugin's health loop picks the change up within one --health-interval and streams the
device (and every partition or VF on it) as UNHEALTHY with the message (see driver.state.health).
"""

from __future__ import annotations

import argparse
import sys

from driver.commands import common


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fault",
        help="mark a PCI device of a fake sysfs tree unhealthy (or healthy again)",
        description="Write or remove <sysfs-root>/bus/pci/devices/<BDF>/fake-dra-fault.",
    )
    common.add_sysfs_root(parser)
    parser.add_argument("--device", required=True, help="PCI address, e.g. 0000:07:00.0")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--message", help="fault message reported to the kubelet (at most 1024 characters)")
    group.add_argument("--clear", action="store_true", help="remove the fault")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from driver.discovery import set_fault
    from driver.state.health import check_bdf

    root = common.existing_dir(args.sysfs_root, "--sysfs-root")
    bdf = check_bdf(args.device)
    set_fault(root, bdf, None if args.clear else args.message)
    print(f"{bdf}: {'fault cleared' if args.clear else 'fault set'}", file=sys.stderr)
    return 0
