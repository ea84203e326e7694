"""Pod garbage collection, as kube-controller-manager's podgc controller.

Rules (kubernetes/kubernetes pkg/controller/podgc/gc_controller.go):
- `gcOrphaned`: a pod bound to a Node that does not exist is marked Failed with the
  `DisruptionTarget` condition (reason `DeletionByPodGC`, since 1.26) and deleted with grace period 0;
- `gcUnscheduledTerminating`: a pod being deleted that was never scheduled is deleted with grace 0;
- `gcTerminated`: when more terminated pods (Succeeded or Failed) exist than the threshold
  (kube-controller-manager's `--terminated-pod-gc-threshold`, 12,500 by default), the oldest by
  creation time are deleted until the threshold is met.

Not modelled: the 40 s quarantine upstream waits before it believes a Node is gone (its informer
may lag behind the API; the store is read directly, so a missing Node is missing), and
`gcTerminating` (terminating pods on out-of-service nodes; nothing taints nodes out-of-service here).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from driver.controllers.base import Result, Writes
from driver.controllers.objects import Key, is_terminal, key_of, meta, with_condition
from driver.errors import NotFoundError
from driver.store.objectstore import ObjectStore, now_timestamp
from driver.store.watch import DELETED, Change

COMPONENT = "pod-garbage-collector"
DEFAULT_THRESHOLD = 12500  # --terminated-pod-gc-threshold
PODS, NODES = "pods", "nodes"
_TERMINATED = ("", "", "terminated-pods")  # the key of the threshold check


class PodGC:
    name = COMPONENT
    watches = (PODS, NODES)

    def __init__(self, terminated_threshold: int = DEFAULT_THRESHOLD) -> None:
        self.threshold = terminated_threshold

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        nodes = set(store.names(NODES))
        for node in store.index_values(PODS, "node"):
            if node not in nodes:
                for ns, name in store.keys(PODS, all_namespaces=True, index={"node": node}):
                    yield PODS, ns, name
        for head in store.heads(PODS, all_namespaces=True):
            if meta(head).get("deletionTimestamp"):
                yield key_of(PODS, head)
        yield _TERMINATED

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        if change.resource == NODES and change.type == DELETED:
            for ns, name in store.keys(PODS, all_namespaces=True, index={"node": change.name}):
                yield PODS, ns, name
        elif change.resource == PODS and change.type != DELETED:
            obj = change.object or {}
            node = (obj.get("spec") or {}).get("nodeName")
            if meta(obj).get("deletionTimestamp") or (node and not store.exists(NODES, None, str(node))):
                yield change.key
            if is_terminal(obj):
                yield _TERMINATED

    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        if key == _TERMINATED:
            self._terminated(store, w)
            return Result(w.count)
        try:
            pod = store.get(*key)
        except NotFoundError:
            return Result()
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not store.exists(NODES, None, str(node)):
            self._delete_orphan(w, pod, str(node))
        elif not node and meta(pod).get("deletionTimestamp"):
            _force_delete(w, pod)
        return Result(w.count)

    def _delete_orphan(self, w: Writes, pod: dict[str, Any], node: str) -> None:
        status = dict(pod.get("status") or {})
        if not is_terminal(pod):
            status["phase"] = "Failed"
            status["conditions"] = with_condition(status.get("conditions"), {
                "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists"}, now_timestamp())
            updated = w.update(PODS, {**pod, "status": status})
            if updated is None:
                return
            pod = updated
        _force_delete(w, pod)

    def _terminated(self, store: ObjectStore, w: Writes) -> None:
        terminated = store.heads(PODS, all_namespaces=True, index={"phase": ["Succeeded", "Failed"]})
        extra = len(terminated) - self.threshold
        if extra <= 0:
            return
        terminated.sort(key=lambda h: (str(meta(h).get("creationTimestamp") or ""), str(meta(h).get("name"))))
        for head in terminated[:extra]:
            if not meta(head).get("deletionTimestamp"):
                _force_delete(w, head)


def _force_delete(w: Writes, pod: dict[str, Any]) -> None:
    try:
        w.delete(PODS, pod, grace_period_s=0)
    except NotFoundError:
        pass
