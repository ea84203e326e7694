"""What one `fake-dra schedule` run knows of the cluster: read at one revision, then kept current.

kube-scheduler works from informer caches: a list at one resourceVersion, then a watch from it,
with its own binds assumed in its cache before the API server confirms them
(pkg/scheduler/internal/cache "assumed pods"). Here the store is read once inside
`ObjectStore.snapshot()` (nodes, pods, claims, templates, classes; slices node by node through
driver.schedule.slices), together with the revision of the last allocation into each pool
(`pool_revisions`). Two things keep it current:

* this run's own writes (`Scheduler` commits them here after the store took them);
* everyone else's, read from the store's change log (`changes(since)`, the watch of
  driver.store.watch) at the start of each write transaction and after a write is refused as
  stale: claims allocated or released by another scheduler or `apply --allocate`, pods bound or
  deleted meanwhile, nodes, slices, classes and templates changed. A change log compacted past
  what was read (410 Gone) means reading everything again, as client-go's reflector does.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.errors import InputError
from driver.features import Features
from driver.schedule.claims import ClaimIndex
from driver.schedule.dra import DraFilter
from driver.schedule.extended import class_for_resource
from driver.schedule.nodes import NodeInfo, PodNeeds, sorted_nodes
from driver.schedule.slices import MAX_NODES, StoreSlices
from driver.store import ObjectStore
from driver.store.watch import DELETED, Change, Expired

log = logging.getLogger("fake-dra.schedule")

DEFAULT_SCHEDULER = "default-scheduler"
WATCHED = ("pods", "resourceclaims", "nodes", "resourceslices", "deviceclasses", "resourceclaimtemplates",
           "devicetaintrules", "podgroups")
PodKey = tuple[str, str]  # namespace, name


def pod_key(obj: Mapping[str, Any]) -> PodKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name")))


def is_pending(pod: Mapping[str, Any]) -> bool:
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    return (not spec.get("nodeName") and not meta.get("deletionTimestamp")
            and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def _holds_node(pod: Mapping[str, Any]) -> str | None:
    """The node whose resources a pod takes: bound, not deleting, not finished."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    return str(node)


@dataclass
class _Held:
    node: str
    requests: tuple[tuple[str, Fraction], ...]


class ClusterState:
    def __init__(self, store: ObjectStore, features: Features, *, max_nodes: int = MAX_NODES) -> None:
        self.store = store
        self.features = features
        self.max_nodes = max_nodes
        self.revision = 0  # every change up to here is known
        self.pools: dict[str, int] = {}  # pool -> revision of the last allocation into it known here
        self.generation = 0  # bumped whenever anything a filter reads changes (unschedulable memo)

    # ---- reading everything ----------------------------------------------------------------------
    def load(self) -> list[dict[str, Any]]:
        """Read the store at one revision; returns the pending pods in creation order."""
        pods = self._read()
        return sorted((p for p in pods if is_pending(p)), key=creation_order)

    def _read(self) -> list[dict[str, Any]]:
        store = self.store
        with store.snapshot() as revision:
            self.revision = revision
            self.pools = store.pool_revisions()
            nodes = [NodeInfo.of(n) for n in store.list("nodes")]
            self._set_nodes(sorted_nodes(nodes))
            pods = store.list("pods", all_namespaces=True)
            claims = store.list("resourceclaims", all_namespaces=True)
            group_claims = self.features.enabled("DRAWorkloadResourceClaims")
            self.index = ClaimIndex(claims, store.list("resourceclaimtemplates", all_namespaces=True),
                                    store.list("podgroups", all_namespaces=True) if group_claims else [], group_claims)
            classes = store.list("deviceclasses")
            self.extended_classes = class_for_resource(classes)
            self.dra = DraFilter(classes=classes, labels={n.name: n.labels for n in self.nodes},
                                 allocated=[c for c in claims if (c.get("status") or {}).get("allocation")],
                                 features=self.features, source=StoreSlices(store), max_nodes=self.max_nodes,
                                 taint_rules=store.list("devicetaintrules"))
        self.held = {n.name: 0 for n in self.nodes}
        for claim in claims:
            self.count_held(claim, +1)
        self.bound: dict[PodKey, _Held] = {}
        for pod in pods:
            self._pod_holds(pod)
        self.static: dict[tuple, str | None] = {}
        # Pods changed by others since the read (None: deleted); after a second read, every pod.
        self.latest: dict[PodKey, dict[str, Any] | None] = {}
        self.latest_is_all = False
        self.generation += 1
        # What was just read (a 1,000-node fleet is millions of objects) lives until the end and holds
        # no reference cycles: keep the cycle collector from walking it again at every collection.
        gc.freeze()
        return pods

    def _set_nodes(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes
        self.by_name = {n.name: n for n in nodes}
        self.node_index = {n.name: i for i, n in enumerate(nodes)}

    def count_held(self, claim: Mapping[str, Any] | None, sign: int) -> None:
        """Devices allocated on each node (its share in use, for the scoring policies)."""
        results = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        for r in results:
            if r.get("pool") in self.held and not r.get("adminAccess"):
                self.held[str(r["pool"])] += sign

    def _pod_holds(self, pod: Mapping[str, Any] | None, key: PodKey | None = None,
                   requests: tuple[tuple[str, Fraction], ...] | None = None) -> None:
        """Record what a pod takes of its node (replacing what it took before)."""
        key = key or pod_key(pod or {})
        before = self.bound.pop(key, None)
        if before is not None and before.node in self.by_name:
            self.by_name[before.node].remove_pod(before.requests)
        node = _holds_node(pod) if pod is not None else None
        if node is None or node not in self.by_name:
            return
        if requests is None:
            requests = PodNeeds.requests_of(pod)  # type: ignore[arg-type]
        self.by_name[node].add_pod(requests)
        self.bound[key] = _Held(node, requests)

    def bind(self, pod: Mapping[str, Any], requests: tuple[tuple[str, Fraction], ...]) -> None:
        """This run bound `pod` (as written), which takes `requests` of its node."""
        self._pod_holds(pod, requests=requests)
        self.generation += 1

    # ---- keeping up --------------------------------------------------------------------------------
    def catch_up(self) -> bool:
        """Apply the changes other writers made since what is known (inside the write transaction,
        so that nothing else changes before this run's next write); True when there were any."""
        store = self.store
        top = int(store.current_resource_version())
        if top <= self.revision:
            return False
        try:
            while self.revision < top:
                batch, last = store.changes(self.revision, WATCHED)
                for change in batch:
                    self._apply(change)
                if last <= self.revision:
                    break
                self.revision = last
        except Expired:
            self.reload()
            return True
        self.pools = store.pool_revisions()
        self.generation += 1
        return True

    def reload(self) -> None:
        """The change log no longer reaches back far enough: read everything again."""
        pods = self._read()
        self.latest = {pod_key(p): p for p in pods}
        self.latest_is_all = True

    def current(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod as it is now (another writer may have changed or deleted it); None when gone."""
        key = pod_key(pod)
        if key in self.latest:
            return self.latest[key]
        return None if self.latest_is_all else pod

    def _apply(self, change: Change) -> None:
        resource, obj = change.resource, change.object if change.type != DELETED else None
        if resource == "pods":
            key = (change.namespace or "default", change.name)
            self.latest[key] = obj
            self._pod_holds(obj, key)
        elif resource == "resourceclaims":
            self._claim(change, obj)
        elif resource == "nodes":
            self._node(change.name, obj)
        elif resource == "resourceslices":
            self.dra.slice_changed(change.name, obj)
        elif resource == "deviceclasses":
            classes = self.store.list("deviceclasses")
            self.extended_classes = class_for_resource(classes)
            self.dra.replace_classes(classes)
        elif resource == "devicetaintrules":
            self.dra.replace_taint_rules(self.store.list("devicetaintrules"))
        elif resource == "podgroups":
            if self.index.group_claims:
                key = (change.namespace or "default", change.name)
                if obj is None:
                    self.index.podgroups.pop(key, None)
                else:
                    self.index.podgroups[key] = obj
        elif resource == "resourceclaimtemplates":
            key = (change.namespace or "default", change.name)
            if obj is None:
                self.index.templates.pop(key, None)
            else:
                self.index.templates[key] = obj

    def _claim(self, change: Change, obj: dict[str, Any] | None) -> None:
        old = self.index.claims.get((change.namespace or "default", change.name))
        if obj is None:
            if old is not None:
                self.index.remove(old)
        else:
            self.index.put(obj)
        self.count_held(old, -1)
        self.count_held(obj, +1)
        self.dra.claim_changed(old, obj)

    def _node(self, name: str, obj: dict[str, Any] | None) -> None:
        before = self.by_name.get(name)
        if obj is None:
            if before is not None:
                self._set_nodes([n for n in self.nodes if n is not before])
            self.dra.set_node(name, None)
        else:
            try:
                info = NodeInfo.of(obj)
            except InputError as exc:
                log.warning("leaving out node %s: %s", name, exc)
                self._node(name, None)
                return
            if before is not None:
                info.requested, info.pods = before.requested, before.pods
            self._set_nodes(sorted_nodes([*(n for n in self.nodes if n is not before), info]))
            self.held.setdefault(name, 0)
            self.dra.set_node(name, info.labels)
        self.static = {k: v for k, v in self.static.items() if k[1] != name}


def creation_order(pod: Mapping[str, Any]) -> tuple:
    """Creation time, then the store's resourceVersion (a pod untouched since creation keeps the
    version it was created with: the order of the file it came from), then the name."""
    meta = pod.get("metadata") or {}
    rv = str(meta.get("resourceVersion") or "")
    ns, name = pod_key(pod)
    return (str(meta.get("creationTimestamp") or ""), int(rv) if rv.isdigit() else 0, f"{ns}/{name}")


