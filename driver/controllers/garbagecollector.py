"""The garbage collector: dependents of deleted owners deleted or orphaned, as kube-controller-manager's.

Rules (kubernetes/kubernetes pkg/controller/garbagecollector/garbagecollector.go):
- `attemptToDeleteItem`: an object's owner references are classified: *solid* (the owner exists
  with that uid and is not waiting for its dependents), *dangling* (no object of that kind, name
  and uid: `classifyReferences`), *waiting for dependents deletion* (the owner exists, has a
  deletionTimestamp and the `foregroundDeletion` finalizer). With a solid owner the object stays;
  its dangling references are removed and the references to waiting owners get
  `blockOwnerDeletion: false` (so the owner is not held by an object that is not going away).
  Without one it is deleted: in the foreground when a waiting owner exists and it has dependents of
  its own, otherwise with the policy its own finalizers say (`orphan`, `foregroundDeletion`) or in
  the background. An object being deleted is left alone unless it waits for its dependents.
- `processDeletingDependentsItem` (foreground): an owner with deletionTimestamp and the
  `foregroundDeletion` finalizer loses the finalizer, and so goes, once no dependent references
  it with `blockOwnerDeletion: true`; until then its dependents are deleted as above.
- `orphanDependents` (orphan): an owner with the `orphan` finalizer has its reference removed from
  every dependent, then loses the finalizer.
- Owner references of kinds the store does not keep are left alone (upstream resolves kinds
  through discovery and does not delete for an unresolvable one).

Not modelled: the dependency graph's absent-owner cache and its informer lag (the store is read
directly, so a missing owner is certainly missing), and cluster-scoped dependents of namespaced
owners (refused by upstream with an OwnerRefInvalidNamespace event; the store's kinds never do it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from driver.controllers.base import Result, Writes
from driver.controllers.objects import Key, key_of, meta, owner_key, owner_refs
from driver.errors import NotFoundError
from driver.store import deletion
from driver.store.kinds import KINDS
from driver.store.objectstore import ObjectStore
from driver.store.watch import DELETED, Change

COMPONENT = "garbage-collector-controller"
SOLID, DANGLING, WAITING, UNKNOWN = "solid", "dangling", "waiting", "unknown"


def _get(store: ObjectStore, key: Key) -> dict[str, Any] | None:
    try:
        return store.get(*key)
    except NotFoundError:
        return None


class GarbageCollector:
    name = COMPONENT
    watches = tuple(k.plural for k in KINDS if k.plural != "events")

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        for resource in self.watches:
            for head in store.heads(resource, all_namespaces=True, index={"owner": None}):
                yield key_of(resource, head)
            if resource == "resourceslices":
                continue  # slices are never owners, and none is deleted with a finalizer by fake-dra
            for head in store.heads(resource, all_namespaces=True):
                if meta(head).get("deletionTimestamp"):
                    yield key_of(resource, head)

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        obj = change.object or {}
        m = meta(obj)
        if change.type == DELETED:
            if m.get("uid"):
                for dep in store.dependents(str(m["uid"])):
                    yield dep
            for ref in owner_refs(obj):  # an owner waiting for this dependent may now go
                found = owner_key(ref, change.namespace)
                if found is not None:
                    yield found
            return
        if owner_refs(obj):
            yield change.key
        if m.get("deletionTimestamp") and {deletion.ORPHAN_FINALIZER, deletion.FOREGROUND_FINALIZER} & set(
                deletion.finalizers(obj)):
            yield change.key
            for dep in store.dependents(str(m.get("uid"))):
                yield dep

    # ---- reconcile ------------------------------------------------------------------------------
    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        obj = _get(store, key)
        if obj is None:
            return Result()
        m = meta(obj)
        if m.get("deletionTimestamp"):
            fins = deletion.finalizers(obj)
            if deletion.ORPHAN_FINALIZER in fins:
                self._orphan(store, w, key, obj)
            elif deletion.FOREGROUND_FINALIZER in fins:
                self._foreground(store, w, key, obj)
            return Result(w.count)
        self._attempt_to_delete(store, w, key, obj)
        return Result(w.count)

    def _classify(self, store: ObjectStore, key: Key, obj: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], str]]:
        out = []
        for ref in owner_refs(obj):
            where = owner_key(ref, key[1])
            if where is None:
                out.append((ref, UNKNOWN))
                continue
            owner = _get(store, where)
            if owner is None or meta(owner).get("uid") != ref.get("uid"):
                out.append((ref, DANGLING))
            elif meta(owner).get("deletionTimestamp") and deletion.FOREGROUND_FINALIZER in deletion.finalizers(owner):
                out.append((ref, WAITING))
            else:
                out.append((ref, SOLID))
        return out

    def _attempt_to_delete(self, store: ObjectStore, w: Writes, key: Key, obj: dict[str, Any]) -> None:
        classes = self._classify(store, key, obj)
        if not classes:
            return
        kinds = {c for _, c in classes}
        if kinds & {SOLID, UNKNOWN}:
            if not kinds & {DANGLING, WAITING}:
                return
            refs = []
            for ref, c in classes:
                if c == DANGLING:
                    continue
                refs.append({**ref, "blockOwnerDeletion": False} if c == WAITING and ref.get("blockOwnerDeletion") else dict(ref))
            w.update(key[0], {**obj, "metadata": {**meta(obj), "ownerReferences": refs}})
            return
        fins = deletion.finalizers(obj)
        if WAITING in kinds and store.dependents(str(meta(obj).get("uid"))):
            policy = deletion.FOREGROUND
        elif deletion.ORPHAN_FINALIZER in fins:
            policy = deletion.ORPHAN
        elif deletion.FOREGROUND_FINALIZER in fins:
            policy = deletion.FOREGROUND
        else:
            policy = deletion.BACKGROUND
        try:
            w.delete(key[0], obj, propagation=policy)
        except NotFoundError:
            pass

    def _orphan(self, store: ObjectStore, w: Writes, key: Key, owner: dict[str, Any]) -> None:
        uid = str(meta(owner).get("uid"))
        for dep_key in store.dependents(uid):
            dep = _get(store, dep_key)
            if dep is None:
                continue
            refs = [dict(r) for r in owner_refs(dep) if r.get("uid") != uid]
            dep_meta = {k: v for k, v in meta(dep).items() if k != "ownerReferences"}
            if refs:
                dep_meta["ownerReferences"] = refs
            w.update(dep_key[0], {**dep, "metadata": dep_meta})
        w.remove_finalizer(key[0], owner, deletion.ORPHAN_FINALIZER)

    def _foreground(self, store: ObjectStore, w: Writes, key: Key, owner: dict[str, Any]) -> None:
        uid = str(meta(owner).get("uid"))
        blocking = False
        for dep_key in store.dependents(uid):
            dep = _get(store, dep_key)
            if dep is None:
                continue
            if not meta(dep).get("deletionTimestamp"):
                self._attempt_to_delete(store, w, dep_key, dep)
                dep = _get(store, dep_key)
                if dep is None:
                    continue
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") is True for r in owner_refs(dep)):
                blocking = True
        if not blocking:
            w.remove_finalizer(key[0], owner, deletion.FOREGROUND_FINALIZER)

