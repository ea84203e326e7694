"""`fake-dra allocate`: would these claims fit on this node? The reference allocator from the command line.

Reads multi-document YAML files (DeviceClass, ResourceSlice, ResourceClaim, Node, also inside a
List as `fake-dra get -o yaml` prints them; other kinds are ignored with a warning), each checked
as kube-apiserver checks it: resource.k8s.io/v1 (v1 for Node), strictly against the Kubernetes 1.37
schema (an unknown field is an error naming its path; KEP-5941 fields need --features
DRASharedConsumableCapacity=true). Claims with `status.allocation` are in use. The claims without
it are one pod's claims: they are allocated together in one search, as kube-scheduler allocates a
pod's claims (in file order; a later claim that does not fit makes the search revise earlier
claims' choices; all or nothing). With --sequential each claim gets its own scheduling cycle instead, in file order,
each seeing the earlier ones as allocated (several pods scheduled one after the other).

Prints the newly allocated claims as YAML. Exit 0 when all were allocated, 1 with the reason on
stderr when the pod (or, with --sequential, a claim) cannot be (with --sequential the claims
allocated before it are still printed) or the node has no ResourceSlice at all, 2 for invalid input
(including no claim to allocate, or no slice with devices).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

import yaml

from driver import schema
from driver.allocator import Node, allocate_claims, split_objects
from driver.allocator.engine import DEFAULT_BUDGET
from driver.allocator.pools import node_matches
from driver.commands.common import add_features, add_node_name, features_from, require_node_name
from driver.errors import InputError
from driver.features import Features
from driver.fsutil import decode_text, read_text_file
from driver.yamlio import load_all

log = logging.getLogger("fake-dra.allocator")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "allocate",
        help="allocate ResourceClaims against ResourceSlices for one node (reference allocator)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_node_name(parser)
    add_features(parser)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"search step budget per search (default {DEFAULT_BUDGET})")
    parser.add_argument("--sequential", action="store_true",
                        help="one scheduling cycle per pending claim, in file order, instead of one search for all of them (one pod)")
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files ('-' for stdin)")
    parser.set_defaults(func=run)


GATE_HINT = "turn it on with --features DRASharedConsumableCapacity=true"


def load_documents(paths: list[str], features: Features = Features()) -> list[Any]:
    """Every document of `paths`, each checked as kube-apiserver checks it (driver.schema: served
    apiVersion, the 1.37 schema strictly, KEP-5941 fields only when `features` has the gate on);
    kinds the allocator does not read are passed on unchecked (it warns about them)."""
    docs: list[Any] = []
    for path in paths:
        if path == "-":
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
            text = raw if isinstance(raw, str) else decode_text(raw, "standard input")
        else:
            text = read_text_file(path, "file")
        for number, doc in enumerate(load_all(text, path), 1):
            if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
                # `fake-dra get -o yaml` (and kubectl) print several objects as a List: read its items.
                items = [(f"{number} item {i}", item) for i, item in enumerate(doc["items"], 1)]
            else:
                items = [(str(number), doc)]
            for label, item in items:
                if item is None:
                    continue
                if not isinstance(item, dict):
                    raise InputError(f"{path}: document {label}: expected a mapping with apiVersion and kind, "
                                     f"got {type(item).__name__}")
                schema.check(item, features, schema.document_label(path, label, item), GATE_HINT)
                docs.append(item)
    return docs


def check_claims(docs: list[Any], files: list[str]) -> None:
    """No claim to allocate is bad input (exit 2), not an empty success."""
    objs = split_objects(docs)
    if objs.pending:
        return
    where = ", ".join(files)
    if objs.allocated:
        raise InputError(f"{where}: every ResourceClaim already has status.allocation; no claims to allocate")
    raise InputError(f"{where}: no ResourceClaim; no claims to allocate")


def node_without_devices(docs: list[Any], node: str) -> str | None:
    """Why nothing can be allocated on `node` when no ResourceSlice serves it (else None): a
    verdict of its own, clearer than "no device matches the selectors"."""
    objs = split_objects(docs)
    with_devices = [s for s in objs.slices if (s.get("spec") or {}).get("devices")]
    if not with_devices:
        return f"node {node}: the input has no ResourceSlice with devices; nothing can be allocated"
    labels = (objs.nodes.get(node, {}).get("metadata") or {}).get("labels") or {}
    target = Node(node, dict(labels))
    if any(_serves(s, target) for s in with_devices):
        return None
    others = sorted({str((s.get("spec") or {}).get("nodeName")) for s in with_devices
                     if (s.get("spec") or {}).get("nodeName")})
    hint = f" (the slices are for node {', '.join(others)})" if others else ""
    return f"node {node}: no ResourceSlice publishes devices for this node{hint}; nothing can be allocated there"


def _serves(slice_obj: dict, node: Node) -> bool:
    spec = slice_obj.get("spec") or {}
    name = (slice_obj.get("metadata") or {}).get("name")
    where = f"ResourceSlice {name}: spec"
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return node_matches(node, spec.get("nodeName"), bool(spec.get("allNodes")), spec.get("nodeSelector"),
                            f"{where}.nodeSelector")
    if spec.get("perDeviceNodeSelection"):
        return any(node_matches(node, d.get("nodeName"), bool(d.get("allNodes")), d.get("nodeSelector"),
                                f"{where}.devices[{i}].nodeSelector") for i, d in enumerate(spec.get("devices") or ()))
    return False


def run(args: argparse.Namespace) -> int:
    if args.budget < 1:
        raise InputError(f"--budget: must be a positive integer, got {args.budget}")
    node = require_node_name(args)
    features = features_from(args)
    docs = load_documents(args.files, features)
    check_claims(docs, args.files)
    outcome = allocate_claims(docs, node=node, features=features, budget=args.budget,
                              sequential=args.sequential)
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    allocated = [r.claim for r in outcome.allocated]
    if allocated:
        sys.stdout.write(yaml.safe_dump_all(allocated, sort_keys=False))
    if outcome.failed:  # one pod: nothing allocated; sequential: stops at the first claim that does not fit
        print(node_without_devices(docs, node) or outcome.failed[0].reason, file=sys.stderr)
        return 1
    return 0
