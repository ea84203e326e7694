"""The Deployment controller: a ReplicaSet per pod template, rolled from old to new without leaks.

Rules (kubernetes/kubernetes pkg/controller/deployment: sync.go, rolling.go, recreate.go,
util/deployment_util.go; pkg/controller/controller_utils.go ComputeHash):
- the new ReplicaSet is the one whose template equals the Deployment's, ignoring the
  `pod-template-hash` label (`EqualIgnoreHash`); it is created as `<deployment>-<hash>` with that
  label on its selector, template and itself, the annotations `deployment.kubernetes.io/revision`,
  `desired-replicas` and `max-replicas`, and a controller ownerReference to the Deployment. The
  hash is FNV-32a, encoded with apimachinery's `rand.SafeEncodeString` alphabet; upstream hashes
  Go's printing of the template object, here its canonical JSON (the same template gives the same
  hash on every run, but not upstream's digits);
- **RollingUpdate** (the default: maxSurge 25% rounded up, maxUnavailable 25% rounded down, both
  0 becoming maxUnavailable 1, `ResolveFenceposts`): the new ReplicaSet grows while all replicas
  stay within `replicas + maxSurge` (`NewRSNewReplicas`), and old ReplicaSets shrink, oldest first,
  while the available pods stay at least `replicas - maxUnavailable` (`reconcileOldReplicaSets`,
  `cleanupUnhealthyReplicas` first);
- **Recreate**: old ReplicaSets scaled to 0, and the new one scaled up once none of their pods is
  left (`rolloutRecreate`);
- a paused Deployment is only scaled, not rolled out; old ReplicaSets at 0 replicas beyond
  `revisionHistoryLimit` (default 10) are deleted, oldest first (`cleanupDeployment`);
- every scale is a `ScalingReplicaSet` event ("Scaled up replica set X from A to B");
- status (`calculateStatus`): replicas, updatedReplicas, readyReplicas, availableReplicas,
  unavailableReplicas, observedGeneration and the Available / Progressing conditions.
Not modelled: proportional scaling of several active ReplicaSets during a rollout (the rollout
itself converges to the new size), progressDeadlineSeconds, rollback annotations.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from driver.controllers.base import Result, Writes
from driver.controllers.objects import (Key, controller_ref, int_or_percent, meta, new_owner_ref, with_condition)
from driver.controllers.replicaset import desired
from driver.errors import NotFoundError
from driver.store.objectstore import ObjectStore, now_timestamp
from driver.store.watch import DELETED, Change

COMPONENT = "deployment-controller"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DEPLOYMENTS, RS, PODS = "deployments", "replicasets", "pods"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphanums


def template_hash(template: Mapping[str, Any], collisions: int = 0) -> str:
    """FNV-32a of the template (and the collision count), SafeEncodeString'd."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collisions:
        data += str(collisions).encode()
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(h))


def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(template))
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return out


def _replicas(rs: Mapping[str, Any]) -> int:
    value = (rs.get("spec") or {}).get("replicas")
    return int(value) if isinstance(value, int) else 1


def _available(rs: Mapping[str, Any]) -> int:
    return int((rs.get("status") or {}).get("availableReplicas") or 0)


def fenceposts(d: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) of a RollingUpdate Deployment (ResolveFenceposts)."""
    strategy = ((d.get("spec") or {}).get("strategy") or {})
    rolling = strategy.get("rollingUpdate") or {}
    replicas = desired(d)
    surge = int_or_percent(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = int_or_percent(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


class DeploymentController:
    name = COMPONENT
    watches = (DEPLOYMENTS, RS)

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        for ns, name in store.keys(DEPLOYMENTS, all_namespaces=True):
            yield DEPLOYMENTS, ns, name

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        if change.resource == DEPLOYMENTS:
            if change.type != DELETED:
                yield change.key
            return
        ref = controller_ref(change.object or {})
        if ref is not None and ref.get("kind") == "Deployment":
            yield DEPLOYMENTS, change.namespace, str(ref.get("name"))

    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        try:
            d = store.get(*key)
        except NotFoundError:
            return Result()
        if meta(d).get("deletionTimestamp"):
            return Result()
        uid = meta(d).get("uid")
        owned = [rs for rs in store.list(RS, key[1]) if (controller_ref(rs) or {}).get("uid") == uid]
        template = (d.get("spec") or {}).get("template") or {}
        new = next((rs for rs in owned if _without_hash((rs.get("spec") or {}).get("template") or {})
                    == _without_hash(template)), None)
        old = sorted((rs for rs in owned if rs is not new), key=lambda r: str(meta(r).get("creationTimestamp") or ""))
        spec = d.get("spec") or {}
        replicas = desired(d)
        recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
        surge, unavailable = (0, 0) if recreate else fenceposts(d)
        if spec.get("paused"):
            if new is not None and _replicas(new) != replicas:
                self._scale(w, d, new, replicas)
        elif recreate:
            new = self._recreate(store, w, d, new, old, replicas)
        else:
            new = self._rolling(w, d, new, old, replicas, surge, unavailable)
        self._cleanup(store, w, d, old)
        self._status(store, w, key, new, owned, replicas, unavailable)
        return Result(w.count)

    # ---- strategies -----------------------------------------------------------------------------
    def _rolling(self, w: Writes, d: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]],
                 replicas: int, surge: int, unavailable: int) -> dict[str, Any] | None:
        total = sum(_replicas(rs) for rs in old) + (_replicas(new) if new else 0)
        current_new = _replicas(new) if new else 0
        if current_new > replicas:
            new = self._scale(w, d, new, replicas)  # type: ignore[arg-type]
        elif current_new < replicas:
            room = max(0, replicas + surge - total)
            target = current_new + min(room, replicas - current_new)
            if new is None:
                new = self._create_new(w, d, target)
            elif target != current_new:
                new = self._scale(w, d, new, target)
        # old ReplicaSets: keep at least replicas - maxUnavailable available
        min_available = replicas - unavailable
        new_unavailable = max(0, _replicas(new) - _available(new)) if new else 0
        all_pods = sum(_replicas(rs) for rs in old) + (_replicas(new) if new else 0)
        budget = all_pods - min_available - new_unavailable
        if budget <= 0:
            return new
        for rs in old:  # unhealthy pods of old ReplicaSets go first
            unhealthy = _replicas(rs) - _available(rs)
            cut = min(budget, max(0, unhealthy))
            if cut:
                self._scale(w, d, rs, _replicas(rs) - cut)
                budget -= cut
        available = sum(_available(rs) for rs in old) + (_available(new) if new else 0)
        budget = available - min_available
        for rs in old:
            if budget <= 0:
                break
            current = self._fresh(w, rs)
            cut = min(budget, _replicas(current))
            if cut:
                self._scale(w, d, current, _replicas(current) - cut)
                budget -= cut
        return new

    def _recreate(self, store: ObjectStore, w: Writes, d: dict[str, Any], new: dict[str, Any] | None,
                  old: list[dict[str, Any]], replicas: int) -> dict[str, Any] | None:
        for rs in old:
            if _replicas(rs):
                self._scale(w, d, rs, 0)
        for rs in old:
            if store.keys(PODS, meta(rs).get("namespace"), index={"owner": str(meta(rs).get("uid"))}):
                return new  # wait until the old pods are gone
        if new is None:
            return self._create_new(w, d, replicas)
        if _replicas(new) != replicas:
            return self._scale(w, d, new, replicas)
        return new

    # ---- writes ---------------------------------------------------------------------------------
    def _fresh(self, w: Writes, rs: dict[str, Any]) -> dict[str, Any]:
        m = meta(rs)
        return w.store.get(RS, m.get("namespace"), str(m.get("name")))

    def _create_new(self, w: Writes, d: dict[str, Any], replicas: int) -> dict[str, Any]:
        m, spec = meta(d), d.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        digest = template_hash(template, int((d.get("status") or {}).get("collisionCount") or 0))
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: digest}
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}
        revisions = [int((meta(rs).get("annotations") or {}).get(REVISION, 0) or 0)
                     for rs in w.store.list(RS, m.get("namespace")) if (controller_ref(rs) or {}).get("uid") == m.get("uid")]
        surge, _ = fenceposts(d)
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{m.get('name')}-{digest}", "namespace": m.get("namespace") or "default",
                           "labels": dict(tmeta["labels"]),
                           "annotations": {REVISION: str(max(revisions, default=0) + 1),
                                           "deployment.kubernetes.io/desired-replicas": str(desired(d)),
                                           "deployment.kubernetes.io/max-replicas": str(desired(d) + surge)},
                           "ownerReferences": [new_owner_ref(d)]},
              "spec": {"replicas": replicas, "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                       "selector": selector, "template": template}}
        created = w.create(RS, rs)
        w.event(d, "ScalingReplicaSet", f"Scaled up replica set {meta(created).get('name')} from 0 to {replicas}")
        return created

    def _scale(self, w: Writes, d: dict[str, Any], rs: dict[str, Any], replicas: int) -> dict[str, Any]:
        before = _replicas(rs)
        annotations = {**(meta(rs).get("annotations") or {}),
                       "deployment.kubernetes.io/desired-replicas": str(desired(d))}
        updated = w.update(RS, {**rs, "metadata": {**meta(rs), "annotations": annotations},
                                "spec": {**(rs.get("spec") or {}), "replicas": replicas}}) or rs
        way = "up" if replicas > before else "down"
        w.event(d, "ScalingReplicaSet", f"Scaled {way} replica set {meta(rs).get('name')} from {before} to {replicas}")
        return updated

    def _cleanup(self, store: ObjectStore, w: Writes, d: dict[str, Any], old: list[dict[str, Any]]) -> None:
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        limit = int(limit) if isinstance(limit, int) and limit >= 0 else 10
        idle = []
        for rs in old:
            try:
                current = self._fresh(w, rs)
            except NotFoundError:
                continue
            if _replicas(current) == 0 and int((current.get("status") or {}).get("replicas") or 0) == 0 \
                    and not meta(current).get("deletionTimestamp"):
                idle.append(current)
        for rs in idle[:max(0, len(idle) - limit)]:
            try:
                w.delete(RS, rs)
            except NotFoundError:
                pass

    def _status(self, store: ObjectStore, w: Writes, key: Key, new: dict[str, Any] | None,
                owned: list[dict[str, Any]], replicas: int, unavailable: int) -> None:
        fresh = []
        for rs in owned:
            try:
                fresh.append(self._fresh(w, rs))
            except NotFoundError:
                continue
        def total(field: str) -> int:
            return sum(int((rs.get("status") or {}).get(field) or 0) for rs in fresh)
        new_fresh = next((rs for rs in fresh if new is not None and meta(rs).get("uid") == meta(new).get("uid")), new)
        available = total("availableReplicas")
        status = {"observedGeneration": None, "replicas": total("replicas"),
                  "updatedReplicas": int(((new_fresh or {}).get("status") or {}).get("replicas") or 0),
                  "readyReplicas": total("readyReplicas"), "availableReplicas": available,
                  "unavailableReplicas": max(0, replicas - available)}
        d = store.get(*key)
        status["observedGeneration"] = meta(d).get("generation", 1)
        old_status = d.get("status") or {}
        now = now_timestamp()
        is_available = available >= replicas - unavailable
        conditions = with_condition(old_status.get("conditions"), {
            "type": "Available", "status": "True" if is_available else "False",
            "reason": "MinimumReplicasAvailable" if is_available else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability." if is_available else
            "Deployment does not have minimum availability."}, now)
        complete = status["updatedReplicas"] == replicas and status["replicas"] == replicas and available == replicas
        name = meta(new_fresh).get("name") if new_fresh else ""
        conditions = with_condition(conditions, {
            "type": "Progressing", "status": "True",
            "reason": "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
            "message": f'ReplicaSet "{name}" has successfully progressed.' if complete else
            f'ReplicaSet "{name}" is progressing.'}, now)
        for c in conditions:  # lastUpdateTime moves only with a change, as upstream's
            c.setdefault("lastUpdateTime", c.get("lastTransitionTime"))
        same = all(old_status.get(k) == v for k, v in status.items()) and \
            [{k: v for k, v in c.items() if k not in ("lastTransitionTime", "lastUpdateTime")} for c in conditions] == \
            [{k: v for k, v in c.items() if k not in ("lastTransitionTime", "lastUpdateTime")}
             for c in old_status.get("conditions") or []]
        if not same:
            w.update(DEPLOYMENTS, {**d, "status": {**old_status, **status, "conditions": conditions}})

