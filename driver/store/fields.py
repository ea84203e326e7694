"""Field selectors as kube-apiserver takes them (`kubectl get --field-selector`), in the store's terms.

Why here and not in the commands: a selector is a question the store answers. Parsed once into a
`FieldSelector` (like labels.Selector), it is checked against the kind's selectable fields and then
matches objects one by one (`matches(obj)`); a backend that indexes a field (spec.nodeName of pods
and slices, as kube-apiserver's watch cache does) can read `equals(field)` and push the term down.

Grammar (k8s.io/apimachinery pkg/fields/selector.go, parseSelector): terms separated by commas, all
of which must hold; each `field=value`, `field==value` or `field!=value`. A value may contain `\\,`,
`\\=` and `\\\\` (UnescapeValue); an unescaped `,` or `=` in a value, or another escape, is refused with
apimachinery's words. A field an object does not have reads as the empty string (fields.Set.Get).

Which fields each kind serves, and their values, are kube-apiserver's:
- every kind: metadata.name, and metadata.namespace for namespaced ones (generic.AddObjectMetaFieldsSet;
  runtime.DefaultMetaV1FieldSelectorConversion for kinds without a conversion of their own);
- Pod (pkg/apis/core/v1/conversion.go; pkg/registry/core/pod/strategy.go ToSelectableFields):
  spec.nodeName, spec.restartPolicy, spec.schedulerName, spec.serviceAccountName, spec.hostNetwork
  ("true"/"false"), status.phase, status.podIP (the first of status.podIPs), status.nominatedNodeName,
  and status.podIPs (accepted, never set: it reads as empty), spec.host (an old name of spec.nodeName);
- Node: metadata.name, spec.unschedulable (not metadata.namespace: Node's conversion omits it);
- Namespace: metadata.name, status.phase;
- Event: involvedObject.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath}, reason,
  reportingComponent, source, type (AddFieldLabelConversionsForEvent; pkg/registry/core/event);
- ResourceSlice (pkg/apis/resource/v1/conversion.go; pkg/registry/resource/resourceslice/strategy.go):
  metadata.name, spec.nodeName, spec.driver;
- Job (pkg/apis/batch/v1/conversion.go; pkg/registry/batch/job/strategy.go): metadata.namespace,
  status.successful (the count of succeeded pods);
- every other kind (DeviceClass, ResourceClaim, ResourceClaimTemplate, Deployment, ReplicaSet, ...):
  the metadata fields only.
Refusals carry kube-apiserver's message (`field label not supported: spec.foo`, or for kinds without
a conversion `"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import InputError
from driver.store.kinds import Kind

_OPERATORS = ("!=", "==", "=")  # apimachinery tries them in this order at each position


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)  # type: ignore[assignment]
    return obj


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _pod_ip(pod: Mapping[str, Any]) -> str:
    ips = _get(pod, "status", "podIPs") or []
    first = ips[0] if isinstance(ips, list) and ips else None
    return _text(first.get("ip")) if isinstance(first, Mapping) else ""


# kind -> field -> value getter (the kind's own fields; metadata ones are added per scope below).
_SPECIFIC: dict[str, dict[str, Callable[[Mapping[str, Any]], str]]] = {
    "Pod": {
        "spec.nodeName": lambda o: _text(_get(o, "spec", "nodeName")),
        "spec.restartPolicy": lambda o: _text(_get(o, "spec", "restartPolicy")),
        "spec.schedulerName": lambda o: _text(_get(o, "spec", "schedulerName")),
        "spec.serviceAccountName": lambda o: _text(_get(o, "spec", "serviceAccountName")),
        "spec.hostNetwork": lambda o: "true" if _get(o, "spec", "hostNetwork") is True else "false",
        "status.phase": lambda o: _text(_get(o, "status", "phase")),
        "status.podIP": _pod_ip,
        "status.podIPs": lambda o: "",
        "status.nominatedNodeName": lambda o: _text(_get(o, "status", "nominatedNodeName")),
    },
    "Node": {"spec.unschedulable": lambda o: "true" if _get(o, "spec", "unschedulable") is True else "false"},
    "Namespace": {"status.phase": lambda o: _text(_get(o, "status", "phase"))},
    "Event": {
        **{f"involvedObject.{k}": (lambda key: lambda o: _text(_get(o, "involvedObject", key)))(k)
           for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reason": lambda o: _text(o.get("reason")),
        "reportingComponent": lambda o: _text(o.get("reportingComponent")),
        "source": lambda o: _text(_get(o, "source", "component")),
        "type": lambda o: _text(o.get("type")),
    },
    "Job": {"status.successful": lambda o: _text(_get(o, "status", "succeeded") or 0)},
    "ResourceSlice": {
        "spec.nodeName": lambda o: _text(_get(o, "spec", "nodeName")),
        "spec.driver": lambda o: _text(_get(o, "spec", "driver")),
    },
}
# Old names the conversion rewrites (Pod: spec.host, kept for old v1 clients).
_ALIASES: dict[str, dict[str, str]] = {"Pod": {"spec.host": "spec.nodeName"}}
# Kinds with a conversion func of their own refuse with "field label not supported".
_OWN_CONVERSION = {"Pod", "Node", "Namespace", "Event", "Job"}
_RESOURCE_SLICE_GVK = "resource.k8s.io/v1, Kind=ResourceSlice"


def selectable_fields(kind: Kind) -> dict[str, Callable[[Mapping[str, Any]], str]]:
    """The fields a field selector may name for `kind`, each with how its value is read."""
    out: dict[str, Callable[[Mapping[str, Any]], str]] = {
        "metadata.name": lambda o: _text(_get(o, "metadata", "name"))}
    if kind.namespaced or kind.kind not in _OWN_CONVERSION | {"ResourceSlice"}:
        # DefaultMetaV1FieldSelectorConversion accepts metadata.namespace for every kind without a
        # conversion of its own (it reads empty on a cluster-scoped object).
        out["metadata.namespace"] = lambda o: _text(_get(o, "metadata", "namespace"))
    out.update(_SPECIFIC.get(kind.kind, {}))
    return out


def _refusal(kind: Kind, field: str) -> str:
    if kind.kind == "ResourceSlice":
        return f"field label not supported for {_RESOURCE_SLICE_GVK}: {field}"
    if kind.kind == "Job":
        return f'field label "{field}" not supported for Job'  # pkg/apis/batch/v1/conversion.go
    if kind.kind in _OWN_CONVERSION:
        return f"field label not supported: {field}"
    return f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"'


@dataclass(frozen=True)
class Term:
    field: str
    op: str  # "=" or "!="
    value: str

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{self.op}{escaped}"


@dataclass(frozen=True)
class FieldSelector:
    """Terms that must all hold; `kind` set once `for_kind` checked the fields against it."""

    terms: tuple[Term, ...] = ()
    text: str = ""
    kind: Kind | None = None

    @property
    def empty(self) -> bool:
        return not self.terms

    def for_kind(self, kind: Kind) -> FieldSelector:
        """This selector checked against `kind`'s selectable fields (aliases resolved); InputError with
        kube-apiserver's message for a field the kind does not serve."""
        known = selectable_fields(kind)
        aliases = _ALIASES.get(kind.kind, {})
        terms = []
        for term in self.terms:
            field = aliases.get(term.field, term.field)
            if field not in known:
                raise FieldSelectorRefused(_refusal(kind, term.field))
            terms.append(Term(field, term.op, term.value))
        return FieldSelector(tuple(terms), self.text, kind)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if not self.terms:
            return True
        if self.kind is None:
            raise ValueError("FieldSelector.matches: call for_kind(kind) first")
        known = selectable_fields(self.kind)
        for term in self.terms:
            value = known[term.field](obj)
            if (value == term.value) != (term.op == "="):
                return False
        return True

    def equals(self, field: str) -> str | None:
        """The value `field` must equal, when a term says so (for a backend's index); else None."""
        return next((t.value for t in self.terms if t.field == field and t.op == "="), None)


class FieldSelectorRefused(InputError):
    """kube-apiserver refuses the selector for this kind (a BadRequest); the message is its own."""


def _unescape(value: str) -> str:
    """apimachinery's UnescapeValue, with its messages (a rune is printed as its number, as Go's %v does)."""
    if not any(c in value for c in "\\,="):
        return value
    out, in_slash = [], False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise InputError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            raise InputError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise InputError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Terms split at commas not escaped by a backslash (splitTerms)."""
    parts, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _split_term(term: str) -> tuple[str, str, str] | None:
    """field, operator, raw value at the first operator outside an escape (splitTerm)."""
    escaped = False
    for i, ch in enumerate(term):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
            continue
        for op in _OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse a field selector (empty or None: everything); InputError with apimachinery's message
    when it does not parse. Terms keep their typed order (upstream sorts them; matching is the same)."""
    if text is None or not text.strip():
        return FieldSelector()
    terms = []
    for part in _split_terms(text):
        if part == "":
            continue
        found = _split_term(part)
        if found is None:
            raise InputError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, raw = found
        terms.append(Term(field, "=" if op in ("=", "==") else "!=", _unescape(raw)))
    return FieldSelector(tuple(terms), text)
