"""`fake-dra describe KIND [NAME...]`: kubectl describe on the local object store.

    fake-dra describe resourceclaim gpu          allocation, reservedFor, prepared on the node?
                                                 (checkpoint, CDI spec, metadata files), device
                                                 status, events (why it is pending)
    fake-dra describe node node-1                devices in use, shares, counters left, the
                                                 claims its plugin prepared, events
    fake-dra describe pod trainer                its node, its claims and their states, events
    fake-dra describe resourceclaims -l team=ml  every claim those labels select

Other kinds print their spec and status as YAML, with their events. A node of the local mode is
the pools whose slices name it (plus its Node object, when one is stored). Without NAME every
object of the kind in the namespace (`-A`: all namespaces) is described.
Exit 0; 1 when a named object does not exist; 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from driver.commands import _store, common
from driver.commands._describe_dra import describe_claim
from driver.commands._describe_node import describe_node
from driver.commands._describe_text import NONE, Block, events, header, yaml_block
from driver.commands._objects import claim_state
from driver.errors import InputError, NotFoundError
from driver.state.inspect import BOOT_ID_FILE
from driver.store.events import ObjectRef, events_for
from driver.store.kinds import Kind, known_kinds, resolve
from driver.store.objectstore import ObjectStore


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "describe", help="describe objects of the local object store, with usage and events (kubectl describe)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True  # flags anywhere, as kubectl parses them (driver.cli._Parser)
    parser.add_argument("kind", metavar="KIND", help=f"{known_kinds()} (plural, singular, short name or Kind)")
    parser.add_argument("names", nargs="*", default=[], metavar="NAME", help="only these objects")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="namespaced kinds: every namespace")
    _store.add_selector_flag(parser)
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    common.add_flag(parser, "--kubelet-root", None,
                    "where the node's kubelet plugin keeps its state (as for `run`; default: the local state "
                    f"directory {common.LOCAL_STATE_HINT})")
    common.add_flag(parser, "--kubelet-plugins-dir", None, "the plugin's --kubelet-plugins-dir, when `run` was given one")
    common.add_flag(parser, "--cdi-root", None, "the plugin's --cdi-root, when `run` was given one")
    common.add_flag(parser, "--state-dir", None, "the plugin's --state-dir, when `run` was given one")
    common.add_flag(parser, "--boot-id-file", BOOT_ID_FILE,
                    "the plugin's --boot-id-file: a claim prepared in another boot is not prepared any more")
    parser.set_defaults(func=run)


def _objects(store: ObjectStore, kind: Kind, args: argparse.Namespace) -> list[dict[str, Any]]:
    return _store.fetch(store, kind, args, lambda ns, name: _not_found(store, kind, ns, name))


def _not_found(store: ObjectStore, kind: Kind, ns: str | None, name: str) -> str:
    where = f' in namespace "{ns}"' if ns else ""
    text = f'{kind.resource} "{name}" not found{where}'
    about = events_for(store, ObjectRef(kind.kind, name, ns))
    if about:
        last = about[-1]
        text += (f"; its last event: {last.get('reason')}: {last.get('message')} "
                 "(`fake-dra get events` lists them)")
    return text


def _pod(store: ObjectStore, pod: Mapping[str, Any], now: datetime) -> str:
    out = Block()
    header(out, pod, now)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    out.field("Node", spec.get("nodeName") or NONE)
    out.field("Status", status.get("phase") or "Pending")
    generated = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()}
    ns = (pod.get("metadata") or {}).get("namespace") or "default"
    lines = []
    for entry in spec.get("resourceClaims") or ():
        claim_name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        source = (f"claim {claim_name}" if entry.get("resourceClaimName") else
                  f"from template {entry.get('resourceClaimTemplateName')}" +
                  (f": claim {claim_name}" if claim_name else " (no claim generated yet)"))
        state = ""
        if claim_name:
            try:
                state = f", {claim_state(store.get('resourceclaims', ns, claim_name))}"
            except NotFoundError:
                state = ", not in the store"
        lines.append(f"{entry.get('name')}: {source}{state}")
    out.field("Resource Claims", "\n".join(lines) or NONE)
    events(out, events_for(store, ObjectRef.of(pod)), now)
    return out.text()


def _generic(store: ObjectStore, kind: Kind, obj: Mapping[str, Any], now: datetime) -> str:
    out = Block()
    header(out, obj, now)
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    for key in sorted(body):
        yaml_block(out, key[:1].upper() + key[1:], body[key])
    if kind.kind != "Event":
        events(out, events_for(store, ObjectRef.of(obj)), now)
    return out.text()


def _named_nodes(store: ObjectStore, args: argparse.Namespace) -> list[tuple[str, dict[str, Any] | None, Any]]:
    """(name, Node or None, usage of its pools) of each named node, each read through the store's
    indexes (driver.store.scopes): the cost of one node, whatever the store holds."""
    from driver.allocator.usage import usage_of
    from driver.store.scopes import node_scope

    out = []
    for name in args.names:
        try:
            node = store.get("nodes", None, name)
        except NotFoundError:
            node = None
        usage = usage_of(*node_scope(store, name))
        if node is None and not usage.for_node(name):
            known = sorted(set(store.names("nodes")) | {n for n in store.index_values("resourceslices", "node") if n})
            shown = ", ".join(known[:10]) + (f" (+{len(known) - 10} more)" if len(known) > 10 else "")
            raise NotFoundError(f'nodes "{name}" not found: no Node object and no ResourceSlice names it '
                                f"(nodes here: {shown or 'none'})")
        out.append((name, node, usage))
    return out


def _all_nodes(store: ObjectStore, args: argparse.Namespace, usage) -> list[tuple[str, dict[str, Any] | None]]:
    stored = {o["metadata"]["name"]: o for o in store.list("nodes")}
    names = sorted(set(stored) | set(usage.nodes()))
    return [(n, stored.get(n)) for n in names if args.label_selector.matches(stored.get(n) or {})]


def run(args: argparse.Namespace) -> int:
    from driver.allocator.usage import usage_of

    kind = resolve(args.kind)
    args.label_selector = _store.selector(args)
    if args.names and args.selector:
        raise InputError("--selector: give either NAMEs or a selector, not both (as kubectl)")
    if args.names and args.all_namespaces and kind.namespaced:
        raise InputError("a resource cannot be retrieved by name across all namespaces (drop -A or the NAME)")
    store = _store.open_store(args, write=False)
    now = datetime.now(timezone.utc)
    blocks: list[str] = []
    if kind.kind == "Node" and args.names:
        blocks = [describe_node(args, store, name, obj, usage, now) for name, obj, usage in _named_nodes(store, args)]
    elif kind.kind == "Node":
        usage = usage_of(store.list("resourceslices"), store.list("resourceclaims", all_namespaces=True))
        blocks = [describe_node(args, store, name, obj, usage, now) for name, obj in _all_nodes(store, args, usage)]
    elif kind.kind == "ResourceClaim":
        from driver.store.scopes import claim_scope

        blocks = [describe_claim(args, store, c, usage_of(*claim_scope(store, c)), now)
                  for c in _objects(store, kind, args)]
    elif kind.kind == "Pod":
        blocks = [_pod(store, p, now) for p in _objects(store, kind, args)]
    else:
        blocks = [_generic(store, kind, o, now) for o in _objects(store, kind, args)]
    if not blocks:
        scope = f" in {_store.namespace(args)} namespace" if kind.namespaced and not args.all_namespaces else ""
        print(f"No resources found{scope}.", file=sys.stderr)
        return 0
    print("\n\n".join(blocks))
    return 0
