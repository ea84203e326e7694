"""The secondary index entries of a stored object: what the store can find without reading it.

Each entry is a (key, value) pair in the `refs` table (driver.store.database), rewritten with the
object on every write. The keys are what the commands and controllers ask:

- `label/<key>` -> value: label selectors (`get -l`, fleet membership, workload selectors);
- `owner` -> uid, one per ownerReference (the garbage collector's dependents of an owner);
- `node` -> spec.nodeName of Pods and ResourceSlices (`describe node`, a fleet node's slices,
  pod GC; "" for a slice without one), `phase` -> status.phase of Pods (kubectl's field selectors);
- `driver` -> spec.driver of ResourceSlices and DeviceTaintRules, `pool` -> `driver/pool` of a slice;
- `taint` -> each effect of a slice's device taints (the device taint eviction controller finds the
  slices that can evict without reading the others);
- `reserved` -> uid, one per status.reservedFor entry of a ResourceClaim (which claims a pod holds);
- `involved` -> `kind/namespace/name` of an Event's involvedObject (`describe`'s events).

Allocations (`allocation_entries`) are indexed apart: the devices an allocated claim holds, so
that a write allocating a device another claim holds exclusively is refused whoever wrote first
(issue 29: two schedulers must never double-book a device), and the pools they come from, whose
revision the schedulers check before they write (`ObjectStore.check_pools`).

Values that are not what the API says (a label that is a number, an ownerReference that is not
an object) are simply not indexed: the object's readers report its shape.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

NODE_FIELDS = {"pods": ("spec", "nodeName"), "resourceslices": ("spec", "nodeName")}


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def entries(resource: str, obj: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, value) index entries of `obj` stored under `resource`."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        labels = meta.get("labels")
        if isinstance(labels, Mapping):
            for key, value in labels.items():
                if isinstance(key, str) and isinstance(value, str):
                    yield f"label/{key}", value
        owners = meta.get("ownerReferences")
        for ref in owners if isinstance(owners, list) else ():
            if isinstance(ref, Mapping) and isinstance(ref.get("uid"), str):
                yield "owner", ref["uid"]
    path = NODE_FIELDS.get(resource)
    if path is not None:
        node = _get(obj, *path)
        if isinstance(node, str) and node:
            yield "node", node
        elif resource == "resourceslices":
            yield "node", ""  # a pool every node may see (nodeSelector, allNodes): found by "no node"
    if resource == "pods":
        phase = _get(obj, "status", "phase")
        if isinstance(phase, str):
            yield "phase", phase
    elif resource in ("resourceslices", "devicetaintrules"):
        driver = _get(obj, "spec", "driver")
        if isinstance(driver, str):
            yield "driver", driver
            pool = _get(obj, "spec", "pool", "name")
            if resource == "resourceslices" and isinstance(pool, str):
                yield "pool", f"{driver}/{pool}"
        if resource == "resourceslices":
            yield from _taint_effects(obj)
    elif resource == "resourceclaims":
        reserved = _get(obj, "status", "reservedFor")
        for ref in reserved if isinstance(reserved, list) else ():
            if isinstance(ref, Mapping) and isinstance(ref.get("uid"), str):
                yield "reserved", ref["uid"]
    elif resource == "events":
        involved = obj.get("involvedObject")
        if isinstance(involved, Mapping):
            yield "involved", involved_key(involved.get("kind"), involved.get("namespace"), involved.get("name"))


def involved_key(kind: Any, namespace: Any, name: Any) -> str:
    return f"{kind or ''}/{namespace or ''}/{name or ''}"


EXCLUSIVE, SHARED, ADMIN = 0, 1, 2  # how an allocation result holds its device


def allocation_entries(obj: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(device key `driver/pool/device`, how it is held) of every result of a claim's allocation:
    ADMIN for adminAccess results (they may overlap anything, as upstream's allocator lets them),
    SHARED for a result with a shareID (a share of a multi-allocatable device), else EXCLUSIVE."""
    results = _get(obj, "status", "allocation", "devices", "results")
    out = []
    for r in results if isinstance(results, list) else ():
        if not isinstance(r, Mapping):
            continue
        driver, pool, device = r.get("driver"), r.get("pool"), r.get("device")
        if isinstance(driver, str) and isinstance(pool, str) and isinstance(device, str):
            held = ADMIN if r.get("adminAccess") is True else SHARED if r.get("shareID") else EXCLUSIVE
            out.append((f"{driver}/{pool}/{device}", held))
    return out


def conflicts(mine: int, theirs: int) -> bool:
    """Whether two claims holding one device this way double-book it."""
    return ADMIN not in (mine, theirs) and not (mine == SHARED and theirs == SHARED)


def pool_of(device_key: str) -> str:
    """`driver/pool` of a `driver/pool/device` key (pool names may hold '/', device names do not)."""
    return device_key.rsplit("/", 1)[0]


def _taint_effects(obj: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    devices = _get(obj, "spec", "devices")
    effects = set()
    for device in devices if isinstance(devices, list) else ():
        taints = device.get("taints") if isinstance(device, Mapping) else None
        for taint in taints if isinstance(taints, list) else ():
            if isinstance(taint, Mapping) and isinstance(taint.get("effect"), str):
                effects.add(taint["effect"])
    for effect in sorted(effects):
        yield "taint", effect
