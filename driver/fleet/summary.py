"""What a fleet has in use, per node group: the summary `fake-dra show --store` prints for fleets.

A partition map per node is what a person reads for a handful of nodes; for 1,000 it is a wall of
text. A group's nodes share their hardware, so the question becomes "how much of the group is
taken": MIG memory slices (the `memory-slice-N` counters every MIG-capable GPU publishes, one per
slice), VF bandwidth (the `bandwidth` counter of each NIC's counter set) and devices held by at
least one claim, summed over the group from driver.allocator.usage (the allocator's accounting),
over every driver's pool of the node (an nvidia-personality node has two: NVIDIA's GPUs and the
SR-IOV driver's VFs). Groups at `fidelity: whole` publish no counters, so only their held devices
count; so do NVIDIA's nodes without DynamicMIG (its MIG devices, static or none, consume no
counters) and the SR-IOV driver's VFs (no bandwidth counter there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.allocator.usage import Usage
from driver.fleet.nodes import FLEET_LABEL, GROUP_LABEL, PERSONALITY_LABEL, PROFILE_LABEL
from driver.personality import DEFAULT_PERSONALITY


@dataclass
class GroupUsage:
    fleet: str
    group: str
    profile: str
    personality: str = DEFAULT_PERSONALITY
    nodes: int = 0
    devices: int = 0
    held: int = 0
    mig_slices: int = 0
    mig_slices_used: Fraction = Fraction(0)
    bandwidth: Fraction = Fraction(0)  # bit/s
    bandwidth_used: Fraction = Fraction(0)


Member = tuple[str, str, str, str]  # fleet, group, profile, personality


def fleet_nodes(nodes: Iterable[Mapping[str, Any]]) -> dict[str, Member]:
    """Node name -> (fleet, group, profile, personality) for every Node a fleet made (a Node of a
    fleet older than personalities has no personality label: fake-dra's)."""
    out = {}
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(FLEET_LABEL):
            out[str(node["metadata"]["name"])] = (str(labels[FLEET_LABEL]), str(labels.get(GROUP_LABEL, "")),
                                                 str(labels.get(PROFILE_LABEL, "")),
                                                 str(labels.get(PERSONALITY_LABEL) or DEFAULT_PERSONALITY))
    return out


def group_usage(usages: Usage | Iterable[Usage], members: Mapping[str, Member]) -> list[GroupUsage]:
    """Per (fleet, group), in name order: the sums over its nodes' pools (of every driver). `usages`
    may be one Usage of the whole store or one per node (`show --store` reads a fleet node by node,
    so memory holds one node's slices, not 5,000 nodes')."""
    groups: dict[tuple[str, str], GroupUsage] = {}
    seen: dict[tuple[str, str], set[str]] = {}
    for usage in [usages] if isinstance(usages, Usage) else usages:
        for pool in usage.pools.values():
            node = pool.node
            if node not in members:
                continue
            fleet, group, profile, personality = members[node]
            g = groups.setdefault((fleet, group), GroupUsage(fleet, group, profile, personality))
            seen.setdefault((fleet, group), set()).add(node)
            g.devices += len(pool.devices)
            g.held += sum(1 for holds in pool.holds.values() if holds)
            for counters in pool.counters().values():
                for name, use in counters.items():
                    if name.startswith("memory-slice-"):
                        g.mig_slices += int(use.total)
                        g.mig_slices_used += use.used
                    elif name == "bandwidth":
                        g.bandwidth += use.total
                        g.bandwidth_used += use.used
    for key, g in groups.items():
        g.nodes = len(seen[key])
    return [groups[k] for k in sorted(groups)]
