"""`fake-dra api-resources`: the kinds the local object store serves, as `kubectl api-resources` lists them.

    fake-dra api-resources                      NAME  SHORTNAMES  APIVERSION  NAMESPACED  KIND
    fake-dra api-resources -o wide              ... VERBS  CATEGORIES
    fake-dra api-resources --namespaced=false   cluster-scoped kinds only
    fake-dra api-resources --api-group resource.k8s.io
    fake-dra api-resources -o name              resourceclaims.resource.k8s.io, pods, ...

As kubectl (k8s.io/kubectl pkg/cmd/apiresources): sorted by API group, then name (`--sort-by name`
or `kind` to change it); `--verbs` and `--categories` keep the kinds that have all of those given;
`-o name` prints `<name>.<group>`. Verbs and categories are kube-apiserver's discovery facts
(driver.commands._resources). Exit 0; 2 for bad input.
"""

from __future__ import annotations

import argparse

from driver.commands import _resources
from driver.errors import InputError
from driver.tables import kubectl_table


def _bool(value: str) -> bool:
    word = value.strip().lower()
    if word in ("true", "1", "t"):
        return True
    if word in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"invalid argument {value!r}: expected true or false")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "api-resources", help="the kinds the local object store serves (kubectl api-resources)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True
    parser.add_argument("-o", "--output", choices=["wide", "name"], default=None, help="wide or name")
    parser.add_argument("--namespaced", type=_bool, nargs="?", const=True, default=None, metavar="BOOL",
                        help="true: namespaced kinds only; false: cluster-scoped kinds only")
    parser.add_argument("--api-group", default=None, metavar="GROUP",
                        help="only kinds of this API group ('' for the core group)")
    parser.add_argument("--verbs", default=None, metavar="VERB,...", help="only kinds that take all these verbs")
    parser.add_argument("--categories", default=None, metavar="CATEGORY,...",
                        help="only kinds in all these categories (e.g. all)")
    parser.add_argument("--sort-by", choices=["name", "kind"], default=None, help="name or kind (default: group)")
    parser.add_argument("--no-headers", action="store_true", help="no header line")
    parser.set_defaults(func=run)


def _list(value: str | None) -> set[str]:
    return {v.strip() for v in (value or "").split(",") if v.strip()}


def run(args: argparse.Namespace) -> int:
    verbs, categories = _list(args.verbs), _list(args.categories)
    found = []
    for r in _resources.resources():
        if args.api_group is not None and r.kind.group != args.api_group:
            continue
        if args.namespaced is not None and r.kind.namespaced != args.namespaced:
            continue
        if not verbs <= set(r.verbs) or not categories <= set(r.categories):
            continue
        found.append(r)
    by = {"name": lambda r: r.kind.plural, "kind": lambda r: r.kind.kind}.get(args.sort_by or "", lambda r: r.kind.group)
    found.sort(key=lambda r: (by(r), r.kind.plural))
    if args.output == "name":
        for r in found:
            print(f"{r.kind.plural}.{r.kind.group}" if r.kind.group else r.kind.plural)
        return 0
    if not found:
        raise InputError("no resources match (--api-group, --namespaced, --verbs, --categories)")
    wide = args.output == "wide"
    headers = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"] + (["VERBS", "CATEGORIES"] if wide else [])
    rows = []
    for r in found:
        row = [r.kind.plural, ",".join(r.kind.short_names), r.kind.api_version, "true" if r.kind.namespaced else "false",
               r.kind.kind]
        if wide:
            row += [",".join(r.verbs), ",".join(r.categories)]
        rows.append(row)
    print(kubectl_table(headers, rows, no_headers=args.no_headers))
    return 0
