"""Make a target hold exactly a fleet: its Nodes, and each node's pool as `fake-dra run` publishes it.

One pass (`apply_fleet`):
1. list every Node and index the fleet drivers' slices once (driver.fleet.template.fleet_drivers:
   fake-dra's and every other personality's); refuse, before any write, a node name the fleet wants
   that another owner's Node holds;
2. node by node (in fleet order): create or update the Node (kwok's conventions, driver.fleet.nodes),
   then, for each driver of the group's personality (NVIDIA's has two: the GPUs and the SR-IOV
   driver's VFs), unless the index can tell the node's slices are exactly what it would write,
   reconcile them with the very reconcile `fake-dra run` uses (driver.publish.reconcile: names,
   generation rule, resourceSliceCount, controller ownerReference to the Node's UID), fed the
   indexed slices instead of a list per node; slices of drivers the group no longer uses (its
   personality changed) are removed;
3. nodes the fleet made that the file no longer has: their slices, then the Node.
Slices go before a Node is deleted and after it is created, so a pass cut short anywhere (Ctrl-C,
a crash) leaves Nodes whose pools the next pass completes, never slices without their Node.

An unchanged fleet costs no write at all: Nodes are compared on what the fleet sets (labels,
annotations, taint; never status, which kwok owns), slices as `reconcile` compares them.
`delete_fleet` removes every slice and Node the fleet made (found by its label, whatever the file
says now).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from driver.errors import ConfigError, ConflictError, InputError, NotFoundError
from driver.features import Features
from driver.fleet.nodes import ForeignNode, is_fleet_node, node_object, updated_node
from driver.fleet.spec import Fleet, NodeGroup
from driver.fleet.targets import BATCH_NODES, FleetTarget
from driver.fleet.template import GroupTemplate, Template, Templates, features_for, fleet_drivers
from driver.kube.allocated import allocated_from_claims
from driver.publish.reconcile import MAX_ATTEMPTS, ReconcileStats, reconcile
from driver.slices import slice_name
from driver.slicewrites import ForwardsSliceWrites

Progress = Callable[[int, int], None]  # (nodes done, nodes in all)


@dataclass
class ApplyStats:
    nodes: int = 0  # nodes in the fleet
    nodes_created: int = 0
    nodes_updated: int = 0
    nodes_deleted: int = 0
    slices: int = 0  # slices of the fleet after the pass
    devices: int = 0
    slices_created: int = 0
    slices_updated: int = 0
    slices_deleted: int = 0
    conflicts: int = 0
    templates: int = 0  # group templates rendered (one per distinct personality, profile, config, fidelity, gates)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return (self.nodes_created + self.nodes_updated + self.nodes_deleted
                + self.slices_created + self.slices_updated + self.slices_deleted)

    def add_unchanged(self, template: Template) -> None:
        self.slices += len(template.specs)
        self.devices += template.devices_per_node

    def add(self, stats: ReconcileStats) -> None:
        self.slices += stats.slices
        self.devices += stats.devices
        self.slices_created += stats.created
        self.slices_updated += stats.updated
        self.slices_deleted += stats.deleted
        self.conflicts += stats.conflicts

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes, "nodesCreated": self.nodes_created, "nodesUpdated": self.nodes_updated,
            "nodesDeleted": self.nodes_deleted, "slices": self.slices, "devices": self.devices,
            "slicesCreated": self.slices_created, "slicesUpdated": self.slices_updated,
            "slicesDeleted": self.slices_deleted, "writes": self.writes, "conflicts": self.conflicts,
            "templates": self.templates, "seconds": round(self.seconds, 3), "warnings": list(self.warnings),
        }


class _NodeSlices(ForwardsSliceWrites):
    """A SliceBackend for one node over slices listed for the whole fleet (driver.publish.reconcile
    lists once per attempt; after a conflict it asks the target afresh)."""

    kind = "fleet"

    def __init__(self, target: FleetTarget, listed: list[dict[str, Any]], claims: Callable[[], list[dict[str, Any]]]) -> None:
        self.target = target
        self.listed: list[dict[str, Any]] | None = listed
        self.claims = claims

    def list_slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        if self.listed is not None:
            listed, self.listed = self.listed, None
            return listed
        return self.target.list_node_slices(driver, node)

    def _slice_writes(self) -> Any:
        return self.target

    def node_uid(self, node: str) -> str | None:  # the fleet passes owner_uid itself
        return None

    def allocated_devices(self, driver: str, pool: str) -> set[str]:
        return allocated_from_claims(self.claims(), driver, pool)


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def group_templates(fleet: Fleet, templates: Templates, features: Features) -> dict[str, GroupTemplate]:
    """Each group's template by group name; InputError naming the group when its personality cannot
    render its profile with its driver config (a static MIG layout the GPU model does not offer, a
    GPU model without NVML facts): nothing is written for any group then."""
    out = {}
    for i, g in enumerate(fleet.groups):
        try:
            out[g.name] = templates.get(g.profile, g.driver_config, g.fidelity, features, g.personality)
        except (ConfigError, InputError) as exc:
            raise InputError(f"spec.nodeGroups[{i}] ({g.name}: profile {g.profile}, personality {g.personality}): "
                             f"{exc}") from None
    return out


def check_foreign(fleet: Fleet, nodes: dict[str, dict[str, Any]]) -> None:
    """ForeignNode for the first node name the fleet wants that another owner's Node holds."""
    for name, group in fleet.nodes():
        node = nodes.get(name)
        if node is not None and not is_fleet_node(node, fleet.name):
            updated_node(node, fleet, group)  # raises ForeignNode with the owner named


def apply_fleet(
    target: FleetTarget,
    fleet: Fleet,
    *,
    driver_name: str,
    features: Features,
    templates: Templates,
    progress: Progress | None = None,
    absent: Collection[str] = (),
) -> ApplyStats:
    """One pass making `target` hold `fleet` (module docstring). Raises ForeignNode before any write,
    and InputError naming the group when a group's template cannot be rendered. `driver_name` is the
    fake-dra personality's driver (`--driver-name`).

    `absent`: nodes of the fleet to leave without a Node this pass (someone deleted them while
    `fleet run` watched); slices still published for them are removed, as the garbage collector
    removes a deleted Node's slices on a cluster."""
    started = time.monotonic()
    drivers = fleet_drivers(driver_name)
    nodes = {_name(n): n for n in target.list_nodes()}
    wanted = [(name, group) for name, group in fleet.nodes() if name not in absent]
    stats = ApplyStats(nodes=len(wanted))
    check_foreign(fleet, nodes)
    groups = group_templates(fleet, templates, features)
    names = {node: {t.driver_name: _slice_names(t, node) for t in groups[g.name].drivers} for node, g in wanted}
    index = target.slice_index(drivers, {n for per_driver in names.values() for ns in per_driver.values() for n in ns})
    claims: list[list[dict[str, Any]]] = []

    def all_claims() -> list[dict[str, Any]]:
        if not claims:
            claims.append(target.list_claims())
        return claims[0]

    gone = [n for name, n in sorted(nodes.items()) if is_fleet_node(n, fleet.name) and name not in names]
    total = len(wanted) + len(gone)
    done = 0
    for start in range(0, len(wanted), BATCH_NODES):
        with target.batch():
            for name, group in wanted[start:start + BATCH_NODES]:
                uid = _ensure_node(target, fleet, group, name, nodes.get(name), stats)
                groups_enabled = features_for(group.fidelity, features).compatibility_groups
                for template in groups[group.name].drivers:
                    driver, expected = template.driver_name, names[name][template.driver_name]
                    ids = template.identities_of(name)
                    if index.unchanged(driver, name, expected, lambda gen: template.spec_texts(name, gen, ids), uid):
                        stats.add_unchanged(template)
                        continue
                    view = _NodeSlices(target, index.take(driver, name, expected), all_claims)
                    stats.add(reconcile(view, template.stamp(name, ids), node_name=name, driver_name=driver,
                                        owner_uid=uid, groups_enabled=groups_enabled))
                for driver in drivers:
                    if driver not in names[name]:  # the group's personality does not publish it (any more)
                        _remove_slices(target, index.take(driver, name, []), stats)
                done += 1
                if progress is not None:
                    progress(done, total)
    with target.batch():
        for name in sorted(absent):
            _remove_slices(target, index.for_node(name), stats)
    for start in range(0, len(gone), BATCH_NODES):
        with target.batch():
            for node in gone[start:start + BATCH_NODES]:
                _remove_node(target, node, index.for_node(_name(node)), stats)
                done += 1
                if progress is not None:
                    progress(done, total)
    stats.templates = templates.rendered
    stats.warnings = sorted({w for t in templates.all() for w in t.warnings})
    stats.seconds = time.monotonic() - started
    return stats


def _slice_names(template: Template, node: str) -> list[str]:
    count = len(template.specs)
    return [slice_name(i, count, template.driver_name, node) for i in range(count)]


def _ensure_node(target: FleetTarget, fleet: Fleet, group: NodeGroup, name: str, current: dict[str, Any] | None,
                 stats: ApplyStats) -> str | None:
    """The Node's UID after creating or updating it as the fleet wants it. A Node changed meanwhile
    (on a cluster kwok writes its status all the time, which moves its resourceVersion) is read
    again and judged afresh."""
    for _ in range(MAX_ATTEMPTS):
        try:
            if current is None:
                created = target.create_node(node_object(fleet, group, name))
                stats.nodes_created += 1
                return (created.get("metadata") or {}).get("uid")
            changed = updated_node(current, fleet, group)
            if changed is None:
                return (current.get("metadata") or {}).get("uid")
            stored = target.update_node(changed)
            stats.nodes_updated += 1
            return (stored.get("metadata") or {}).get("uid")
        except (ConflictError, NotFoundError):
            stats.conflicts += 1
            current = target.get_node(name)
    raise ConflictError(f"node {name}: changed by someone else on each of {MAX_ATTEMPTS} attempts")


def _remove_slices(target: FleetTarget, slices: list[dict[str, Any]], stats: ApplyStats) -> None:
    for s in slices:
        try:
            target.delete_slice(_name(s), uid=(s.get("metadata") or {}).get("uid"))
            stats.slices_deleted += 1
        except NotFoundError:
            pass


def _remove_node(target: FleetTarget, node: dict[str, Any], slices: list[dict[str, Any]], stats: ApplyStats) -> None:
    _remove_slices(target, slices, stats)
    try:
        target.delete_node(_name(node), (node.get("metadata") or {}).get("uid"))
        stats.nodes_deleted += 1
    except NotFoundError:
        pass


def delete_fleet(target: FleetTarget, fleet_name: str, *, driver_name: str, progress: Progress | None = None) -> ApplyStats:
    """Remove every slice and Node the fleet `fleet_name` made: its Nodes by their fleet label, and
    the fleet drivers' slices on them (whatever personalities the file names now)."""
    started = time.monotonic()
    stats = ApplyStats()
    drivers = fleet_drivers(driver_name)
    ours = sorted((n for n in target.list_nodes() if is_fleet_node(n, fleet_name)), key=_name)
    index = target.slice_index(drivers, ())
    for start in range(0, len(ours), BATCH_NODES):
        with target.batch():
            for i, node in enumerate(ours[start:start + BATCH_NODES], start + 1):
                # One node's slices at a time: memory holds one node, never the fleet (5,000 DGX nodes
                # are 1.1 GB of slice JSON).
                _remove_node(target, node, index.for_node(_name(node)), stats)
                if progress is not None:
                    progress(i, len(ours))
    stats.seconds = time.monotonic() - started
    return stats


__all__ = ["ApplyStats", "ForeignNode", "apply_fleet", "check_foreign", "delete_fleet", "group_templates"]
