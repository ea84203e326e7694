"""`fake-dra explain KIND[.field.path]`: the fields of a kind, from the Kubernetes 1.37 schema fake-dra checks with.

    fake-dra explain resourceclaims                          the top-level fields
    fake-dra explain resourceclaim.spec.devices.requests     one field: its type, then its fields
    fake-dra explain pods.spec --recursive                   every field below, indented

Laid out as `kubectl explain` prints (k8s.io/kubectl pkg/explain/v2/templates/plaintext.tmpl): GROUP
(not for core kinds), KIND, VERSION, `FIELD: <name> <type>` for a path, then FIELDS, each `name
<type>` with ` -required-` and its first enum values; a list is `[]Type`, a map `map[string]Type`,
an object of a named type its name, a quantity `Quantity`. The schema is the one every object is
checked against (driver/schema/data/k8s-1.37-strict.json, kube-apiserver's 1.37 OpenAPI made
strict); it keeps no descriptions, so unlike kubectl this prints none. Exit 0; 2 for a kind or
field that does not exist, in kubectl's words.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from driver.errors import InputError
from driver.store.kinds import known_kinds, resolve

ENUM_LIMIT = 4  # the short view's enum values before ", ...."


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain", help="the fields of a kind or field, from the 1.37 schema (kubectl explain)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True
    parser.add_argument("resource", metavar="KIND[.FIELD...]", help=f"{known_kinds()}, optionally with a field path")
    parser.add_argument("-R", "--recursive", action="store_true", help="the fields of fields, indented")
    parser.add_argument("--max-depth", type=int, default=0, metavar="N",
                        help="with --recursive: at most N levels (0: no limit)")
    parser.set_defaults(func=run)


def _types() -> Mapping[str, Any]:
    from driver.schema.compact import load_data

    return load_data()["types"]


def type_name(field: Mapping[str, Any]) -> str:
    """kubectl explain's typeGuess for a field of the compact schema."""
    if "items" in field:
        return "[]" + type_name(field["items"])
    if "values" in field:
        return "map[string]" + type_name(field["values"])
    if "ref" in field:
        return field["ref"].rsplit(".", 1)[-1] or "Object"
    kind = field.get("type")
    return {"object": "Object", "quantity": "Quantity", "int-or-string": "IntOrString"}.get(kind, kind or "Object")


def _element(field: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a field's own fields are read from: a list's item, a map's value."""
    while "items" in field or "values" in field:
        field = field.get("items") or field.get("values")
    return field


def _enum(field: Mapping[str, Any], name: str, top: bool) -> list[str]:
    values = _element(field).get("enum") or []
    if top and name in ("apiVersion", "kind"):
        return []  # the strict schema pins them; kube-apiserver's OpenAPI has no enum there
    return ['""' if v == "" else str(v) for v in values]


def _field_lines(type_ref: str | None, level: int, recursive: bool, max_depth: int, seen: frozenset[str],
                 top: bool) -> list[str]:
    if type_ref is None or type_ref in seen:
        return []
    node = _types().get(type_ref) or {}
    required = set(node.get("required") or [])
    out = []
    for name in sorted(node.get("fields") or {}):
        field = node["fields"][name]
        line = "  " * level + f"{name}\t<{type_name(field)}>" + (" -required-" if name in required else "")
        values = _enum(field, name, top)
        if values:
            line += ("\n" + "  " * level + "enum: " + ", ".join(values[:ENUM_LIMIT])
                     + (", ...." if len(values) > ENUM_LIMIT else ""))
        out.append(line)
        if recursive and (max_depth == 0 or level < max_depth):
            out.extend(_field_lines(_element(field).get("ref"), level + 1, recursive, max_depth, seen | {type_ref},
                                    False))
    return out


def explain(resource: str, recursive: bool = False, max_depth: int = 0) -> str:
    # kubectl's SplitAndParseResourceRequest: the first segment names the resource, the rest is a path.
    kind_name, *path = resource.split(".")
    kind = resolve(kind_name)
    from driver.schema.compact import load_data

    type_ref = load_data()["kinds"].get(f"{kind.api_version}/{kind.kind}")
    if type_ref is None:
        raise InputError(f"couldn't find resource for \"{kind.api_version}, Kind={kind.kind}\"")
    head = ([f"GROUP:      {kind.group}"] if kind.group else []) + [f"KIND:       {kind.kind}",
                                                                     f"VERSION:    {kind.version}", ""]
    field_line = None
    for depth, name in enumerate(path):
        node = _types().get(type_ref or "") or {}
        field = (node.get("fields") or {}).get(name)
        if field is None:
            raise InputError(f'field "{name}" does not exist')
        if depth == len(path) - 1:
            field_line = f"FIELD: {name} <{type_name(field)}>"
            values = _enum(field, name, depth == 0)
            if values:
                field_line += "\nENUM:" + "".join(f"\n    {v}" for v in values)
        type_ref = _element(field).get("ref")
    lines = [*head]
    if field_line is not None:
        lines += [field_line, ""]
    fields = _field_lines(type_ref, 1, recursive, max_depth, frozenset(), not path)
    if fields:
        lines += ["FIELDS:", *fields]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    if args.max_depth < 0:
        raise InputError("--max-depth must be non-negative")
    if args.max_depth and not args.recursive:
        raise InputError("--max-depth requires --recursive")
    print(explain(args.resource, args.recursive, args.max_depth), end="")
    return 0
