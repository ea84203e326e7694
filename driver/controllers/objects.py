"""What every controller reads of an object: keys, owner references, label selectors, pod phases.

The rules are apimachinery's and core/v1's (cited at each helper), written once here so that the
controllers agree on them: which owner reference is the controller
(k8s.io/apimachinery pkg/apis/meta/v1 GetControllerOf), how a LabelSelector matches
(pkg/apis/meta/v1 LabelSelectorAsSelector: matchLabels and matchExpressions ANDed, an empty
selector matches everything, a missing one nothing), when a pod is terminal or ready
(k8s.io/kubernetes pkg/api/v1/pod IsPodTerminal, IsPodReady).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from driver.store.kinds import KINDS, Kind

Key = tuple[str, str | None, str]  # (resource, namespace or None, name)

_BY_KIND = {k.kind: k for k in KINDS}
TERMINAL = ("Succeeded", "Failed")


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def key_of(resource: str, obj: Mapping[str, Any]) -> Key:
    m = meta(obj)
    return resource, m.get("namespace") or None, str(m.get("name"))


def label(key: Key) -> str:
    resource, ns, name = key
    return f"{resource} {ns}/{name}" if ns else f"{resource} {name}"


def kind_of(kind: Any) -> Kind | None:
    return _BY_KIND.get(kind) if isinstance(kind, str) else None


def owner_refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    refs = meta(obj).get("ownerReferences")
    return [r for r in refs if isinstance(r, Mapping) and r.get("uid")] if isinstance(refs, list) else []


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true` (GetControllerOf), None when there is none."""
    return next((r for r in owner_refs(obj) if r.get("controller") is True), None)


def owner_key(ref: Mapping[str, Any], dependent_namespace: str | None) -> Key | None:
    """Where the owner a reference names is stored: namespaced owners live in the dependent's
    namespace (owner references never cross namespaces); None for a kind the store does not keep."""
    kind = kind_of(ref.get("kind"))
    if kind is None:
        return None
    return kind.plural, dependent_namespace if kind.namespaced else None, str(ref.get("name"))


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in owner_refs(obj))


def new_owner_ref(owner: Mapping[str, Any], *, controller: bool = True, block: bool = True) -> dict[str, Any]:
    """The ownerReference a controller sets on what it makes (metav1.NewControllerRef)."""
    m = meta(owner)
    return {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"), "name": m.get("name"),
            "uid": m.get("uid"), "controller": controller, "blockOwnerDeletion": block}


def selector_matches(selector: Any, labels: Mapping[str, Any] | None) -> bool:
    """metav1.LabelSelector semantics; a None selector matches nothing, `{}` everything."""
    if not isinstance(selector, Mapping):
        return False
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, Mapping):
            return False
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        has = key in labels
        if op == "In" and not (has and labels[key] in values):
            return False
        if op == "NotIn" and has and labels[key] in values:
            return False
        if op == "Exists" and not has:
            return False
        if op == "DoesNotExist" and has:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """IsPodTerminal: phase Succeeded or Failed."""
    return pod_phase(pod) in TERMINAL


def is_active(pod: Mapping[str, Any]) -> bool:
    """controller.IsPodActive: not terminal and not being deleted (what a ReplicaSet or Job counts)."""
    return not is_terminal(pod) and not meta(pod).get("deletionTimestamp")


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    """IsPodReady: the Ready condition is True."""
    found = condition(pod, "Ready")
    return bool(found and found.get("status") == "True")


def with_condition(conditions: Any, wanted: Mapping[str, Any], now: str) -> list[dict[str, Any]]:
    """`conditions` with `wanted` in place; lastTransitionTime moves only when the status changes."""
    out: list[dict[str, Any]] = []
    found = False
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, Mapping) and c.get("type") == wanted.get("type"):
            found = True
            same = c.get("status") == wanted.get("status")
            merged = {**c, **wanted, "lastTransitionTime": c.get("lastTransitionTime") if same else now}
            out.append(merged)
        elif isinstance(c, Mapping):
            out.append(dict(c))
    if not found:
        out.append({**wanted, "lastTransitionTime": now})
    return out


def int_or_percent(value: Any, total: int, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: `25%` of `total`, rounded up or down."""
    if isinstance(value, int):
        return value
    text = str(value or "0").strip()
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError:
            return 0
        scaled = percent * total
        return -(-scaled // 100) if round_up else scaled // 100
    try:
        return int(text)
    except ValueError:
        return 0


def seconds_since(stamp: Any) -> float | None:
    """Seconds since an API timestamp (RFC 3339, UTC), None when absent or unreadable."""
    if not isinstance(stamp, str):
        return None
    try:
        then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return (datetime.now(timezone.utc) - then).total_seconds()
