"""`fake-dra discover`: print what discovery finds under a sysfs root (table for people, JSON for tools).

Warnings about skipped devices go to stderr (log) and are listed in the output, so a broken host is
visible without reading logs; the exit code stays 0 unless the root itself is unusable (2) or --strict
is given and something was skipped (1).
"""

from __future__ import annotations

import argparse
import json

from driver.commands import common
from driver.tables import mib, speed, table
from driver.discovery import discover, inventory_to_dict
from driver.hardware import load_catalog
from driver.model.inventory import Inventory


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "discover",
        help="discover GPUs, vGPU types and SR-IOV NICs under a sysfs root",
        description="Read PCI devices under --sysfs-root (real /sys or a fake tree from make-sysfs) and print "
        "the node's inventory.",
    )
    common.add_sysfs_root(parser)
    common.add_flag(parser, "--driver-config", None, "driver config file (hardware: section adds/overrides models)")
    parser.add_argument("-o", "--output", choices=["table", "json"], default="table", help="output format")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when any device was skipped with a warning (for host checks in CI)")
    parser.set_defaults(func=run)


def render_table(inv: Inventory) -> str:
    out = [f"GPUs ({len(inv.gpus)})"]
    if inv.gpus:
        out.append(table(
            # The catalog's model key is in `-o json`; the product name is what people recognise.
            ["IDX", "PCI", "PRODUCT", "MEMORY", "SMS", "MIG", "VGPU TYPES", "NUMA", "PCIE ROOT"],
            [
                [g.index, g.pci.address, g.model.product_name, mib(g.model.memory_mib),
                 g.model.multiprocessors, f"{len(g.model.mig_profiles)} profiles" if g.model.mig_capable else "no",
                 len(g.mdev_types) or "-", g.pci.numa_node, g.pci.pcie_root]
                for g in inv.gpus
            ],
            wrap=[2],  # a product name wraps at its spaces rather than widen the table
        ))
    out.append("")
    plain = sum(1 for n in inv.nics if not n.sriov)
    out.append(f"NICs ({len(inv.nics) - plain} SR-IOV PFs, {sum(len(n.vfs) for n in inv.nics)} VFs, "
               f"{plain} ports without SR-IOV)")
    if inv.nics:
        out.append(table(
            ["IDX", "PCI", "INTERFACE", "PRODUCT", "SPEED", "VFS", "NUMA", "PCIE ROOT"],
            [
                [n.index, n.pci.address, n.interface, n.product_name, speed(n.speed_mbps),
                 f"{len(n.vfs)}/{n.total_vfs}" if n.sriov else "no SR-IOV", n.pci.numa_node, n.pci.pcie_root]
                for n in inv.nics
            ],
            wrap=[3],
        ))
    out.append("")
    out.append(f"Warnings ({len(inv.warnings)})")
    out.extend(f"  {w}" for w in inv.warnings)
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    config = common.load_driver_config(args.driver_config)
    inventory = discover(args.sysfs_root, load_catalog(config.get("hardware")))
    if args.output == "json":
        print(json.dumps(inventory_to_dict(inventory), indent=2))
    else:
        print(render_table(inventory), end="")
    return 1 if args.strict and inventory.warnings else 0
