"""Pod stages: what a node does to the pods bound to it, as kwok's default Stages simulate a kubelet.

kwok (kubernetes-sigs/kwok kustomize/stage/pod/fast, its default stages, and pod/general, which
adds the delays) moves a pod of a node it manages (annotation `kwok.x-k8s.io/node: fake`) through:
- **pod-ready**: a bound pod, not being deleted, phase Pending and not Ready -> phase Running,
  conditions Initialized, Ready and ContainersReady True, every container running, hostIP/podIP,
  startTime;
- **pod-complete**: a Running pod owned by a Job (an ownerReference of kind Job), not being
  deleted -> phase Succeeded, every container terminated with reason Completed and exit code 0;
- **pod-delete**: a pod being deleted -> removed (the kubelet's final delete with grace period 0;
  finalizers still hold it, as kube-apiserver holds any object, until their owners remove them).
  A pod that finalizers hold gets the terminal phase a kubelet reports for a deleted pod (Failed),
  so its claims are released and a foreground deletion waiting on them ends.

Delays are kwok's annotations on the pod (the general stages' `durationFrom` / `jitterDurationFrom`):
`<stage>.stage.kwok.x-k8s.io/delay` (a Go duration such as `10s`, `1m30s`, `500ms`) and
`<stage>.stage.kwok.x-k8s.io/jitter-delay` (then the delay is drawn uniformly between the two),
counted from the moment the pod entered the stage's state (its PodScheduled transition for
pod-ready, startTime for pod-complete, deletionTimestamp for pod-delete). Without them a stage
runs at once, as the fast (default) stages do.

A node served by a node agent (`fake-dra run` registers its Node with the
`fake-dra.example.com/node-agent` annotation) is a kubelet's: there a pod becomes Running only after
the node agent prepared its claims (`NodeAgents.prepare`, the kubelet's NodePrepareResources), and
a deleted pod's claims are unprepared before it is removed (NodeUnprepareResources, for the claims
no other pod on the node still uses). Pods of other nodes (a Node created by hand: no kubelet, no
kwok) stay as they are, as on a cluster.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from driver.controllers.base import Result, Writes
from driver.controllers.objects import Key, is_ready, meta, owner_refs, seconds_since, with_condition
from driver.errors import InputError, NotFoundError
from driver.fleet.nodes import KWOK_ANNOTATION, NODE_AGENT_ANNOTATION
from driver.store.events import WARNING
from driver.store.objectstore import ObjectStore, now_timestamp
from driver.store.watch import DELETED, Change

COMPONENT = "kwok"
READY, COMPLETE, DELETE = "pod-ready", "pod-complete", "pod-delete"
PODS, NODES, CLAIMS = "pods", "nodes", "resourceclaims"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class NodeAgents(Protocol):
    """The kubelet's calls into the DRA plugins of a node agent (driver.commands.cluster wires
    them to the plugin's gRPC sockets)."""

    def prepare(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> str | None:
        """Prepare the claims on the node; None on success, else why not."""

    def unprepare(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> str | None: ...


def parse_duration(text: Any, where: str) -> float:
    """Go's time.ParseDuration for what kwok's annotations hold (`1m30s`, `500ms`, `2h`)."""
    value = str(text).strip()
    if value in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(value) or pos == 0:
        raise InputError(f"{where}: {value!r} is not a duration (Go's form: 500ms, 10s, 1m30s, 2h)")
    return total


class PodStages:
    name = COMPONENT
    watches = (PODS, NODES)

    def __init__(self, agents: NodeAgents | None = None, *, rng: random.Random | None = None) -> None:
        self.agents = agents
        self.rng = rng or random.Random()
        self._delays: dict[tuple[str, str], float] = {}  # (pod uid, stage) -> the drawn delay
        self._entered: dict[tuple[str, str], float] = {}  # when a stage without a timestamp began

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        for node in store.index_values(PODS, "node"):
            for ns, name in store.keys(PODS, all_namespaces=True, index={"node": node}):
                yield PODS, ns, name

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        if change.resource == PODS and change.type != DELETED:
            if (change.object or {}).get("spec", {}).get("nodeName"):
                yield change.key
        elif change.resource == NODES and change.type != DELETED:
            for ns, name in store.keys(PODS, all_namespaces=True, index={"node": change.name}):
                yield PODS, ns, name

    # ---- reconcile ------------------------------------------------------------------------------
    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        try:
            pod = store.get(*key)
        except NotFoundError:
            return Result()
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return Result()
        try:
            node = store.get(NODES, None, str(node_name))
        except NotFoundError:
            return Result()  # pod GC's
        annotations = meta(node).get("annotations") or {}
        agent = NODE_AGENT_ANNOTATION in annotations and self.agents is not None
        if annotations.get(KWOK_ANNOTATION) != "fake" and not agent:
            return Result()
        m = meta(pod)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if m.get("deletionTimestamp"):
            held = (m.get("deletionGracePeriodSeconds") or 0) == 0  # only finalizers keep it
            if held and phase in ("Succeeded", "Failed"):
                return Result()  # waiting for its finalizers
            wait = 0.0 if held else self._wait(pod, DELETE, m.get("deletionTimestamp"))
            if wait:
                return Result(requeue_after=wait)
            if agent:
                problem = self.agents.unprepare(node, self._releasable(store, pod))  # type: ignore[union-attr]
                if problem:
                    w.event(pod, "FailedUnprepareDynamicResources", problem, WARNING)
                    return Result(w.count, requeue_after=2.0)
            if held:  # its containers are stopped: the kubelet reports the terminal phase
                w.update(PODS, _terminated(pod))
                return Result(w.count)
            try:
                w.delete(PODS, pod, grace_period_s=0)
            except NotFoundError:
                pass
            self._forget(pod)
            return Result(w.count)
        if phase == "Pending" and not is_ready(pod):
            scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                              if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), {})
            wait = self._wait(pod, READY, scheduled.get("lastTransitionTime"))
            if wait:
                return Result(requeue_after=wait)
            if agent:
                claims = self._claims(store, pod)
                if claims is None:
                    return Result(requeue_after=1.0)
                problem = self.agents.prepare(node, claims) if claims else None  # type: ignore[union-attr]
                if problem:
                    w.event(pod, "FailedPrepareDynamicResources", problem, WARNING)
                    return Result(w.count, requeue_after=2.0)
            w.update(PODS, _running(pod, node))
            return Result(w.count)
        if phase == "Running" and any(r.get("kind") == "Job" for r in owner_refs(pod)):
            wait = self._wait(pod, COMPLETE, (pod.get("status") or {}).get("startTime"))
            if wait:
                return Result(requeue_after=wait)
            w.update(PODS, _succeeded(pod))
            self._forget(pod)
        return Result(w.count)

    def _wait(self, pod: Mapping[str, Any], stage: str, since: Any) -> float:
        """Seconds left before `stage` may run (0: now), from the pod's delay annotations."""
        annotations = meta(pod).get("annotations") or {}
        delay_text = annotations.get(f"{stage}.stage.kwok.x-k8s.io/delay")
        jitter_text = annotations.get(f"{stage}.stage.kwok.x-k8s.io/jitter-delay")
        if delay_text is None and jitter_text is None:
            return 0.0
        uid = str(meta(pod).get("uid"))
        where = f"pod {meta(pod).get('namespace')}/{meta(pod).get('name')}: annotation {stage}.stage.kwok.x-k8s.io"
        if (uid, stage) not in self._delays:
            try:
                delay = parse_duration(delay_text or 0, where + "/delay")
                jitter = parse_duration(jitter_text, where + "/jitter-delay") if jitter_text is not None else delay
            except InputError:
                delay = jitter = 0.0  # kwok ignores a delay it cannot read
            self._delays[(uid, stage)] = delay + self.rng.uniform(0, max(0.0, jitter - delay))
        elapsed = seconds_since(since)
        if elapsed is None:
            elapsed = time.monotonic() - self._entered.setdefault((uid, stage), time.monotonic())
        return max(0.0, self._delays[(uid, stage)] - elapsed)

    def _forget(self, pod: Mapping[str, Any]) -> None:
        uid = str(meta(pod).get("uid"))
        for stage in (READY, COMPLETE, DELETE):
            self._delays.pop((uid, stage), None)
            self._entered.pop((uid, stage), None)

    def _claims(self, store: ObjectStore, pod: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The pod's claims, each allocated and reserved for it; None while one is not yet."""
        ns = meta(pod).get("namespace") or "default"
        uid = meta(pod).get("uid")
        recorded = {s.get("name"): s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or [] if isinstance(s, Mapping)}
        out = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = entry.get("resourceClaimName") or recorded.get(entry.get("name"))
            if not name:
                return None
            try:
                claim = store.get(CLAIMS, ns, str(name))
            except NotFoundError:
                return None
            reserved = any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])
            if not (claim.get("status") or {}).get("allocation") or not reserved:
                return None
            out.append(claim)
        return out

    def _releasable(self, store: ObjectStore, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The claims of a leaving pod that no other live pod on its node still uses."""
        uid = meta(pod).get("uid")
        node = (pod.get("spec") or {}).get("nodeName")
        out = []
        for claim in store.find(CLAIMS, "reserved", str(uid), namespace=meta(pod).get("namespace") or "default"):
            others = [r for r in (claim.get("status") or {}).get("reservedFor") or [] if r.get("uid") != uid]
            on_node = False
            for r in others:
                try:
                    other = store.get(PODS, meta(claim).get("namespace"), str(r.get("name")))
                except NotFoundError:
                    continue
                on_node = on_node or (other.get("spec") or {}).get("nodeName") == node
            if not on_node:
                out.append(claim)
        return out


def _running(pod: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    now = now_timestamp()
    status = dict(pod.get("status") or {})
    conditions = status.get("conditions")
    for kind in ("Initialized", "Ready", "ContainersReady"):
        conditions = with_condition(conditions, {"type": kind, "status": "True"}, now)
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    status.update({
        "phase": "Running", "conditions": conditions, "startTime": status.get("startTime") or now,
        "containerStatuses": [{"name": c.get("name"), "image": c.get("image") or "", "imageID": "", "ready": True,
                               "restartCount": 0, "started": True, "state": {"running": {"startedAt": now}}}
                              for c in containers],
    })
    host = _node_ip(node)
    if host:
        status["hostIP"] = host
        status["hostIPs"] = [{"ip": host}]
    return {**pod, "status": status}


def _succeeded(pod: Mapping[str, Any]) -> dict[str, Any]:
    now = now_timestamp()
    status = dict(pod.get("status") or {})
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    status["containerStatuses"] = [
        {"name": c.get("name"), "image": c.get("image") or "", "imageID": "", "ready": False, "restartCount": 0,
         "started": False, "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt":
                                                    status.get("startTime") or now, "finishedAt": now}}}
        for c in containers]
    status["phase"] = "Succeeded"
    conditions = status.get("conditions")
    for kind in ("Ready", "ContainersReady"):
        conditions = with_condition(conditions, {"type": kind, "status": "False", "reason": "PodCompleted"}, now)
    status["conditions"] = conditions
    return {**pod, "status": status}


def _terminated(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A deleted pod whose finalizers hold it, its containers stopped: phase Failed, as the kubelet reports a deleted pod before its final delete (kubernetes
    pkg/kubelet/kubelet_pods.go getPhase with podIsTerminal; status_manager.go canBeDeleted waits
    for it). Without it a pod held by `foregroundDeletion` stays Running, its claims stay reserved
    (the resourceclaim controller's isPodDone), and a foreground deletion never ends."""
    now = now_timestamp()
    status = dict(pod.get("status") or {})
    status["containerStatuses"] = [
        {**c, "ready": False, "started": False,
         "state": {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": now}}}
        for c in status.get("containerStatuses") or [] if isinstance(c, Mapping)]
    status["phase"] = "Failed"
    conditions = status.get("conditions")
    for kind in ("Ready", "ContainersReady"):
        conditions = with_condition(conditions, {"type": kind, "status": "False", "reason": "PodFailed"}, now)
    status["conditions"] = conditions
    return {**pod, "status": status}


def _node_ip(node: Mapping[str, Any]) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if isinstance(address, Mapping) and address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None

