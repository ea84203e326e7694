"""`fake-dra get KIND [NAME...]`: list or show objects of the local object store, as kubectl would.

    fake-dra get resourceclaims                 NAME  STATE  AGE (namespace default)
    fake-dra get resourceclaim gpu -o yaml      one object
    fake-dra get resourceslices -o wide         with generation, devices, counter sets
    fake-dra get resourceclaims -A              every namespace
    fake-dra get deviceclasses,resourceclaims   several kinds
    fake-dra get resourceclaims -l team=ml      only claims labelled team=ml
    fake-dra get resourceclaims -o jsonpath='{.items[*].metadata.name}'
                                                kubectl's JSONPath templates

Exit 0; 1 when a named object does not exist (kubectl's NotFound); 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys

from driver.commands import _objects, _store
from driver.errors import InputError
from driver.store.kinds import Kind, known_kinds, resolve


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "get", help="list or show objects of the local object store (kubectl get)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", metavar="KIND",
                        help=f"{known_kinds()} (plural, singular, short name or Kind; comma-separated for several)")
    parser.add_argument("names", nargs="*", default=[], metavar="NAME", help="only these objects")
    output = parser.add_argument("-o", "--output", type=_objects.output_format, default="table",
                                 help="table (default), wide, yaml, json, name or jsonpath=TEMPLATE")
    output.completions = (*_objects.OUTPUTS, _objects.JSONPATH)  # for `fake-dra completion`
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="namespaced kinds: every namespace")
    _store.add_selector_flag(parser)
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    kinds = [resolve(k) for k in args.kind.split(",") if k.strip()]
    if not kinds:
        raise InputError("KIND: required (e.g. resourceclaims)")
    if args.names and len(kinds) > 1:
        raise InputError("NAME: give names with a single kind")
    args.label_selector = _store.selector(args)
    if args.names and args.selector:
        raise InputError("--selector: give either NAMEs or a selector, not both (as kubectl)")
    store = _store.open_store(args, write=False)
    found = [(kind, obj) for kind in kinds for obj in _store.fetch(store, kind, args)]
    if args.output in ("yaml", "json") or args.output.startswith(_objects.JSONPATH):
        value = found[0][1] if args.names and len(found) == 1 else _objects.as_list([o for _, o in found])
        if args.output.startswith(_objects.JSONPATH):
            from driver.commands._jsonpath import render

            sys.stdout.write(render(args.output[len(_objects.JSONPATH):], value))
            return 0
        sys.stdout.write(_objects.dump(value, args.output))
        return 0
    if args.output == "name":
        for kind, obj in found:
            print(_objects.object_name(kind, obj))
        return 0
    if not found:
        scope = (f" in {_store.namespace(args)} namespace" if any(k.namespaced for k in kinds)
                 and not args.all_namespaces else "")
        print(f"No resources found{scope}.", file=sys.stderr)
        return 0
    blocks = []
    for kind in kinds:
        objs = [o for k, o in found if k is kind]
        if objs:
            # kubectl prefixes names with the kind when several kinds are listed
            blocks.append(_objects.render_table(kind, objs, wide=args.output == "wide",
                                                all_namespaces=args.all_namespaces, qualified=len(kinds) > 1))
    print("\n\n".join(blocks))
    return 0
