#!/usr/bin/env python3
"""Regenerate driver/schema/data/k8s-1.37-strict.json from the official Kubernetes 1.37 JSON schemas.

Source: the `kubernetes-validate` package (a test dependency, pinned to 1.37 in pyproject.toml),
directory `kubernetes-json-schema/v1.37.0-local-strict/_definitions.json`: the OpenAPI document of
Kubernetes 1.37 turned into JSON Schema, strict variant (every object type has
`additionalProperties: false`, as kube-apiserver's strict field validation treats unknown fields).

What is kept: the types reachable from the kinds fake-dra reads (resource.k8s.io/v1 DeviceClass,
ResourceClaim, ResourceClaimTemplate, ResourceSlice, DeviceTaintRule; resource.k8s.io/v1alpha3
ResourcePoolStatusRequest; scheduling.k8s.io/v1beta1 PodGroup; core/v1 Node, Pod, Namespace, Event;
apps/v1 Deployment, ReplicaSet; batch/v1 Job), each reduced to what
decoding checks: field names, field types (scalar type and integer format, list, map, reference),
whether null is allowed, required fields and enums. Descriptions are dropped (the file is ~10x
smaller and loads in a few milliseconds at run time, when kubernetes-validate is not installed).

    .venv/bin/python hack/gen_schema.py          # rewrite the committed file
    .venv/bin/python hack/gen_schema.py --check  # exit 1 when the committed file is stale

tests/schema/test_schema_source.py fails when the committed file differs from what this script
derives from the installed kubernetes-validate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "driver" / "schema" / "data" / "k8s-1.37-strict.json"
SCHEMA_DIR = "v1.37.0-local-strict"

# (apiVersion, kind) -> definition name: the objects fake-dra reads from users and the store.
ROOTS: dict[tuple[str, str], str] = {
    ("resource.k8s.io/v1", "DeviceClass"): "io.k8s.api.resource.v1.DeviceClass",
    ("resource.k8s.io/v1", "ResourceClaim"): "io.k8s.api.resource.v1.ResourceClaim",
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): "io.k8s.api.resource.v1.ResourceClaimTemplate",
    ("resource.k8s.io/v1", "ResourceSlice"): "io.k8s.api.resource.v1.ResourceSlice",
    ("v1", "Node"): "io.k8s.api.core.v1.Node",
    ("v1", "Pod"): "io.k8s.api.core.v1.Pod",
    ("v1", "Namespace"): "io.k8s.api.core.v1.Namespace",
    ("v1", "Event"): "io.k8s.api.core.v1.Event",
    ("apps/v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("apps/v1", "ReplicaSet"): "io.k8s.api.apps.v1.ReplicaSet",
    ("batch/v1", "Job"): "io.k8s.api.batch.v1.Job",
    # The rest of the 1.37 DRA API (issue 28): device taint rules (GA), pool status requests (KEP-5677,
    # alpha: only resource.k8s.io/v1alpha3 serves them) and PodGroups (KEP-5729's shared claims belong
    # to them; scheduling.k8s.io/v1beta1, the newest version 1.37 has, behind GenericWorkload).
    ("resource.k8s.io/v1", "DeviceTaintRule"): "io.k8s.api.resource.v1.DeviceTaintRule",
    ("resource.k8s.io/v1alpha3", "ResourcePoolStatusRequest"): "io.k8s.api.resource.v1alpha3.ResourcePoolStatusRequest",
    ("scheduling.k8s.io/v1beta1", "PodGroup"): "io.k8s.api.scheduling.v1beta1.PodGroup",
}


def definitions_path() -> Path:
    import kubernetes_validate

    path = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / SCHEMA_DIR / "_definitions.json"
    if not path.is_file():
        raise SystemExit(f"{path}: missing; install the test dependencies (kubernetes-validate 1.37)")
    return path


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _nullable(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    if "$ref" in schema:
        return _nullable(defs[_ref_name(schema["$ref"])], defs)
    if "oneOf" in schema:
        return any(_nullable(s, defs) for s in schema["oneOf"])
    kinds = schema.get("type")
    return isinstance(kinds, list) and "null" in kinds


def _scalar(schema: Mapping[str, Any]) -> str | None:
    kinds = schema.get("type")
    kinds = [k for k in (kinds if isinstance(kinds, list) else [kinds]) if k and k != "null"]
    return kinds[0] if len(kinds) == 1 else None


def _describe(schema: Mapping[str, Any], defs: Mapping[str, Any], refs: set[str]) -> dict[str, Any]:
    """One field's type in the compact form (see driver/schema/compact.py for the grammar)."""
    out: dict[str, Any]
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        target = defs[name]
        if "oneOf" in target:  # Quantity and IntOrString: the two scalars apimachinery decodes itself
            alts = sorted(_scalar(s) or "" for s in target["oneOf"])
            kind = {("number", "string"): "quantity", ("integer", "string"): "int-or-string"}[tuple(alts)]
            out = {"type": kind}
        elif "properties" not in target and target.get("additionalProperties") is None and _scalar(target) == "object":
            out = {"type": "object"}  # RawExtension, FieldsV1: any JSON object
        elif "properties" not in target and _scalar(target) == "string":
            out = {"type": "string"}
            if target.get("format"):
                out["format"] = target["format"]
        else:
            refs.add(name)
            out = {"ref": name}
    elif "oneOf" in schema:
        raise SystemExit(f"unexpected inline oneOf: {schema}")
    else:
        kind = _scalar(schema)
        if kind == "array":
            out = {"items": _describe(schema["items"], defs, refs)}
        elif kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
            out = {"values": _describe(schema["additionalProperties"], defs, refs)}
        elif kind == "object" and "properties" not in schema:
            out = {"type": "object"}
        elif kind in ("string", "integer", "number", "boolean"):
            out = {"type": kind}
            if schema.get("format"):
                out["format"] = schema["format"]
            if schema.get("enum"):
                out["enum"] = list(schema["enum"])
        else:
            raise SystemExit(f"unexpected schema shape: {schema}")
    if _nullable(schema, defs):
        out["null"] = True
    return out


def _type(schema: Mapping[str, Any], defs: Mapping[str, Any], refs: set[str]) -> dict[str, Any]:
    if schema.get("additionalProperties") is not False:
        raise SystemExit(f"not a strict object type: {sorted(schema)}")
    out: dict[str, Any] = {"fields": {k: _describe(v, defs, refs) for k, v in sorted(schema.get("properties", {}).items())}}
    if schema.get("required"):
        out["required"] = sorted(schema["required"])
    return out


def build(definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The compact schema of ROOTS and every type they reach."""
    defs = definitions["$defs"]
    types: dict[str, Any] = {}
    todo = list(ROOTS.values())
    while todo:
        name = todo.pop()
        if name in types:
            continue
        refs: set[str] = set()
        types[name] = _type(defs[name], defs, refs)
        todo.extend(sorted(refs - set(types)))
    return {
        "source": f"kubernetes-validate {SCHEMA_DIR}/_definitions.json (generated by hack/gen_schema.py; do not edit)",
        "kinds": {f"{api}/{kind}": name for (api, kind), name in ROOTS.items()},
        "types": dict(sorted(types.items())),
    }


def render(compact: Mapping[str, Any]) -> str:
    """One type per line: small diffs when Kubernetes adds a field."""
    lines = ["{", f'"source": {json.dumps(compact["source"])},',
             f'"kinds": {json.dumps(compact["kinds"], sort_keys=True)},', '"types": {']
    items = list(compact["types"].items())
    for i, (name, body) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(body, sort_keys=True, separators=(',', ':'))}{comma}")
    lines += ["}", "}", ""]
    return "\n".join(lines)


def generate() -> str:
    return render(build(json.loads(definitions_path().read_text())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file is stale")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run hack/gen_schema.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
