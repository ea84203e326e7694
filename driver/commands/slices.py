"""`fake-dra slices`: discover a (real or fake) sysfs tree and print the node's ResourceSlices.

The same objects the publisher would write (generation 1), as multi-document YAML or a JSON List,
so users can diff what a gate combination, a driver config or a personality changes before deploying
it. A personality of two drivers prints both pools, the first driver's slices first.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from driver.commands import common
from driver.commands._personality import profiles_from_args
from driver.slices import to_resource_slices


class _NoAliasDumper(yaml.SafeDumper):
    """Plain YAML without &anchors, so the output can be pasted into kubectl as-is."""

    def ignore_aliases(self, data: Any) -> bool:  # noqa: ARG002 - yaml API
        return True


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "slices",
        help="print the ResourceSlices this node would publish",
        description="Discover devices under --sysfs-root and print the node's ResourceSlice objects.",
    )
    common.add_sysfs_root(parser)
    common.add_node_name(parser)
    common.add_driver_name(parser)
    common.add_features(parser)
    common.add_flag(parser, "--driver-config", None, "driver config file (hardware:, slices:, nvidia: and sriov: "
                    "sections)")
    common.add_personality(parser)
    parser.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml", help="output format")
    parser.add_argument("--generation", type=_generation, default=1, help="pool generation to stamp (default 1)")
    parser.set_defaults(func=run)


def _generation(value: str) -> int:
    number = int(value)  # ValueError: argparse says "invalid _generation value"; named below
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {number}")
    return number


_generation.__name__ = "int"  # argparse and FAKE_DRA_GENERATION name the type in their messages


def dump(objects: list[dict], output: str) -> str:
    if output == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    return yaml.dump_all(objects, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False)


def run(args: argparse.Namespace) -> int:
    # Imported here: discovery is an I/O edge and may be absent in minimal builds of the core.
    from driver.discovery import discover
    from driver.hardware import load_catalog

    node = common.require_node_name(args)
    config = common.load_driver_config(args.driver_config)
    profiles = profiles_from_args(args, config)
    common.require_driver_name(args)
    root = common.existing_dir(args.sysfs_root, "--sysfs-root")
    catalog = load_catalog(config.get("hardware"))
    inventory = discover(root, catalog)
    features = common.features_from(args)
    pools = [p.render(inventory, features, node_name=node) for p in profiles]
    for warning in (*inventory.warnings, *(w for pool in pools for w in pool.warnings)):
        print(f"warning: {warning}", file=sys.stderr)
    sys.stdout.write(dump([obj for pool in pools for obj in to_resource_slices(pool, args.generation)], args.output))
    return 0
