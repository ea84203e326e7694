"""`fake-dra get KIND [NAME...]`: list or show objects of the local object store, as kubectl would.

    fake-dra get resourceclaims                 NAME   STATE   AGE (namespace default)
    fake-dra get resourceclaim gpu -o yaml      one object
    fake-dra get pods -n team-a trainer         flags anywhere, as kubectl takes them
    fake-dra get resourceslices -o wide         with generation, devices, counter sets
    fake-dra get resourceclaims -A              every namespace
    fake-dra get deviceclasses,resourceclaims   several kinds
    fake-dra get all                            the `all` category (pods, workloads)
    fake-dra get resourceclaims -l team=ml      only claims labelled team=ml
    fake-dra get pods --field-selector spec.nodeName=node-1,status.phase!=Running
    fake-dra get pods --sort-by .metadata.creationTimestamp --show-labels --no-headers
    fake-dra get resourceslices -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName
    fake-dra get resourceclaims -o jsonpath='{.items[*].metadata.name}'
    fake-dra get pods -w                        then every change, until interrupted (--request-timeout 30s)

Tables are kubectl's (three spaces between columns, never wrapped); which fields --field-selector
takes for each kind are kube-apiserver's (driver.store.fields). Exit 0; 1 when a named object does
not exist (kubectl's NotFound); 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from driver.commands import _objects, _resources, _store, _watch
from driver.errors import InputError
from driver.store.kinds import Kind, known_kinds


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "get", help="list or show objects of the local object store (kubectl get)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True  # flags anywhere, as kubectl parses them (driver.cli._Parser)
    parser.add_argument("kind", metavar="KIND",
                        help=f"{known_kinds()} (plural, singular, short name or Kind; comma-separated for several; "
                             "`all` for the all category)")
    parser.add_argument("names", nargs="*", default=[], metavar="NAME", help="only these objects")
    output = parser.add_argument("-o", "--output", type=_objects.output_format, default="table",
                                 help="table (default), wide, yaml, json, name, jsonpath=TEMPLATE or "
                                      "custom-columns=HEADER:PATH,...")
    output.completions = (*_objects.OUTPUTS, _objects.JSONPATH, _objects.CUSTOM_COLUMNS)  # for `fake-dra completion`
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="namespaced kinds: every namespace")
    _store.add_selector_flag(parser)
    _store.add_field_selector_flag(parser)
    parser.add_argument("--show-labels", action="store_true", help="tables: a last LABELS column")
    parser.add_argument("--no-headers", action="store_true", help="tables and custom columns: no header line")
    parser.add_argument("--sort-by", default=None, metavar="PATH",
                        help="order by a JSONPath field of the objects, e.g. .metadata.creationTimestamp "
                             "(quantities compare as quantities)")
    parser.add_argument("-w", "--watch", action="store_true",
                        help="after listing, print every change to the objects listed (until interrupted)")
    parser.add_argument("--watch-only", action="store_true", help="print the changes only, no list first")
    parser.add_argument("--request-timeout", type=_watch.request_timeout, default=0.0, metavar="DURATION",
                        help="end a watch after this long (5s, 2m; 0: never), as kubectl's flag bounds the request")
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _check_flags(args: argparse.Namespace) -> None:
    structured = args.output not in ("table", "wide")
    if args.show_labels and structured:
        shown = args.output.split("=", 1)[0]
        raise InputError(f"--show-labels option cannot be used with {shown} printer")
    if args.sort_by is not None:
        from driver.commands._columns import relaxed_path

        try:
            relaxed_path(args.sort_by)  # a malformed path is refused before the store is read
        except InputError as exc:
            raise InputError(f"--sort-by {args.sort_by!r}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    kinds = _resources.expand(args.kind)
    if args.names and len(kinds) > 1:
        raise InputError("NAME: give names with a single kind")
    if args.names and args.kind.strip().lower() == "all":
        raise InputError("NAME: `all` is a category of kinds; give one kind to get objects by name")
    args.label_selector = _store.selector(args)
    _store.check_selectors_without_names(args)
    _check_flags(args)
    for kind in kinds:
        _store.field_selector(args, kind)  # every kind refuses an unsupported field before anything is read
    store = _store.open_store(args, write=False)
    if args.watch or args.watch_only:
        _watch.check(args, kinds)
        return _watch.run(store, kinds[0], args)
    names_only = args.output == "name" and args.sort_by is None
    found = [(kind, obj) for kind in kinds for obj in _store.fetch(store, kind, args, metadata_only=names_only)]
    if args.sort_by is not None and found:
        from driver.commands._columns import sort_objects

        order = {id(obj): kind for kind, obj in found}
        found = [(order[id(obj)], obj) for obj in sort_objects([obj for _, obj in found], args.sort_by)]
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
        every_namespaced = all(k.namespaced for k in kinds) and not args.all_namespaces
        print(f"No resources found in {_store.namespace(args)} namespace." if every_namespaced and kinds
              else "No resources found", file=sys.stderr)
        return 0
    print("\n\n".join(_blocks(found, args)))
    return 0


def _blocks(found: list[tuple[Kind, dict[str, Any]]], args: argparse.Namespace) -> list[str]:
    """One table per run of objects of one kind, as kubectl prints a new header when the kind
    changes; names carry their kind (`pod/x`) when the objects found are of several kinds."""
    qualified = len({kind for kind, _ in found}) > 1
    custom = args.output[len(_objects.CUSTOM_COLUMNS):] if args.output.startswith(_objects.CUSTOM_COLUMNS) else None
    runs: list[tuple[Kind, list[dict[str, Any]]]] = []
    for kind, obj in found:
        if runs and runs[-1][0] is kind:
            runs[-1][1].append(obj)
        else:
            runs.append((kind, [obj]))
    return [_objects.render_table(kind, objs, wide=args.output == "wide", all_namespaces=args.all_namespaces,
                                  qualified=qualified, show_labels=args.show_labels, no_headers=args.no_headers,
                                  custom=custom)
            for kind, objs in runs]
