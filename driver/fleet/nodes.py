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

Only Nodes labelled with the fleet's name are the fleet's: it never changes or deletes another Node,
and refuses to take over one with a name it wants (`ForeignNode`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from driver.errors import InputError
from driver.fleet.spec import Fleet, NodeGroup

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
PROFILE_LABEL = "fake-dra.example.com/profile"
PERSONALITY_LABEL = "fake-dra.example.com/personality"
FLEET_LABEL = "fake-dra.example.com/fleet"
GROUP_LABEL = "fake-dra.example.com/node-group"
GROUP_LABELS_ANNOTATION = "fake-dra.example.com/fleet-labels"
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
            GROUP_LABELS_ANNOTATION: ",".join(k for k, _ in group.labels)}


def node_object(fleet: Fleet, group: NodeGroup, name: str) -> dict[str, Any]:
    """The Node to create for `name` (status as kwok's example; kwok keeps it alive on a cluster)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": desired_labels(fleet, group, name), "annotations": _annotations(group)},
        "spec": {"taints": [dict(KWOK_TAINT)]},
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
    taints = list((current.get("spec") or {}).get("taints") or [])
    has_taint = any(isinstance(t, Mapping) and t.get("key") == KWOK_TAINT["key"] and t.get("effect") == KWOK_TAINT["effect"]
                    for t in taints)
    if new_labels == labels and new_annotations == annotations and has_taint:
        return None
    out = copy.deepcopy(dict(current))
    out["metadata"]["labels"] = new_labels
    out["metadata"]["annotations"] = new_annotations
    if not has_taint:
        out.setdefault("spec", {})["taints"] = taints + [dict(KWOK_TAINT)]
    out["metadata"].pop("managedFields", None)
    return out
