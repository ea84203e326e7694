"""`fake-dra delete KIND NAME...`, `delete KIND --all|-l SELECTOR` or `delete -f FILE|DIR`: remove
objects from the local store.

Like kubectl: every name must exist unless --ignore-not-found (a missing one is exit 1 after the
others are deleted); `-f` deletes the objects a manifest (or every manifest of a directory, `-R`
below it too) describes; `--all` deletes every object of the kind in the namespace (`-A`: in every
namespace), `-l` those whose labels match and `--field-selector` those whose fields match
(kube-apiserver's fields per kind, driver.store.fields). Deleting a namespace deletes every object in it, as
the namespace controller does. Deleting a prepared claim is allowed, as on a
cluster: the kubelet's unprepare still reaches the plugin without the object.

Deletion is kube-apiserver's (driver.store.deletion): an object with finalizers gets a
deletionTimestamp and stays until they are removed; a pod bound to a node is deleted gracefully
(the node, or `fake-dra cluster`'s pod stages, completes it) unless `--grace-period=0 --force`;
`--cascade=background` (the default), `foreground` or `orphan` says what becomes of the object's
dependents (their ownerReferences), which the garbage collector of `fake-dra cluster` carries out,
as kubectl's `--cascade` sets the request's propagationPolicy.
"""

from __future__ import annotations

import argparse
import sys

from driver import schema
from driver.commands import _store
from driver.errors import InputError, NotFoundError
from driver.store import deletion
from driver.store.apply import load_documents
from driver.store.kinds import KINDS, Kind, for_object, resolve


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "delete", help="delete objects from the local object store (kubectl delete)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True  # flags anywhere, as kubectl parses them (driver.cli._Parser)
    parser.add_argument("kind", nargs="?", metavar="KIND", help="e.g. resourceclaims (plural, singular or Kind)")
    parser.add_argument("names", nargs="*", metavar="NAME", help="objects to delete")
    _store.add_filename_flags(parser, "delete the objects of")
    parser.add_argument("--all", action="store_true", help="every object of KIND in the namespace")
    _store.add_selector_flag(parser)
    _store.add_field_selector_flag(parser)
    parser.add_argument("-A", "--all-namespaces", action="store_true",
                        help="with --all or --selector: in every namespace")
    parser.add_argument("--ignore-not-found", action="store_true", help="a missing object is not an error")
    parser.add_argument("--cascade", default="background", metavar="background|foreground|orphan",
                        help="what becomes of the dependents (kubectl's --cascade): deleted after the object "
                             "(background, the default), before it (foreground), or kept without their owner reference (orphan)")
    parser.add_argument("--grace-period", default="-1", metavar="SECONDS",
                        help="seconds a bound pod is given to terminate (-1: the pod's own; 0 with --force: at once)")
    parser.add_argument("--force", action="store_true", help="with --grace-period=0: remove pods at once, without waiting for their node")
    parser.add_argument("--now", action="store_true", help="--grace-period=1")
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _targets(store, args: argparse.Namespace) -> list[tuple[Kind, str | None, str]]:
    every = args.all or args.selector is not None or args.field_selector is not None
    if args.filename:
        if args.kind or args.names or every:
            raise InputError("give either KIND NAME..., KIND --all|--selector or -f FILE, not both")
        out = []
        for path in _store.expand_filenames(args.filename, args.recursive):
            docs = load_documents(_store.read_manifest(path), path)
            _store.refuse_fleets([(path, i, d) for i, d in docs], "delete")
            for index, doc in docs:
                where = schema.document_label(path, index, doc)
                if not isinstance(doc, dict):
                    raise InputError(f"{where}: expected an object with apiVersion, kind and metadata")
                kind = for_object(doc.get("apiVersion"), doc.get("kind"), where)
                meta = doc.get("metadata") or {}
                if not meta.get("name"):
                    raise InputError(f"{where}: metadata.name: required")
                ns = (meta.get("namespace") or _store.namespace(args)) if kind.namespaced else None
                out.append((kind, ns, str(meta["name"])))
        return out
    if args.recursive:
        raise InputError("-R/--recursive goes with -f DIR")
    if not args.kind:
        raise InputError("KIND and NAME are required (or -f FILE), e.g. `fake-dra delete resourceclaim gpu-claim`")
    kind = resolve(args.kind)
    if args.all_namespaces and not every:
        raise InputError("--all-namespaces goes with --all or --selector (or --field-selector)")
    if every:
        if args.names:
            raise InputError("give either NAMEs or --all/--selector, not both (nor NAMEs and --field-selector)")
        chosen, fields = _store.selector(args), _store.field_selector(args, kind)
        scope = bool(args.all_namespaces and kind.namespaced)
        ns = _store.namespace(args) if kind.namespaced else None
        return [(kind, (o.get("metadata") or {}).get("namespace") if kind.namespaced else None, o["metadata"]["name"])
                for o in store.list(kind.plural, ns, all_namespaces=scope) if chosen.matches(o) and fields.matches(o)]
    if not args.names:
        raise InputError(f"NAME: which {kind.plural} to delete? (or --all, or -l SELECTOR)")
    ns = _store.namespace(args) if kind.namespaced else None
    return [(kind, ns, name) for name in args.names]


_CASCADE = {"background": deletion.BACKGROUND, "foreground": deletion.FOREGROUND, "orphan": deletion.ORPHAN,
            "true": deletion.BACKGROUND, "false": deletion.ORPHAN}  # kubectl still takes the old booleans


def _cascade(value: str) -> str:
    policy = _CASCADE.get(str(value).strip().lower())
    if policy is None:
        raise InputError(f'--cascade: invalid value "{value}": must be one of background, foreground or orphan')
    return policy


def _grace(args: argparse.Namespace) -> int | None:
    """kubectl's rules: -1 is the object's own period; --now is 1; --force needs 0 (or picks it)."""
    try:
        grace = int(args.grace_period)
    except (TypeError, ValueError):
        raise InputError(f"--grace-period: expected a whole number of seconds, got {args.grace_period!r}") from None
    if grace < -1:
        raise InputError(f"--grace-period: must be -1 (the pod's own), 0 or more, got {grace}")
    if args.now:
        if grace not in (-1, 1):
            raise InputError("--now and --grace-period cannot both be specified")
        grace = 1
    if args.force:
        if grace > 0:
            raise InputError("--force: with a --grace-period above 0 nothing is forced; use --grace-period=0 --force")
        return 0
    if grace == 0:
        raise InputError("--grace-period=0 needs --force (kubectl: immediate deletion does not wait for the node)")
    return None if grace == -1 else grace


def _delete_contents(store, namespace: str) -> None:
    """What the namespace controller does before a namespace goes: every object in it is deleted
    (NotFoundError first when the namespace itself does not exist, so nothing else is touched)."""
    store.get("namespaces", None, namespace)
    for kind in KINDS:
        if kind.namespaced:
            for obj in store.list(kind.plural, namespace):
                deletion.delete(store, kind.plural, namespace, obj["metadata"]["name"])


def run(args: argparse.Namespace) -> int:
    policy = _cascade(args.cascade)
    grace = _grace(args)
    store = _store.open_store(args, write=True)
    targets = _targets(store, args)
    if args.force:
        print("Warning: Immediate deletion does not wait for confirmation that the running resource has been "
              "terminated. The resource may continue to run on the cluster indefinitely.", file=sys.stderr)
    if not targets and (args.all or args.selector is not None or args.field_selector is not None):
        print("No resources found", file=sys.stderr)
        return 0
    missing = []
    for kind, ns, name in targets:
        try:
            if kind.kind == "Namespace":
                _delete_contents(store, name)
            deletion.delete(store, kind.plural, ns, name, propagation=policy, grace_period_s=grace)
        except NotFoundError:
            if not args.ignore_not_found:
                where = f' in namespace "{ns}"' if ns else ""
                missing.append(f'{kind.resource} "{name}" not found{where}')
            continue
        print(f'{kind.qualified} "{name}" {"force deleted" if args.force else "deleted"}')
    if missing:
        raise NotFoundError("; ".join(missing))
    return 0
