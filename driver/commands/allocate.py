"""`fake-dra allocate`: would these claims fit on this node (or on which nodes)? The reference
allocator from the command line.

Reads multi-document YAML or JSON files (DeviceClass, ResourceSlice, ResourceClaim, Node, also inside
a List as `fake-dra get -o yaml` prints them; other kinds are ignored with a warning), each checked as
kube-apiserver checks it: resource.k8s.io/v1 (v1 for Node), strictly against the Kubernetes 1.37
schema, so an unknown field is an error naming its path (driver.schema). KEP-5941 fields are known
to that check whatever --features says: those are the scheduler's gates, and objects carrying the
fields come from an apiserver that has the gate. Claims with `status.allocation` are in use. The
claims without it are one pod's claims: they are allocated together in one search, as kube-scheduler
allocates a pod's claims (in file order; a later claim that does not fit makes the search revise
earlier claims' choices; all or nothing). With --sequential each claim gets its own scheduling cycle instead, in file order,
each seeing the earlier ones as allocated (several pods scheduled one after the other).

On one node (--node-name): prints the newly allocated claims (YAML, or a JSON List with -o json).
Exit 0 when all were allocated, 1 with the reason on stderr when the pod (or, with --sequential, a
claim) cannot be (with --sequential the claims allocated before it are still printed) or the node has
no ResourceSlice at all, 2 for invalid input (including no claim to allocate, or no slice with devices).

On every node (--all-nodes): the pod is tried on each node that has slices or a Node object, as
kube-scheduler's Filter does, without stopping at the first that fits. Prints one object: `claims`,
`feasibleNodes` (in name order), `results` (per feasible node, each claim's allocation there),
`reasons` (per other node, why not), `filterMs` (time spent filtering, not reading or explaining) and
`readMs` (reading the files, parsing the objects and gathering each node's pools).
Exit 0 when some node fits, 1 when none does.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import yaml

from driver import schema
from driver.allocator import ClusterView, Node, allocate_pending, cluster_view, split_objects
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
    parser.add_argument("--all-nodes", action="store_true",
                        help="try the pod on every node (those with slices or a Node object) instead of one")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml", help="output format (default yaml)")
    add_features(parser)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"search step budget per search (default {DEFAULT_BUDGET})")
    parser.add_argument("--sequential", action="store_true",
                        help="one scheduling cycle per pending claim, in file order, instead of one search for all of them (one pod)")
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files ('-' for stdin)")
    parser.set_defaults(func=run)


# What allocate's check knows: the 1.37 schema plus the KEP-5941 fields. `--features` are the
# scheduler's gates; the objects were stored by an apiserver, and ones that carry KEP-5941 fields were
# stored by one with the gate (a scheduler without it is modelled by =false, reading such slices).
_STORED_BY = Features(shared_consumable_capacity=True)


def load_documents(paths: list[str]) -> list[Any]:
    """Every document of `paths` (a List's items one by one), each checked as kube-apiserver checks
    it (driver.schema: served apiVersion, the schema strictly); kinds the allocator does not read are
    passed on unchecked (it warns about them)."""
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
                schema.check(item, _STORED_BY, schema.document_label(path, label, item))
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


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """Read a possibly fleet-sized input without the garbage collector: reading builds millions of
    objects and none is garbage, so each collection would only rescan them. What was read is then
    frozen (never scanned again), which keeps later collections as cheap as in a small process."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    if args.budget < 1:
        raise InputError(f"--budget: must be a positive integer, got {args.budget}")
    if args.all_nodes:
        if args.node_name:
            raise InputError("--all-nodes tries every node: drop --node-name (or unset $NODE_NAME / $FAKE_DRA_NODE_NAME)")
        if args.sequential:
            raise InputError("--all-nodes tries one pod on every node; --sequential (several pods) needs --node-name")
    node = None if args.all_nodes else require_node_name(args)
    features = features_from(args)
    started = time.perf_counter()
    with _reading():
        docs = load_documents(args.files)
        check_claims(docs, args.files)
        objs = split_objects(docs)
        view = cluster_view(objs, features)
        if args.all_nodes:
            view.prepare()  # reading and indexing, not filtering: done before the filter's clock starts
    for warning in objs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if features.shared_consumable_capacity is None and view.uses_kep5941():
        print("note: the slices use KEP-5941 fields (valueFrom, counter requestPolicy), which only an apiserver with "
              "DRASharedConsumableCapacity keeps: allocating with it on (not a Kubernetes 1.37 gate; "
              "--features DRASharedConsumableCapacity=false for a scheduler without it)", file=sys.stderr)
    if node is None:
        return _all_nodes(view, objs.pending, args, time.perf_counter() - started)
    outcome = allocate_pending(view, objs.pending, node=node, budget=args.budget, sequential=args.sequential)
    allocated = [r.claim for r in outcome.allocated]
    if args.output == "json":
        sys.stdout.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": allocated}, indent=2) + "\n")
    elif allocated:
        sys.stdout.write(yaml.safe_dump_all(allocated, sort_keys=False))
    if outcome.failed:  # one pod: nothing allocated; sequential: stops at the first claim that does not fit
        print(node_without_devices(docs, node) or outcome.failed[0].reason, file=sys.stderr)
        return 1
    return 0


def _all_nodes(view: ClusterView, pending: list[dict[str, Any]], args: argparse.Namespace, read_s: float) -> int:
    nodes = view.nodes()
    if not nodes:
        raise InputError(f"{', '.join(args.files)}: no node to try: no ResourceSlice names a node (spec.nodeName) "
                         "and there is no Node object")
    outcome = view.filter(pending, nodes, budget=args.budget)
    out = {**outcome.as_dict(), "readMs": round(read_s * 1e3, 3)}
    if args.output == "json":
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(out, sort_keys=False))
    if not outcome.feasible:
        print(f"the pod fits on none of the {len(nodes)} nodes (reasons per node in the output)", file=sys.stderr)
        return 1
    return 0
