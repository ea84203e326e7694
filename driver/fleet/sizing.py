"""What a fleet costs the API server before it exists: nodes, slices, devices and bytes of slice JSON.

The bytes are those of the ResourceSlice objects as a publisher sends them (compact JSON: apiVersion,
kind, metadata with name and the Node ownerReference, spec with pool generation and count), of every
driver the group's personality publishes (NVIDIA's: GPUs and the SR-IOV driver's VFs), exact per
node without stamping each one: nodes of a group differ only in their name (same length for
every index below 10,000) and in UUIDs (always 36 characters). etcd keeps built-in kinds as
protobuf, somewhat smaller than their JSON; JSON is what a list or watch sends, and the conservative
figure for the quota.
"""

from __future__ import annotations

from dataclasses import dataclass

from driver.fleet.spec import Fleet
from driver.fleet.template import TEMPLATE_NODE, GroupTemplate, Template
from driver.slices import slice_name
from driver.store.codec import json_text

# etcd's default backend quota is 2 GiB (--quota-backend-bytes; etcd.io/docs "System limits");
# half of it for slices leaves room for everything else a cluster stores.
DEFAULT_ETCD_BUDGET = 1 << 30
_UID = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True)
class GroupSize:
    group: str
    profile: str
    personality: str
    fidelity: str
    nodes: int
    slices: int
    devices: int
    bytes: int

    @property
    def bytes_per_node(self) -> int:
        return self.bytes // self.nodes if self.nodes else 0


def _node_bytes(template: Template, node: str) -> int:
    driver = template.driver_name
    specs = template.stamp(node).slices
    total = 0
    for i, spec in enumerate(specs):
        obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": slice_name(i, len(specs), driver, node),
                            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": _UID,
                                                 "controller": True}]},
               "spec": {**spec, "pool": {"name": node, "generation": 1, "resourceSliceCount": len(specs)}}}
        total += len(json_text(obj).encode())
    return total


def group_sizes(fleet: Fleet, templates: dict[str, GroupTemplate]) -> list[GroupSize]:
    """Per group (in file order). `templates`: each group's template by group name."""
    out = []
    for group in fleet.groups:
        template = templates[group.name]
        total = 0
        if group.count:
            # Bytes grow with the name's length only: one measured node per name length.
            base = sum(_node_bytes(t, TEMPLATE_NODE) for t in template.drivers)
            per_char = sum(_name_occurrences(t) for t in template.drivers)
            total = sum(base + (len(name) - len(TEMPLATE_NODE)) * per_char for name in group.node_names())
        out.append(GroupSize(group.name, group.profile, group.personality, group.fidelity, group.count,
                             group.count * template.slices_per_node, group.count * template.devices_per_node, total))
    return out


def _name_occurrences(template: Template) -> int:
    """How often the node name occurs in one node's slice JSON of this driver (names, pool, nodeName, owner)."""
    a, b = "n" * 10, "n" * 11
    return _node_bytes(template, b) - _node_bytes(template, a)
