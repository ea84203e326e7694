"""`fake-dra apply -f FILE|DIR|-`: create or update objects in the local object store, as kubectl apply does.

    fake-dra apply -f claim.yaml                 create (or update) every object in the file
    fake-dra apply -f manifests/                 every .json, .yaml and .yml file in it, sorted by
                                                 name (-R: its subdirectories too)
    fake-dra apply -f claim.yaml --allocate      ... and let the reference allocator allocate the
                                                 claims that have no status.allocation yet
    cat claims.yaml | fake-dra apply -f -        from stdin

Accepts DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice (resource.k8s.io/v1),
Node and Pod (v1), several per file. Every document is checked before anything is written, strictly
against the Kubernetes 1.37 schema (an unknown field is an error, as with kubectl's default strict
field validation): one invalid document leaves the store unchanged. See driver/store/apply.py for
the API-server rules applied.

--allocate plays kube-scheduler for one pod that uses every pending claim of this apply: they are
allocated together on the node whose slices are in the store (or --node-name), against the store's
DeviceClasses, slices and already allocated claims, with the simulated control plane's gates
(STORE/featuregates.yaml, or --features). If they do not fit, nothing is written (exit 1).
Exit 0 on success, 1 when allocation or a precondition fails, 2 for invalid input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from driver.commands import _objects, _store, common
from driver.errors import AllocationError, InputError
from driver.store.apply import Planned, commit, plan


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "apply", help="create or update objects in the local object store (kubectl apply; --allocate)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True  # flags anywhere, as kubectl parses them (driver.cli._Parser)
    _store.add_filename_flags(parser, "apply (one or more objects each)")
    parser.add_argument("--allocate", action="store_true",
                        help="allocate the claims without status.allocation with the reference allocator")
    common.add_flag(parser, "--node-name", None,
                    "--allocate: node to allocate on (default: the only node with slices in the store)")
    common.add_flag(parser, "--features", None,
                    "--allocate: scheduler gates G=true|false,... (default: the store's featuregates.yaml)")
    parser.add_argument("-o", "--output", choices=["text", "yaml", "json", "name"], default="text",
                        help="text (default): one line per object; yaml/json: the stored objects")
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    documents = _store.read_documents(args, "apply")
    store = _store.open_store(args, write=True)

    from driver.publish.backend import LocalGateConfig

    def prepare() -> tuple[list[Planned], dict[int, tuple[str, list[tuple[str, str]]]]]:
        gates = LocalGateConfig.load(store.root)  # the simulated apiserver decides which fields exist
        planned = plan(store, documents, namespace=_store.namespace(args), explicit_namespace=args.namespace is not None,
                       features=gates.apiserver_features(), gate_hint=gates.gate_hint(store.root))
        return planned, (_allocate(store, planned, args) if args.allocate else {})

    # A dry pass first: bad input is refused before the store (or its lock file) is created. The
    # pass under the lock is the one that counts: the store may have changed in between. Reading
    # (--allocate: the allocated claims) and writing in one transaction is what keeps a racing
    # `fake-dra schedule` from giving the same device away (issue 29): the scheduler's writes are
    # checked against the pools this apply allocated from (driver/schedule/binding.py).
    prepare()
    with store.locked():
        planned, allocations = prepare()
        applied = commit(store, planned)
    if args.allocate and not allocations:
        print("--allocate: no claim of this apply is waiting for an allocation (all are already allocated)", file=sys.stderr)
    _print(applied, allocations, args.output)
    return 0


def _print(applied, allocations: dict[int, tuple[str, list[tuple[str, str]]]], output: str) -> None:
    if output in ("yaml", "json"):
        objs = [a.obj for a in applied]
        sys.stdout.write(_objects.dump(objs[0] if len(objs) == 1 else _objects.as_list(objs), output))
        return
    for a in applied:
        ref = a.planned.ref
        print(ref if output == "name" else f"{ref} {a.action}")
        if output == "text" and id(a.planned) in allocations:
            node, results = allocations[id(a.planned)]
            shown = ", ".join(f"{request}={device}" for request, device in results)
            print(f"{ref} allocated on {node}: {shown}")


def _pick_node(slices: list[dict[str, Any]], wanted: str | None, store_root: Path) -> str:
    nodes = sorted({str((s.get("spec") or {}).get("nodeName")) for s in slices if (s.get("spec") or {}).get("nodeName")})
    if wanted:
        if wanted not in nodes:
            have = f"nodes with slices: {', '.join(nodes)}" if nodes else "no node has slices there"
            raise InputError(f"--node-name {wanted}: no ResourceSlices of that node in the local store {store_root} ({have})")
        return wanted
    if not nodes:
        raise InputError(f"--allocate: the local store {store_root} holds no ResourceSlices of any node; start "
                         "`fake-dra run` (or `fake-dra publish --once`) with this --store first")
    if len(nodes) > 1:
        raise InputError(f"--allocate: the store has slices of several nodes ({', '.join(nodes)}); choose one with --node-name")
    return nodes[0]


def _features(args: argparse.Namespace, store_root: Path):
    from driver.features import Features, parse_features
    from driver.publish.backend import LocalGateConfig

    base = Features().with_gates(LocalGateConfig.load(store_root).scheduler_gates(), str(store_root))
    return parse_features(args.features, base=base) if args.features else base


def _allocate(store, planned: list[Planned], args: argparse.Namespace) -> dict[int, tuple[str, list[tuple[str, str]]]]:
    """Allocate this apply's pending claims in memory (they are written by commit); {} when none."""
    from driver.allocator import allocate_claims

    pending = [p for p in planned if p.kind.kind == "ResourceClaim" and not (p.obj.get("status") or {}).get("allocation")]
    if not pending:
        return {}
    replaced = {(p.kind.kind, p.namespace, p.name) for p in planned}

    def stored(plural: str, kind: str) -> list[dict[str, Any]]:
        objs = store.list(plural, None, all_namespaces=True) if plural == "resourceclaims" else store.list(plural)
        return [o for o in objs if (kind, (o.get("metadata") or {}).get("namespace"), o["metadata"]["name"]) not in replaced]

    slices = stored("resourceslices", "ResourceSlice") + [p.obj for p in planned if p.kind.kind == "ResourceSlice"]
    classes = stored("deviceclasses", "DeviceClass") + [p.obj for p in planned if p.kind.kind == "DeviceClass"]
    in_use = [c for c in stored("resourceclaims", "ResourceClaim") if (c.get("status") or {}).get("allocation")]
    in_use += [p.obj for p in planned if p.kind.kind == "ResourceClaim" and p not in pending]
    # DeviceTaintRules taint what they select, as kube-scheduler's taint tracker makes them do.
    rules = stored("devicetaintrules", "DeviceTaintRule") + [p.obj for p in planned if p.kind.kind == "DeviceTaintRule"]
    node = _pick_node(slices, args.node_name, store.root)
    outcome = allocate_claims([*classes, *slices, *rules, *in_use, *(p.obj for p in pending)], node=node,
                              features=_features(args, store.root))
    if not outcome.ok:
        _record_failures(store, pending, outcome)
        failed = outcome.failed[0]
        raise AllocationError(f"--allocate: {failed.reason}; nothing was applied (apply without --allocate to store "
                              "the claims pending; the reason is kept as an event: `fake-dra get events`)")
    out = {}
    for p, result in zip(pending, outcome.results):
        p.obj.setdefault("status", {})["allocation"] = result.allocation
        results = (result.allocation or {}).get("devices", {}).get("results") or []
        out[id(p)] = (node, [(str(r.get("request")), str(r.get("device"))) for r in results])
    return out


def _record_failures(store, pending: list[Planned], outcome) -> None:
    """A FailedAllocation event per claim that did not fit, as kube-scheduler records why a pod
    is pending: `describe` and `get events` show it even though nothing else was written."""
    from driver.store.events import FAILED_ALLOCATION, SCHEDULER_COMPONENT, ObjectRef, record_event

    for p, result in zip(pending, outcome.results):
        if result.allocation is not None or not result.reason:
            continue
        uid = ((p.current or {}).get("metadata") or {}).get("uid")
        ref = ObjectRef(p.kind.kind, p.name, p.namespace, uid, p.kind.api_version)
        record_event(store, ref, reason=FAILED_ALLOCATION, message=result.reason, component=SCHEDULER_COMPONENT)
