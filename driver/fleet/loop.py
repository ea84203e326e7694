"""`fake-dra fleet run`: keep a target holding a fleet, pass after pass.

Each pass re-reads the fleet file (in the kwok-fleet Deployment a mounted ConfigMap, which the
kubelet refreshes within about a minute of an edit) and applies it (driver.fleet.apply), which puts
back slices someone deleted or changed. A file that stops parsing (or names a group its personality
cannot render) keeps the last good fleet (the error is logged every pass). Node deletions are
followed, not undone: a fleet Node someone deletes stays deleted, and its slices go (what the
garbage collector does on a cluster, and nobody does in the local store), until the fleet file
changes or someone creates the Node again. A Node the fleet adopted (an `adopt` rule) that someone
deletes loses its slices on the next pass, as the garbage collector would remove them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from driver.errors import InputError
from driver.features import Features
from driver.fleet.apply import ApplyStats, apply_fleet, group_templates
from driver.fleet.nodes import is_fleet_node
from driver.fleet.spec import Fleet
from driver.fleet.targets import FleetTarget
from driver.fleet.template import Templates

log = logging.getLogger("fake-dra.fleet")


class FleetLoop:
    """`on_fleet(fleet)` is called with each new fleet before it is applied (the command seeds the
    local store's DeviceClasses of the fleet's personalities there, as `fleet apply` does)."""

    def __init__(self, target: FleetTarget, load: Callable[[], Fleet], *, driver_name: str, features: Features,
                 on_fleet: Callable[[Fleet], None] | None = None) -> None:
        self.target = target
        self.load = load
        self.on_fleet = on_fleet
        self.driver_name = driver_name
        self.features = features
        self.templates = Templates(driver_name)
        self.fleet: Fleet | None = None
        self.present: set[str] = set()  # fleet nodes whose Node existed after the last pass
        self.absent: set[str] = set()  # deleted by someone since: not recreated
        self.adopted: set[str] = set()  # Nodes of others whose slices the last pass published
        self.passes = 0

    def close(self) -> None:
        self.templates.close()

    def _current(self) -> Fleet:
        try:
            fleet = self.load()
            group_templates(fleet, self.templates, self.features)  # a group its personality cannot render
        except InputError as exc:
            if self.fleet is None:
                raise
            log.error("fleet file unreadable; keeping the last good fleet", extra={"error": str(exc)})
            return self.fleet
        if fleet != self.fleet:
            if self.fleet is not None:
                log.info("fleet file changed", extra={"fleet": fleet.name, "nodes": fleet.size})
            if self.on_fleet is not None:
                self.on_fleet(fleet)
            self.fleet, self.absent = fleet, set()
        return fleet

    def run_once(self) -> ApplyStats:
        self.passes += 1
        fleet = self._current()
        listed = self.target.list_nodes()
        existing = {(n.get("metadata") or {}).get("name") for n in listed if is_fleet_node(n, fleet.name)}
        vanished = self.adopted - {(n.get("metadata") or {}).get("name") for n in listed}
        deleted = self.present - existing
        if deleted:
            log.info("fleet nodes deleted by someone else; following", extra={"nodes": sorted(deleted)[:20],
                                                                             "count": len(deleted)})
        self.absent = (self.absent | deleted) - existing
        stats = apply_fleet(self.target, fleet, driver_name=self.driver_name, features=self.features,
                            templates=self.templates, absent=self.absent | vanished)
        self.present = {name for name, _ in fleet.nodes()} - self.absent
        self.adopted = set(stats.adopted)
        return stats
