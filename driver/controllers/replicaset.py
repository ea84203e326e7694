"""The ReplicaSet controller: as many live pods as `spec.replicas`, made from the pod template.

Rules (kubernetes/kubernetes pkg/controller/replicaset/replica_set.go, pkg/controller/controller_utils.go):
- the ReplicaSet's pods are the active pods (not terminal, not being deleted: `FilterActivePods`)
  that it controls (controller ownerReference with its uid); an orphan pod in its namespace whose
  labels match its selector is adopted (`ClaimPods`: controller reference added), and a pod it
  controls whose labels no longer match is released (its reference removed); a ReplicaSet being
  deleted adopts nothing and makes nothing;
- `manageReplicas`: too few -> pods created from `spec.template` (generateName `<replicaset>-`,
  the template's labels and annotations, a controller ownerReference with blockOwnerDeletion),
  at most `burstReplicas` (500) per sync, each a `SuccessfulCreate` event ("Created pod: X");
  too many -> the surplus deleted, most expendable first (`getPodsToDelete` /
  `ActivePodsWithRanks`: not scheduled before scheduled, Pending before Running, not ready before
  ready, the most recently created first), each a `SuccessfulDelete` event;
- status (`calculateStatus`): `replicas`, `fullyLabeledReplicas`, `readyReplicas`,
  `availableReplicas` (ready for `minReadySeconds`), `observedGeneration`.
Defaults (apps/v1 SetDefaults_ReplicaSet): `replicas` 1. Not modelled: the slow-start batches
(creations here are one transaction, so a failing batch leaves nothing to slow down).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from driver.controllers.base import Result, Writes
from driver.controllers.objects import (Key, controller_ref, is_active, is_ready, key_of, meta, new_owner_ref,
                                        owner_refs, pod_phase, seconds_since, selector_matches)
from driver.errors import NotFoundError
from driver.store.objectstore import ObjectStore
from driver.store.watch import DELETED, Change

COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500
PODS, RS = "pods", "replicasets"


def desired(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return int(value) if isinstance(value, int) and value >= 0 else 1


def pod_from_template(owner: Mapping[str, Any], template: Mapping[str, Any], *, generate_name: str,
                      extra_labels: Mapping[str, str] | None = None,
                      annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """controller.GetPodFromTemplate: the template's metadata and spec, owned by `owner`."""
    tmeta = template.get("metadata") or {}
    m = meta(owner)
    metadata: dict[str, Any] = {"generateName": generate_name, "namespace": m.get("namespace") or "default",
                                "labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
                                "ownerReferences": [new_owner_ref(owner)]}
    merged_annotations = {**(tmeta.get("annotations") or {}), **(annotations or {})}
    if merged_annotations:
        metadata["annotations"] = merged_annotations
    if tmeta.get("finalizers"):
        metadata["finalizers"] = list(tmeta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": copy.deepcopy(template.get("spec") or {}), "status": {"phase": "Pending"}}


def deletion_rank(pod: Mapping[str, Any]) -> tuple:
    """ActivePods' order, most expendable first."""
    assigned = bool((pod.get("spec") or {}).get("nodeName"))
    phase = {"Pending": 0, "Unknown": 1, "Running": 2}.get(pod_phase(pod), 1)
    created = str(meta(pod).get("creationTimestamp") or "")
    return (assigned, phase, is_ready(pod), _negate(created), str(meta(pod).get("name")))


def _negate(text: str) -> tuple:
    return tuple(-ord(ch) for ch in text)


def owned_pods(store: ObjectStore, owner: Mapping[str, Any], w: Writes, selector: Any) -> list[dict[str, Any]]:
    """ClaimPods: the active pods `owner` controls, adopting matching orphans and releasing
    pods that no longer match."""
    m = meta(owner)
    uid = str(m.get("uid"))
    ns = m.get("namespace") or "default"
    out = []
    for pod in store.list(PODS, ns):
        ref = controller_ref(pod)
        matches = selector_matches(selector, meta(pod).get("labels"))
        if ref is not None and ref.get("uid") == uid:
            if not matches and not m.get("deletionTimestamp"):
                refs = [dict(r) for r in owner_refs(pod) if r.get("uid") != uid]
                pm = {k: v for k, v in meta(pod).items() if k != "ownerReferences"}
                if refs:
                    pm["ownerReferences"] = refs
                w.update(PODS, {**pod, "metadata": pm})
                continue
        elif ref is None and matches and not m.get("deletionTimestamp") and is_active(pod):
            adopted = w.update(PODS, {**pod, "metadata": {**meta(pod), "ownerReferences": [
                *[dict(r) for r in owner_refs(pod)], new_owner_ref(owner)]}})
            if adopted is None:
                continue
            pod = adopted
        else:
            continue
        if is_active(pod):
            out.append(pod)
    return out


def _available(pod: Mapping[str, Any], min_ready_s: int) -> bool:
    if not is_ready(pod):
        return False
    if min_ready_s <= 0:
        return True
    
    ready = next((c for c in (pod.get("status") or {}).get("conditions") or []
                  if isinstance(c, Mapping) and c.get("type") == "Ready"), {})
    since = seconds_since(ready.get("lastTransitionTime"))
    return since is not None and since >= min_ready_s


class ReplicaSetController:
    name = COMPONENT
    watches = (RS, PODS)

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        for ns, name in store.keys(RS, all_namespaces=True):
            yield RS, ns, name

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        if change.resource == RS:
            if change.type != DELETED:
                yield change.key
            return
        ref = controller_ref(change.object or {})
        if ref is not None:
            if ref.get("kind") == "ReplicaSet":
                yield RS, change.namespace, str(ref.get("name"))
        elif change.type != DELETED:  # an orphan: a ReplicaSet whose selector matches may adopt it
            labels = meta(change.object or {}).get("labels") or {}
            for rs in store.list(RS, change.namespace or "default"):
                if selector_matches((rs.get("spec") or {}).get("selector"), labels):
                    yield key_of(RS, rs)

    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        try:
            rs = store.get(*key)
        except NotFoundError:
            return Result()
        spec = rs.get("spec") or {}
        pods = owned_pods(store, rs, w, spec.get("selector"))
        requeue = None
        if not meta(rs).get("deletionTimestamp"):
            diff = len(pods) - desired(rs)
            name = str(meta(rs).get("name"))
            if diff < 0:
                for _ in range(min(-diff, BURST_REPLICAS)):
                    pod = w.create(PODS, pod_from_template(rs, spec.get("template") or {}, generate_name=f"{name}-"))
                    pods.append(pod)
                    w.event(rs, "SuccessfulCreate", f"Created pod: {meta(pod).get('name')}")
                if -diff > BURST_REPLICAS:
                    requeue = 0.0
            elif diff > 0:
                doomed = sorted(pods, key=deletion_rank)[:min(diff, BURST_REPLICAS)]
                for pod in doomed:
                    try:
                        w.delete(PODS, pod)
                    except NotFoundError:
                        pass
                    w.event(rs, "SuccessfulDelete", f"Deleted pod: {meta(pod).get('name')}")
                gone = {id(p) for p in doomed}
                pods = [p for p in pods if id(p) not in gone]
        min_ready = int(spec.get("minReadySeconds") or 0)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(1 for p in pods if all((meta(p).get("labels") or {}).get(k) == v
                                                               for k, v in labels.items())),
            "readyReplicas": sum(1 for p in pods if is_ready(p)),
            "availableReplicas": sum(1 for p in pods if _available(p, min_ready)),
            "observedGeneration": meta(rs).get("generation", 1),
        }
        if min_ready and status["availableReplicas"] < status["readyReplicas"]:
            requeue = float(min_ready)
        old = rs.get("status") or {}
        if any(old.get(k, 0) != v for k, v in status.items()):
            current = store.get(*key)
            w.update(RS, {**current, "status": {**(current.get("status") or {}), **status}})
        return Result(w.count, requeue_after=requeue)
