"""Input is checked the way kube-apiserver checks it: the Kubernetes 1.37 schema, strictly.

Every object `apply`, `allocate`, `e2e`, the local store and the fleet read goes through here, one
call per object at the boundary where it enters, so a typo such as `selector:` for `selectors:` is
refused with its path and a did-you-mean instead of being stored and silently ignored (which
allocated a 7g.40gb for a request meant for a 1g.5gb).

Public API
----------
`check_api_version(obj, where) -> kind | None`
    The one apiVersion rule (versions.py): the kind when its apiVersion is what a stock 1.37
    kube-apiserver serves (resource.k8s.io/v1; v1 for Node, Pod, Namespace, Event; apps/v1, batch/v1
    for the workload kinds), None for a kind fake-dra does
    not read, InputError otherwise (resource.k8s.io/v1beta1 is refused, saying what v1 changes).
`validate(obj, kind, features, where="", gate_hint=None, old=None)`
    InputError `<where>: <path>: <problem>; ...` for every unknown or misplaced field (with a
    did-you-mean), wrong type, malformed quantity, unsupported enum value or missing required field.
    KEP-5941 fields are known only when `features.shared_consumable_capacity` is on (overlay.py),
    or, for an update, when `old` (the stored object) already has them; `gate_hint` ends the
    message for such a field when the gate is off (where to turn it on).
`gates_in_use(obj, kind) -> frozenset[str]`
    The gates of overlay.GATED whose fields `obj` carries.
`check(obj, features, where, gate_hint=None) -> kind | None`
    Both: the apiVersion rule, then the schema.
`errors(obj, kind, features, proven=None) -> list[FieldError]`
    The same findings as data (path, message), for callers that report them their own way;
    `proven` (a `Proven` for the same gates) skips subtrees already found valid (a fleet's
    template-stamped slices share most of theirs).
`document_label(source, index, obj) -> str`
    `claims.yaml: document 2 (ResourceClaim gpu)`, the `where` every command passes.

The schema is generated from kubernetes-validate's strict 1.37 JSON schemas (hack/gen_schema.py,
data/k8s-1.37-strict.json); docs/cli.md ("Objects are checked as kube-apiserver checks them") says
what is and is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.errors import InputError
from driver.features import Features
from driver.schema import overlay
from driver.schema.compact import schema_for
from driver.schema.validator import FieldError, Proven, raise_for, walk
from driver.schema.versions import check_api_version, served

__all__ = ["FieldError", "Proven", "check", "check_api_version", "document_label", "errors", "gates_in_use", "gates_on", "served",
           "validate"]


def document_label(source: str, index: int | str, obj: Any) -> str:
    """`claims.yaml: document 2 (ResourceClaim gpu)`: how every command names a document in its
    messages (`index` may be `"2 item 3"` for an item of a List)."""
    kind = name = None
    if isinstance(obj, Mapping):
        kind = obj.get("kind")
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
    what = " ".join(str(x) for x in (kind, name) if x)
    return f"{source}: document {index}" + (f" ({what})" if what else "")


def gates_on(features: Features) -> frozenset[str]:
    """The gates with gated fields (overlay.GATED) that `features` turns on."""
    return frozenset(g for g in overlay.GATED if features.enabled(g))


def _walk(obj: Any, kind: str, on: frozenset[str], gate_hint: str | None,
          proven: Proven | None = None) -> tuple[list[FieldError], frozenset[str]]:
    api_version = served().get(kind)
    node = schema_for(on).root(api_version, kind) if api_version else None
    if node is None:
        raise InputError(f"{kind}: not a kind fake-dra validates (known: {', '.join(sorted(served()))})")
    if not isinstance(obj, Mapping):
        return [FieldError("", f"expected an object, got {type(obj).__name__}")], frozenset()
    return walk(node, obj, on, gate_hint, proven if proven is not None and proven.gates_on == on else None)


def gates_in_use(obj: Mapping[str, Any], kind: str) -> frozenset[str]:
    """The gates (of overlay.GATED) whose fields `obj` carries."""
    return _walk(obj, kind, frozenset(), None)[1]


def errors(obj: Mapping[str, Any], kind: str, features: Features, gate_hint: str | None = None,
           old: Mapping[str, Any] | None = None, proven: Proven | None = None) -> list[FieldError]:
    on = gates_on(features)
    if old is not None:
        on |= gates_in_use(old, kind)
    return _walk(obj, kind, on, gate_hint, proven)[0]


def validate(obj: Mapping[str, Any], kind: str, features: Features, where: str = "",
             gate_hint: str | None = None, old: Mapping[str, Any] | None = None) -> None:
    """See the module docstring; `old` is the stored object an update replaces: the fields of gates
    it already uses stay known with the gate off (kube-apiserver's dropDisabledFields rule)."""
    raise_for(errors(obj, kind, features, gate_hint, old), where)


def check(obj: Mapping[str, Any], features: Features, where: str, gate_hint: str | None = None) -> str | None:
    kind = check_api_version(obj, where)
    if kind is not None:
        validate(obj, kind, features, where, gate_hint)
    return kind
