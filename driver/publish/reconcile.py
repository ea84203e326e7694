"""Make the stored ResourceSlices of one node equal to the desired pool with as few writes as possible.

Semantics follow the Go helper's ResourceSlice controller (k8s.io/dynamic-resource-allocation/
resourceslice) so that a cluster sees the same behaviour as from a Go driver:
- slice names start with the slice's index in the pool, hex, zero-padded to at least 5 digits; the
  scheduler orders slices by name, so the index also keeps allocation preference stable. Unlike
  the Go helper (generateName + random suffix) names are fully deterministic
  (`<index>-<driver>-<node>`): a slice deleted by someone else comes back under the same name,
  and two racing publishers collide on create (409) instead of publishing duplicates;
- existing slices are matched to desired ones by the index in their name; slices of an older pool
  generation, of another pool, or with an unparsable/out-of-range index are obsolete and deleted
  (first, so devices that are gone disappear even if the rest fails);
- `pool.generation` is kept when a single write suffices (one update, or one create restoring a
  slice someone deleted: one object write is atomic, so no reader can see a mixed pool), and
  bumped otherwise, which then rewrites every slice. The Go helper also bumps for a single create;
  we do not, so an externally deleted slice costs one request, not a rewrite of the pool.
  `resourceSliceCount` is the number of desired slices;
- every slice carries spec.nodeName and, when the Node's UID is known, a controller ownerReference
  to the Node so garbage collection removes slices with the node;
- a conflict (409) or a vanished object restarts the pass from a fresh list (bounded attempts);
- after each write the stored spec is compared with the written one: dropped fields are reported
  per gate (see fields.py) for the publisher to react to.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from driver.errors import ConflictError, FakeDraError, NotFoundError
from driver.publish.backend import SliceBackend
from driver.publish.fields import dropped_gates, semantic_equal
from driver.publish.groups import ProtectedDevice, protect_allocated_groups, published_devices
from driver.slices.pool import index_length, slice_name

log = logging.getLogger("fake-dra.publish")

MAX_ATTEMPTS = 5


class PoolLike(Protocol):
    """What reconcile needs of driver.slices.Pool: the pool name and its slice specs."""

    name: str
    slices: Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class DroppedFields:
    slice_name: str
    gates: dict[str, list[str]]  # gate -> dotted spec paths the server did not store


@dataclass
class ReconcileStats:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    conflicts: int = 0
    attempts: int = 0
    generation: int = 0
    slices: int = 0
    devices: int = 0
    dropped: list[DroppedFields] = field(default_factory=list)
    protected: list[ProtectedDevice] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return self.created + self.updated + self.deleted

    def dropped_gate_names(self) -> set[str]:
        return {g for d in self.dropped for g in d.gates}

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created, "updated": self.updated, "deleted": self.deleted,
            "unchanged": self.unchanged, "writes": self.writes, "conflicts": self.conflicts,
            "attempts": self.attempts, "generation": self.generation, "slices": self.slices,
            "devices": self.devices,
            "dropped": [{"slice": d.slice_name, "gates": d.gates} for d in self.dropped],
            "protectedGroups": [p.device for p in self.protected],
        }


def decode_index(name: str, expected_length: int) -> int | None:
    head, sep, _ = name.partition("-")
    if not sep or len(head) != expected_length:
        return None
    try:
        return int(head, 16)
    except ValueError:
        return None


def reconcile(
    backend: SliceBackend,
    pool: PoolLike,
    *,
    node_name: str,
    driver_name: str,
    owner_uid: str | None = None,
    groups_enabled: bool | None = None,
    max_attempts: int = MAX_ATTEMPTS,
) -> ReconcileStats:
    """One reconcile pass (retried from a fresh list on conflicts). Raises FakeDraError on failure.

    `groups_enabled` says whether the scheduler honours compatibility groups (protects allocated
    devices' groups); None infers it from the pool (any device declaring groups).
    """
    stats = ReconcileStats()
    desired = [_desired_spec(s, pool.name, node_name, driver_name) for s in pool.slices]
    stats.slices = len(desired)
    stats.devices = sum(len(s.get("devices") or []) for s in desired)
    if groups_enabled is None:
        groups_enabled = any(
            e.get("compatibilityGroups") for s in desired for d in s.get("devices") or [] for e in d.get("consumesCounters") or []
        )
    last_error: FakeDraError | None = None
    for _ in range(max_attempts):
        stats.attempts += 1
        try:
            _attempt(backend, desired, pool.name, node_name, driver_name, owner_uid, groups_enabled, stats)
            return stats
        except (ConflictError, NotFoundError) as exc:
            stats.conflicts += 1
            last_error = exc
            log.info("slice write raced with another writer; re-listing", extra={"error": str(exc)})
    raise ConflictError(f"publishing pool {pool.name!r}: gave up after {max_attempts} conflicting attempts: {last_error}")


def _desired_spec(spec: Mapping[str, Any], pool: str, node: str, driver: str) -> dict[str, Any]:
    out = dict(spec)  # shallow: nested values are never mutated in place (groups.py copies)
    out["driver"] = driver
    out["nodeName"] = node
    out["pool"] = {"name": pool}
    for k in ("nodeSelector", "allNodes"):
        out.pop(k, None)
    return out


def _attempt(
    backend: SliceBackend,
    desired: list[dict[str, Any]],
    pool: str,
    node: str,
    driver: str,
    owner_uid: str | None,
    groups_enabled: bool,
    stats: ReconcileStats,
) -> None:
    existing = backend.list_slices(driver, node)  # already only this driver's slices on this node
    ours = [s for s in existing if ((s.get("spec") or {}).get("pool") or {}).get("name") == pool]
    ours_ids = {id(s) for s in ours}
    obsolete = [s for s in existing if id(s) not in ours_ids]
    generation = max((int(s["spec"]["pool"].get("generation") or 0) for s in ours), default=0)

    matched: dict[int, dict[str, Any]] = {}
    length = index_length(len(desired))
    for s in sorted(ours, key=lambda o: o["metadata"]["name"]):
        idx = decode_index(s["metadata"]["name"], length)
        if int(s["spec"]["pool"].get("generation") or 0) < generation or idx is None or idx >= len(desired) or idx in matched:
            obsolete.append(s)
        else:
            matched[idx] = s

    current = [matched[i] for i in sorted(matched)]

    def allocated() -> set[str] | None:
        try:
            return backend.allocated_devices(driver, pool)
        except (ConflictError, NotFoundError):
            raise
        except FakeDraError as exc:
            log.warning("cannot list ResourceClaims to find allocated devices; keeping the published "
                        "compatibility groups of every device whose groups would change (grant `list` on "
                        "resourceclaims to let released devices pick up new groups)", extra={"error": str(exc)})
            return None

    specs, protected = protect_allocated_groups(desired, published_devices(current), allocated, groups_enabled)
    stats.protected = protected
    owner = _owner_refs(node, owner_uid)

    def pool_meta(gen: int) -> dict[str, Any]:
        return {"name": pool, "generation": gen, "resourceSliceCount": len(specs)}

    changed = {
        i for i, s in matched.items()
        if not semantic_equal(_with_pool(specs[i], pool_meta(generation)), s.get("spec"))
        or (owner and not _has_owner(s, owner_uid))
    }
    new = [i for i in range(len(specs)) if i not in matched]
    if generation == 0 or len(new) + len(changed) > 1:
        generation += 1
        changed = set(matched)  # every slice must carry the new generation
    stats.generation = generation
    stats.unchanged = len(matched) - len(changed)

    for s in obsolete:
        try:
            backend.delete_slice(s["metadata"]["name"], uid=s["metadata"].get("uid"),
                                 resource_version=s["metadata"].get("resourceVersion"))
        except NotFoundError:
            continue  # someone else deleted it already: the goal is reached
        stats.deleted += 1
        log.info("deleted obsolete slice", extra={"slice": s["metadata"]["name"]})

    for i in sorted(changed):
        obj = dict(matched[i])
        obj["metadata"] = dict(obj["metadata"])
        obj["spec"] = _with_pool(specs[i], pool_meta(generation))
        if owner:
            obj["metadata"]["ownerReferences"] = owner
        obj["metadata"].pop("managedFields", None)
        stored = backend.update_slice(obj)
        stats.updated += 1
        _check_dropped(obj, stored, stats)

    for i in new:
        obj = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": slice_name(i, len(specs), driver, node)},
            "spec": _with_pool(specs[i], pool_meta(generation)),
        }
        if owner:
            obj["metadata"]["ownerReferences"] = owner
        stored = backend.create_slice(obj)
        stats.created += 1
        _check_dropped(obj, stored, stats)


def _with_pool(spec: Mapping[str, Any], pool_meta: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    out["pool"] = dict(pool_meta)
    return out


def _owner_refs(node: str, uid: str | None) -> list[dict[str, Any]]:
    if not uid:
        return []
    return [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid, "controller": True}]


def _has_owner(obj: Mapping[str, Any], uid: str | None) -> bool:
    return any(r.get("uid") == uid and r.get("kind") == "Node" for r in obj.get("metadata", {}).get("ownerReferences") or [])


def _check_dropped(written: Mapping[str, Any], stored: Mapping[str, Any], stats: ReconcileStats) -> None:
    gates = dropped_gates(written.get("spec") or {}, stored.get("spec") or {})
    if gates:
        name = stored.get("metadata", {}).get("name") or written["metadata"]["name"]
        stats.dropped.append(DroppedFields(name, gates))
        log.warning(
            "the server dropped fields of this slice; the gates owning them are probably off",
            extra={"slice": name, "gates": sorted(gates), "paths": [p for ps in gates.values() for p in ps][:10]},
        )


def delete_all(backend: SliceBackend, *, node_name: str, driver_name: str) -> int:
    """Remove every slice of this driver on this node (`--delete-slices-on-exit`); returns the count."""
    count = 0
    for s in backend.list_slices(driver_name, node_name):
        try:
            backend.delete_slice(s["metadata"]["name"], uid=s["metadata"].get("uid"))
            count += 1
        except NotFoundError:
            pass
    return count

