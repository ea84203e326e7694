"""`fake-dra delete KIND NAME...` or `fake-dra delete -f FILE`: remove objects from the local store.

Like kubectl: every name must exist unless --ignore-not-found (a missing one is exit 1 after the
others are deleted); `-f` deletes the objects a manifest describes. Deleting a prepared claim is
allowed, as on a cluster: the kubelet's unprepare still reaches the plugin without the object.
"""

from __future__ import annotations

import argparse

from driver import schema
from driver.commands import _store
from driver.errors import InputError, NotFoundError
from driver.store.apply import load_documents
from driver.store.kinds import Kind, for_object, resolve


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "delete", help="delete objects from the local object store (kubectl delete)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", nargs="?", metavar="KIND", help="e.g. resourceclaims (plural, singular or Kind)")
    parser.add_argument("names", nargs="*", metavar="NAME", help="objects to delete")
    parser.add_argument("-f", "--filename", action="append", default=[], metavar="FILE",
                        help="delete the objects in this YAML file ('-' for stdin; repeatable)")
    parser.add_argument("--ignore-not-found", action="store_true", help="a missing object is not an error")
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _targets(args: argparse.Namespace) -> list[tuple[Kind, str | None, str]]:
    if args.filename:
        if args.kind or args.names:
            raise InputError("give either KIND NAME... or -f FILE, not both")
        out = []
        for path in args.filename:
            for index, doc in load_documents(_store.read_manifest(path), path):
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
    if not args.kind:
        raise InputError("KIND and NAME are required (or -f FILE), e.g. `fake-dra delete resourceclaim gpu-claim`")
    kind = resolve(args.kind)
    if not args.names:
        raise InputError(f"NAME: which {kind.plural} to delete? (deleting all is not supported)")
    ns = _store.namespace(args) if kind.namespaced else None
    return [(kind, ns, name) for name in args.names]


def run(args: argparse.Namespace) -> int:
    targets = _targets(args)
    store = _store.open_store(args, write=True)
    missing = []
    for kind, ns, name in targets:
        try:
            store.delete(kind.plural, ns, name)
        except NotFoundError:
            if not args.ignore_not_found:
                where = f' in namespace "{ns}"' if ns else ""
                missing.append(f'{kind.resource} "{name}" not found{where}')
            continue
        print(f'{kind.qualified} "{name}" deleted')
    if missing:
        raise NotFoundError("; ".join(missing))
    return 0
