"""Deleting an object as kube-apiserver does: finalizers, deletionTimestamp, propagation and graceful pods.

The store's own `delete` removes a row. kube-apiserver's DELETE does more, and the local control
plane (driver.controllers) depends on it (k8s.io/apiserver pkg/registry/generic/registry/store.go):

- **Propagation** (`Store.Delete` -> `deletionFinalizersForGarbageCollection`): `Orphan` adds the
  `orphan` finalizer, `Foreground` the `foregroundDeletion` finalizer (each removing the other),
  `Background` removes both; without a policy the object's own finalizers decide, and the default
  is background (the strategies' DefaultGarbageCollectionPolicy for apps/v1, batch/v1 and core).
  The garbage collector (driver.controllers.garbagecollector) then orphans or deletes the
  dependents and removes the finalizer.
- **Finalizers** (`updateForGracefulDeletionAndFinalizers`): an object with finalizers is not
  removed: it gets `metadata.deletionTimestamp` (and `deletionGracePeriodSeconds: 0`) and stays
  until the last finalizer is removed; the update that removes it then deletes the object
  (`Store.Update` with `shouldDeleteDuringUpdate`): `update` below.
- **Graceful pods** (pkg/registry/core/pod/strategy.go `CheckGracefulDelete`): a pod bound to a
  node and not terminal gets `deletionTimestamp` and `deletionGracePeriodSeconds` (the request's
  grace period, else `spec.terminationGracePeriodSeconds`, else 30) and is removed by the node
  (the kubelet, or kwok's pod-delete stage: driver.controllers.podstages) or by a delete with
  grace period 0 (`kubectl delete --grace-period=0 --force`); an unscheduled or terminal pod is
  removed at once.
- While an object is being deleted, updates keep its deletionTimestamp and grace period and may
  not add finalizers (k8s.io/apimachinery ValidateObjectMetaUpdate: "no new finalizers can be
  added if the object is being deleted").

Every write here carries the resourceVersion it read (optimistic concurrency) inside one store
transaction, so two controllers never write over each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import ConflictError, InputError
from driver.store.objectstore import ObjectStore, now_timestamp

ORPHAN_FINALIZER = "orphan"  # metav1.FinalizerOrphanDependents
FOREGROUND_FINALIZER = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
BACKGROUND, FOREGROUND, ORPHAN = "Background", "Foreground", "Orphan"  # metav1.DeletionPropagation
POLICIES = (BACKGROUND, FOREGROUND, ORPHAN)
DEFAULT_POD_GRACE_S = 30  # core/v1 DefaultTerminationGracePeriodSeconds
TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Outcome:
    """What a delete did: `deleted` (the object is gone) or `terminating` (it has a
    deletionTimestamp and waits for finalizers or its node)."""

    action: str
    object: dict[str, Any]

    @property
    def gone(self) -> bool:
        return self.action == "deleted"


def is_terminating(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    found = (obj.get("metadata") or {}).get("finalizers")
    return [f for f in found if isinstance(f, str)] if isinstance(found, list) else []


def _pod_grace(pod: Mapping[str, Any], requested: int | None) -> int:
    """CheckGracefulDelete: 0 for a pod never scheduled or already terminal, else the requested
    grace period, else the pod's own, else 30 s."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in TERMINAL_PHASES:
        return 0
    if requested is not None:
        return requested
    own = spec.get("terminationGracePeriodSeconds")
    return int(own) if isinstance(own, int) and own >= 0 else DEFAULT_POD_GRACE_S


def _with_policy(current: list[str], policy: str | None) -> list[str]:
    if policy is None:
        return current
    if policy not in POLICIES:
        raise InputError(f"propagationPolicy: {policy!r} must be one of {', '.join(POLICIES)}")
    out = [f for f in current if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if policy == ORPHAN:
        out.append(ORPHAN_FINALIZER)
    elif policy == FOREGROUND:
        out.append(FOREGROUND_FINALIZER)
    return out


def delete(store: ObjectStore, resource: str, namespace: str | None, name: str, *,
           propagation: str | None = None, grace_period_s: int | None = None,
           resource_version: str | None = None, uid: str | None = None) -> Outcome:
    """Delete as kube-apiserver does (module docstring). NotFoundError when absent, ConflictError
    when a precondition (`resource_version`, `uid`) fails. An object that cannot be read is
    removed as the store removes it (it has no finalizers anyone could honour)."""
    if grace_period_s is not None and grace_period_s < 0:
        raise InputError(f"--grace-period: must be 0 or more, got {grace_period_s}")
    with store.locked():
        try:
            current = store.get(resource, namespace, name)
        except InputError:
            return Outcome("deleted", store.delete(resource, namespace, name, resource_version, uid=uid))
        meta = current.get("metadata") or {}
        if resource_version or uid:
            if resource_version and str(resource_version) != str(meta.get("resourceVersion")):
                raise ConflictError(f"{resource} {name}: resourceVersion {resource_version} is stale")
            if uid and uid != meta.get("uid"):
                raise ConflictError(f"{resource} {name}: uid precondition failed (stored {meta.get('uid')})")
        wanted = _with_policy(finalizers(current), propagation)
        grace = _pod_grace(current, grace_period_s) if resource == "pods" else 0
        if meta.get("deletionTimestamp") is not None and resource == "pods":
            # A second delete may only shorten the grace period (BeforeDelete).
            before = meta.get("deletionGracePeriodSeconds")
            if isinstance(before, int):
                grace = min(grace, before)
        if not wanted and grace == 0:
            return Outcome("deleted", store.delete(resource, namespace, name, str(meta.get("resourceVersion"))))
        new_meta = {k: v for k, v in meta.items() if k != "finalizers"}
        if wanted:
            new_meta["finalizers"] = wanted
        marked = {**current, "metadata": new_meta}
        marked["metadata"]["deletionTimestamp"] = meta.get("deletionTimestamp") or now_timestamp()
        marked["metadata"]["deletionGracePeriodSeconds"] = grace
        if marked == current:
            return Outcome("terminating", current)
        return Outcome("terminating", store.update(resource, marked))


def update(store: ObjectStore, resource: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """Write `obj` (its metadata.resourceVersion is the precondition) as kube-apiserver's update
    does for an object being deleted: deletionTimestamp and grace period kept, no finalizer added,
    and the object removed when its last finalizer goes and no grace period is running. Returns
    the stored object, or None when the update deleted it."""
    with store.locked():
        meta = obj.get("metadata") or {}
        current = store.get(resource, meta.get("namespace"), str(meta.get("name")))
        cur_meta = current.get("metadata") or {}
        stamp = cur_meta.get("deletionTimestamp")
        if stamp is None:
            return store.update(resource, obj)
        added = [f for f in finalizers(obj) if f not in finalizers(current)]
        if added:
            raise InputError(f"{resource} {meta.get('name')}: metadata.finalizers: Forbidden: no new finalizers can be "
                             f"added if the object is being deleted (found new finalizers {added})")
        kept = {**obj, "metadata": {**meta, "deletionTimestamp": stamp,
                                    "deletionGracePeriodSeconds": cur_meta.get("deletionGracePeriodSeconds")}}
        grace = cur_meta.get("deletionGracePeriodSeconds")
        if not finalizers(kept) and not grace:
            rv = meta.get("resourceVersion")
            store.delete(resource, meta.get("namespace"), str(meta.get("name")), str(rv) if rv else None)
            return None
        return store.update(resource, kept)


def remove_finalizer(store: ObjectStore, resource: str, obj: Mapping[str, Any], finalizer: str) -> dict[str, Any] | None:
    """`obj` without `finalizer` (written with its resourceVersion; see `update`)."""
    meta = dict(obj.get("metadata") or {})
    left = [f for f in finalizers(obj) if f != finalizer]
    if left:
        meta["finalizers"] = left
    else:
        meta.pop("finalizers", None)
    return update(store, resource, {**obj, "metadata": meta})
