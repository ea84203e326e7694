"""How the local object store turns objects into file bytes and back.

Objects are YAML for people, except the kinds machines write in bulk: ResourceSlices are one line of
JSON, which is YAML too (every YAML reader, ours included, reads them) but is written ~15x and read
~40x faster than block YAML. A DGX-A100 node at full fidelity is ~217 KB of slice JSON, so a
1,000-node fleet is 217 MB: as block YAML that is ~50 s to write and ~70 s to read back, as JSON
~3 s and ~2 s (measured on the 2-core machine of docs/fleet.md).

Reading: a text that starts with `{` is tried as JSON first and falls back to the YAML reader
(driver.yamlio) when it is not JSON, so hand-written flow-style YAML and every error message stay
as they were. The JSON path keeps yamlio's limit for hostile files, at most 100 levels of nesting
(the same message). A duplicate key in a JSON file keeps its last value, as Go's encoding/json (and so
kube-apiserver decoding what etcd holds) does; refusing it, as yamlio does for YAML, would cost a
Python call per object and double the time to read a fleet's slices.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from driver.errors import InputError
from driver.yamlio import MAX_NESTING, load_one

# libyaml's C dumper is ~10x faster than the pure-Python one; fall back only where libyaml is missing.
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Resources stored as JSON: written in bulk by publishers and fleets, read by every scheduling pass.
JSON_RESOURCES = frozenset({"resourceslices"})


def json_text(value: Any) -> str:
    """A value as the store writes it inside a JSON object file (compact, keys in their order)."""
    return json.dumps(value, separators=(",", ":"))


def encode(resource: str, obj: dict[str, Any]) -> bytes:
    """The file bytes of `obj` stored under `resource`."""
    if resource in JSON_RESOURCES:
        return json_text(obj).encode() + b"\n"
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False).encode()


def decode(text: str, source: str) -> Any:
    """The one document of a store file (JSON or YAML); InputError naming `source` when unreadable."""
    if text[:1] == "{":
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            pass  # not JSON (flow-style YAML, or garbage): the YAML reader decides and words the error
        else:
            if deeper_than(value, MAX_NESTING):
                raise InputError(f"{source}: nests more than {MAX_NESTING} levels deep")
            return value
    return load_one(text, source)


def deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` deep (iterative: a deep value must not recurse)."""
    if type(value) is not dict and type(value) is not list:
        return False
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        children = node.values() if type(node) is dict else node
        for child in children:
            if type(child) is dict or type(child) is list:
                push((child, depth + 1))
    return False
