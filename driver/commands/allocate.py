"""`fake-dra allocate`: would these claims fit on this node? The reference allocator from the command line.

Reads multi-document YAML files (DeviceClass, ResourceSlice, ResourceClaim, Node; other kinds are
ignored with a warning). Claims with `status.allocation` are in use. The claims without it are one
pod's claims: they are allocated together in one search, as kube-scheduler allocates a pod's claims
(in file order; a later claim that does not fit makes the search revise earlier claims' choices;
all or nothing). With --sequential each claim gets its own scheduling cycle instead, in file order,
each seeing the earlier ones as allocated (several pods scheduled one after the other).

Prints the newly allocated claims as YAML. Exit 0 when all were allocated, 1 with the reason on
stderr when the pod (or, with --sequential, a claim) cannot be (with --sequential the claims
allocated before it are still printed), 2 for invalid input.
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
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"search step budget per search (default {DEFAULT_BUDGET})")
    parser.add_argument("--sequential", action="store_true",
                        help="one scheduling cycle per pending claim, in file order, instead of one search for all of them (one pod)")
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
    outcome = allocate_claims(load_documents(args.files), node=args.node, features=features, budget=args.budget,
                              sequential=args.sequential)
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    allocated = [r.claim for r in outcome.allocated]
    if allocated:
        sys.stdout.write(yaml.safe_dump_all(allocated, sort_keys=False))
    if outcome.failed:  # one pod: nothing allocated; sequential: stops at the first claim that does not fit
        print(outcome.failed[0].reason, file=sys.stderr)
        return 1
    return 0
