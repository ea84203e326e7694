"""The Node object of a fleet node, kwok's way, and what "the fleet's own" Node means.

kwok takes over Nodes annotated `kwok.x-k8s.io/node: fake` (its default
`manageNodesWithAnnotationSelector`), and its documented Node carries the label `type: kwok` and the
taint `kwok.x-k8s.io/node=fake:NoSchedule` so that only pods tolerating it land there
(kubernetes-sigs/kwok site/content/en/docs/user/kwok-manage-nodes-and-pods.md, kwok@172defa). The
capacity is kwok's example (32 CPUs, 256Gi, 110 pods): a profile describes GPUs and NICs, not CPUs.
Besides kwok's, a fleet Node carries the profile label the DaemonSet reads
(`fake-dra.example.com/profile`), its personality (`fake-dra.example.com/personality`: which drivers
publish its slices), the fleet and group it belongs to, and in an annotation the names
of the group labels the fleet set, so a label dropped from the fleet file is removed from the Node
while labels someone else added stay.

A group may set its Nodes' taints (`taints:` in the fleet file; kwok's taint when it says nothing);
the keys and effects the fleet set are remembered in an annotation, so a taint dropped from the
file is removed from the Node while taints someone else added stay.

Only Nodes labelled with the fleet's name are the fleet's: it never changes or deletes another Node,
and refuses to take over one with a name it wants (`ForeignNode`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from driver.errors import InputError
from driver.fleet.spec import AdoptRule, Fleet, NodeGroup

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
PROFILE_LABEL = "fake-dra.example.com/profile"
PERSONALITY_LABEL = "fake-dra.example.com/personality"
FLEET_LABEL = "fake-dra.example.com/fleet"
GROUP_LABEL = "fake-dra.example.com/node-group"
GROUP_LABELS_ANNOTATION = "fake-dra.example.com/fleet-labels"
GROUP_TAINTS_ANNOTATION = "fake-dra.example.com/fleet-taints"
ADOPTED_ANNOTATION = "fake-dra.example.com/adopted-by"  # the fleet publishing an adopted Node's slices
# A `fake-dra run`'s Node (driver.commands._register_node): its value is the plugin registry directory
# through which `fake-dra cluster` plays the node's kubelet; it publishes its own slices.
NODE_AGENT_ANNOTATION = "fake-dra.example.com/node-agent"
CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}


class ForeignNode(InputError):
    """A Node the fleet would create exists and is not the fleet's."""


def desired_labels(fleet: Fleet, group: NodeGroup, name: str) -> dict[str, str]:
    return {
        **dict(group.labels),
        "type": "kwok",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        PROFILE_LABEL: group.profile,
        PERSONALITY_LABEL: group.personality,
        FLEET_LABEL: fleet.name,
        GROUP_LABEL: group.name,
    }


def _annotations(group: NodeGroup) -> dict[str, str]:
    return {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0",
            GROUP_LABELS_ANNOTATION: ",".join(k for k, _ in group.labels),
            GROUP_TAINTS_ANNOTATION: ",".join(f"{k}:{e}" for k, _, e in group.taints)}


def group_taints(group: NodeGroup) -> list[dict[str, str]]:
    return [{"key": k, **({"value": v} if v else {}), "effect": e} for k, v, e in group.taints]


def node_object(fleet: Fleet, group: NodeGroup, name: str) -> dict[str, Any]:
    """The Node to create for `name` (status as kwok's example; kwok keeps it alive on a cluster)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": desired_labels(fleet, group, name), "annotations": _annotations(group)},
        "spec": {"taints": group_taints(group)} if group.taints else {},
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(CAPACITY),
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake",
                         "kubeProxyVersion": "fake"},
            # Static: on a cluster kwok takes over the conditions; in the local store nothing else sets them.
            "conditions": [{"type": "Ready", "status": "True", "reason": "FleetNode",
                            "message": "simulated by fake-dra fleet: no kubelet"}],
            "phase": "Running",
        },
    }


def is_fleet_node(node: Mapping[str, Any], fleet_name: str) -> bool:
    return ((node.get("metadata") or {}).get("labels") or {}).get(FLEET_LABEL) == fleet_name


def updated_node(current: Mapping[str, Any], fleet: Fleet, group: NodeGroup) -> dict[str, Any] | None:
    """`current` with the fleet's labels, annotations and taint in place, or None when it has them
    already (nothing to write). Status is kwok's (or the kubelet's) to keep: never compared."""
    name = current["metadata"]["name"]
    if not is_fleet_node(current, fleet.name):
        owner = ((current.get("metadata") or {}).get("labels") or {}).get(FLEET_LABEL)
        whose = f"fleet {owner!r}" if owner else "no fleet"
        raise ForeignNode(f"node {name}: exists and belongs to {whose}; fleet {fleet.name!r} does not take it over "
                          f"(delete it, or rename node group {group.name!r})")
    meta = current.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    previous = {k for k in (annotations.get(GROUP_LABELS_ANNOTATION) or "").split(",") if k}
    wanted = desired_labels(fleet, group, name)
    new_labels = {k: v for k, v in labels.items() if k not in previous or k in wanted}
    new_labels.update(wanted)
    new_annotations = {**annotations, **_annotations(group)}
    taints = [t for t in (current.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
    # Taints the fleet set before: those the annotation names (a Node of an earlier release: kwok's).
    recorded = annotations.get(GROUP_TAINTS_ANNOTATION)
    previous_taints = {tuple(p.rsplit(":", 1)) for p in recorded.split(",") if ":" in p} if recorded is not None else {
        (KWOK_TAINT["key"], KWOK_TAINT["effect"])}
    wanted_taints = group_taints(group)
    wanted_keys = {(t["key"], t["effect"]) for t in wanted_taints}
    new_taints = [dict(t) for t in taints if (t.get("key"), t.get("effect")) not in previous_taints | wanted_keys] + wanted_taints
    if new_labels == labels and new_annotations == annotations and _same_taints(new_taints, taints):
        return None
    out = copy.deepcopy(dict(current))
    out["metadata"]["labels"] = new_labels
    out["metadata"]["annotations"] = new_annotations
    spec = out.setdefault("spec", {})
    if new_taints:
        spec["taints"] = new_taints
    else:
        spec.pop("taints", None)
    out["metadata"].pop("managedFields", None)
    return out


def _same_taints(a: list[Mapping[str, Any]], b: list[Mapping[str, Any]]) -> bool:
    def key(t: Mapping[str, Any]) -> tuple:
        return (t.get("key"), t.get("value") or "", t.get("effect"))
    return sorted(map(key, a)) == sorted(map(key, b))


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """metav1.LabelSelector matching (LabelSelectorAsSelector)."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and key in labels and labels[key] in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def adoption(fleet: Fleet, node: Mapping[str, Any]) -> tuple[AdoptRule, NodeGroup] | None:
    """The rule and group by which `fleet` serves a Node someone else made, None when it does not:
    a Node of any fleet, or of a node agent (which publishes its own slices), is never adopted."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if FLEET_LABEL in labels or NODE_AGENT_ANNOTATION in (meta.get("annotations") or {}):
        return None
    for rule in fleet.adopt:
        if _selects(rule.label_selector(), labels):
            profile = dict(rule.profiles).get(str(labels.get(rule.profile_label)))
            if profile is not None:
                return rule, rule.group_for(profile)
    return None


def adopted_by(node: Mapping[str, Any]) -> str | None:
    return ((node.get("metadata") or {}).get("annotations") or {}).get(ADOPTED_ANNOTATION)


def with_adoption(node: Mapping[str, Any], fleet_name: str | None) -> dict[str, Any] | None:
    """`node` with the adopted-by annotation set to `fleet_name` (None: removed); None when unchanged."""
    meta = dict(node.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    if annotations.get(ADOPTED_ANNOTATION) == fleet_name:
        return None
    if fleet_name is None:
        annotations.pop(ADOPTED_ANNOTATION, None)
    else:
        annotations[ADOPTED_ANNOTATION] = fleet_name
    meta["annotations"] = annotations
    meta.pop("managedFields", None)
    return {**node, "metadata": meta}
