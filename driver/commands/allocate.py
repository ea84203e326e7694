"""`fake-dra allocate`: would these claims fit on this node? The reference allocator from the command line.

Reads multi-document YAML files (DeviceClass, ResourceSlice, ResourceClaim, Node; other kinds are
ignored with a warning), allocates the claims without `status.allocation` in file order and prints
the newly allocated claims as YAML. Exit 0 when all were allocated, 1 with the reason on stderr when
one cannot be (earlier claims are still printed), 2 for invalid input.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import yaml

from driver.allocator import allocate_claims
from driver.allocator.engine import DEFAULT_BUDGET
from driver.commands.common import add_features, features_from
from driver.errors import InputError

log = logging.getLogger("fake-dra.allocator")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "allocate",
        help="allocate ResourceClaims against ResourceSlices for one node (reference allocator)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--node", required=True, help="name of the node to allocate for")
    add_features(parser)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"search step budget per claim (default {DEFAULT_BUDGET})")
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files ('-' for stdin)")
    parser.set_defaults(func=run)


def load_documents(paths: list[str]) -> list[Any]:
    docs: list[Any] = []
    for path in paths:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text()
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            docs.extend(d for d in yaml.safe_load_all(text) if d is not None)
        except yaml.YAMLError as exc:
            raise InputError(f"{path}: invalid YAML: {exc}") from None
    return docs


def run(args: argparse.Namespace) -> int:
    if args.budget < 1:
        raise InputError(f"--budget: must be a positive integer, got {args.budget}")
    features = features_from(args)
    outcome = allocate_claims(load_documents(args.files), node=args.node, features=features, budget=args.budget)
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    allocated = [r.claim for r in outcome.allocated]
    if allocated:
        sys.stdout.write(yaml.safe_dump_all(allocated, sort_keys=False))
    if outcome.failed:  # allocation stops at the first claim that does not fit
        print(outcome.failed[0].reason, file=sys.stderr)
        return 1
    return 0
