"""`fake-dra fault`: inject or clear a simulated device fault in a (fake) sysfs tree.

The running plugin's health loop picks the change up within one --health-interval and streams the
device (and every partition or VF on it) as UNHEALTHY with the message (see driver.state.health).
"""

from __future__ import annotations

import argparse
import sys

from driver.commands import common
from driver.errors import InputError
from driver.model.pci import normalize_pci_address

# The kubelet's limit for a health message (DRAResourceHealth; docs/architecture.md §3, Health);
# the message is sent as is.
MAX_MESSAGE = 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fault",
        help="mark a PCI device of a fake sysfs tree unhealthy (or healthy again)",
        description="Write or remove <sysfs-root>/bus/pci/devices/<BDF>/fake-dra-fault.",
    )
    common.add_sysfs_root(parser)
    parser.add_argument("--device", required=True,
                        help="PCI address, e.g. 0000:07:00.0 (nvidia-smi's 00000000:07:00.0, upper case and "
                             "lspci's 07:00.0 are accepted)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--message", help=f"fault message reported to the kubelet (one line, at most {MAX_MESSAGE} "
                                         "characters)")
    group.add_argument("--clear", action="store_true", help="remove the fault")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from driver.discovery import FAULT_FILE, set_fault

    bdf = normalize_pci_address(args.device, "--device")
    message = None if args.clear else args.message.strip().replace("\n", " ")
    if message is not None and len(message) > MAX_MESSAGE:
        raise InputError(f"--message: {len(message)} characters; the kubelet accepts at most {MAX_MESSAGE}")
    root = common.existing_dir(args.sysfs_root, "--sysfs-root")
    try:
        set_fault(root, bdf, message)
    except OSError as exc:
        where = root / "bus" / "pci" / "devices" / bdf / FAULT_FILE
        raise InputError(f"--sysfs-root {root}: cannot write {where}: {exc.strerror or exc} (faults are injected "
                         "into fake sysfs trees made by make-sysfs)") from None
    print(f"{bdf}: {'fault cleared' if args.clear else 'fault set'}", file=sys.stderr)
    return 0
