"""The local backend for scenarios with `nodes:`: a small cluster of real plugins and kubelet-less nodes.

Roles, as in the one-node local backend (local.py), now per node:
- API server: one local object store for every node, with a Node object each (profile label;
  kubelet-less nodes in kwok's conventions, driver.fleet.nodes);
- a node with `plugin: true`: its own fake sysfs tree and `fake-dra run` child process (own sockets,
  checkpoint, CDI directory) publishing into the shared store; the kubelet's part is played over its
  sockets, as local.py does;
- a node with `plugin: false`: kubelet-less, like a kwok node: its pool is published the way a fleet
  publishes it (driver.fleet: the group template stamped for the node, reconciled with an owner
  reference to its Node); nothing prepares claims there;
- pods, kube-scheduler and kube-controller-manager: as in local.py (driver.e2e.control): stored
  Pods (tolerating kwok's taint) bound by `fake-dra schedule`'s Scheduler, trying nodes in name
  order (a pod that fits nowhere gets kube-scheduler's grouped reasons), and `fake-dra cluster`'s
  controllers after each deletion: a deleted Node's slices go through the garbage collector (owned
  by the Node), its pods through pod GC, and their claims are unreserved and deallocated by the
  resourceclaim controller, as a deleted pod's are.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driver import DEFAULT_DRIVER_NAME
from driver.discovery import make_sysfs
from driver.allocator.usage import usage_of
from driver.e2e.container import container_view
from driver.e2e.control import remove_pod, schedule_once, settle, store_pod
from driver.e2e.local import FinalState
from driver.e2e.manifests import NAMESPACE, device_classes
from driver.e2e.observe import Observation
from driver.e2e.plugin_proc import PluginDirs, PluginProcess
from driver.e2e.scenario import Scenario, ScenarioNode
from driver.e2e.views import flatten
from driver.errors import InputError, NotFoundError
from driver.fleet.nodes import KWOK_ANNOTATION, KWOK_TAINT, PROFILE_LABEL
from driver.fleet.template import Templates
from driver.plugin.client import ClaimResult, KubeletClient
from driver.publish.backend import LocalGateConfig, store_backend
from driver.publish.reconcile import reconcile
from driver.store import deletion
from driver.store.objectstore import ObjectStore

CLAIMS = "resourceclaims"
SLICES = "resourceslices"
TOLERATE_KWOK = {"key": KWOK_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}


@dataclass
class _Node:
    spec: ScenarioNode
    uid: str
    plugin: PluginProcess | None = None
    client: KubeletClient | None = None
    dirs: PluginDirs | None = None
    prepared: dict[str, tuple[tuple[str, str, str], set[str]]] = field(default_factory=dict)  # uid -> (ref, pods)


@dataclass
class _Pod:
    name: str
    uid: str
    claims: list[str]
    node: str | None = None


class MultiNodeBackend:
    name = "local"

    def __init__(self, *, driver_name: str = DEFAULT_DRIVER_NAME, keep: bool = False, settle_s: float = 20.0,
                 final_states: dict[str, FinalState] | None = None, kept: list[tuple[str, str]] | None = None) -> None:
        self.driver_name = driver_name
        self.keep = keep
        self.settle_s = settle_s
        self.final_states = final_states if final_states is not None else {}
        self.kept = kept if kept is not None else []
        self.nodes: dict[str, _Node] = {}
        self.pods: dict[str, _Pod] = {}
        self._scenario: Scenario | None = None

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, scenario: Scenario) -> None:
        self._scenario = scenario
        self.features = scenario.features
        # Short path: AF_UNIX socket paths are limited to 107 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="fdra-", dir="/tmp"))
        self.store = ObjectStore(self.root / "store")
        for dc in device_classes(self.driver_name):
            self.store.create("deviceclasses", dc)
        LocalGateConfig.write(self.store.root, self.features)
        self.templates = Templates(self.driver_name)
        for i, spec in enumerate(scenario.nodes):
            node = self._create_node(spec)
            self.nodes[spec.name] = node
            if spec.plugin:
                node.dirs = PluginDirs(self.root / f"n{i}", shared_store=self.store.root)
                node.dirs.root.mkdir()
                make_sysfs(spec.profile, node.dirs.sysfs)
                node.plugin = PluginProcess(node.dirs, node_name=spec.name, driver_name=self.driver_name,
                                            features=self.features)
                node.client = node.plugin.start()
            else:
                pool = self.templates.get(spec.profile, "{}", "full", self.features).drivers[0].stamp(spec.name)
                reconcile(store_backend(self.store), pool, node_name=spec.name, driver_name=self.driver_name,
                          owner_uid=node.uid)
        self._wait_for_pools()

    def _create_node(self, spec: ScenarioNode) -> _Node:
        meta: dict[str, Any] = {"name": spec.name, "labels": {PROFILE_LABEL: spec.profile, "kubernetes.io/hostname": spec.name}}
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
        if not spec.plugin:
            meta["labels"]["type"] = "kwok"
            meta["annotations"] = {KWOK_ANNOTATION: "fake"}
            body["spec"] = {"taints": [dict(KWOK_TAINT)]}
        return _Node(spec, self.store.create("nodes", body)["metadata"]["uid"])

    def _wait_for_pools(self) -> None:
        """Until every node's pool is complete with exactly the devices its profile publishes."""
        want = {name: set(self.templates.get(n.spec.profile, "{}", "full", self.features).drivers[0]
                          .stamp(name).devices())
                for name, n in self.nodes.items()}
        deadline = time.monotonic() + self.settle_s
        seen: dict[str, set[str]] = {}
        while time.monotonic() < deadline:
            seen = {name: set() for name in want}
            complete = True
            for name in want:
                slices = self._slices(name)
                seen[name] = {d["name"] for s in slices for d in s["spec"].get("devices") or []}
                gens = {s["spec"]["pool"]["generation"] for s in slices}
                complete = complete and len(gens) == 1 and all(
                    s["spec"]["pool"]["resourceSliceCount"] == len(slices) for s in slices)
            if complete and seen == want:
                return
            time.sleep(0.1)
        short = {n: f"{len(seen.get(n, ()))}/{len(w)}" for n, w in want.items()}
        raise InputError(f"the nodes did not publish their pools within {self.settle_s:.0f} s (devices {short}): "
                         f"{self.diagnostics()}")

    def stop(self) -> None:
        scenario, self._scenario = self._scenario, None
        try:
            if scenario is not None and hasattr(self, "store"):
                self.final_states[scenario.name] = FinalState(self._slices(None), self.store.list(CLAIMS, NAMESPACE))
        finally:
            for node in self.nodes.values():
                if node.plugin is not None:
                    node.plugin.stop("TERM")
            if hasattr(self, "templates"):
                self.templates.close()
            if hasattr(self, "root"):
                if self.keep:
                    self.kept.append((scenario.name if scenario else "?", str(self.root)))
                else:
                    shutil.rmtree(self.root, ignore_errors=True)

    def diagnostics(self) -> str:
        dead = [f"{n.spec.name}: {n.plugin.log_tail()}" for n in self.nodes.values()
                if n.plugin is not None and not n.plugin.alive() and n.client is not None]
        return "; ".join(dead)

    # ---- reads -----------------------------------------------------------------------------------
    def _slices(self, node: str | None) -> list[dict[str, Any]]:
        return [s for s in self.store.list(SLICES) if (s.get("spec") or {}).get("driver") == self.driver_name
                and (node is None or s["spec"].get("nodeName") == node)]

    def _devices(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(pool, device) -> the device as checks see it, with the node it is on."""
        return {(s["spec"]["pool"]["name"], d["name"]): {**flatten(d), "node": s["spec"].get("nodeName")}
                for s in self._slices(None) for d in s["spec"].get("devices") or []}

    def published_devices(self) -> list[dict[str, Any]]:
        return list(self._devices().values())

    def _claim(self, name: str) -> dict[str, Any]:
        return self.store.get(CLAIMS, NAMESPACE, name)

    def claim_devices(self) -> dict[str, list[dict[str, Any]]]:
        devices = self._devices()
        out = {}
        for claim in self.store.list(CLAIMS, NAMESPACE):
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
            out[claim["metadata"]["name"]] = [devices.get((r["pool"], r["device"]), {"name": r["device"]})
                                              for r in results if r.get("driver") == self.driver_name]
        return out

    def _counters(self) -> dict:
        """`<node>/<counter set>` -> counter -> amount left (counter set names repeat across nodes)."""
        usage = usage_of(self._slices(None), self.store.list(CLAIMS, NAMESPACE))
        return {f"{pool.name}/{cs}": {name: use.left for name, use in counters.items()}
                for pool in usage.pools.values() if pool.driver == self.driver_name
                for cs, counters in pool.counters().items()}

    # ---- kubelet ---------------------------------------------------------------------------------
    def _prepare(self, pod: _Pod, node: _Node, obs: Observation) -> None:
        if node.client is None or node.dirs is None:
            obs.notes.append(f"{node.spec.name} is kubelet-less: nothing prepares the pod's claims")
            return
        errors, cdi = [], []
        for name in pod.claims:
            claim = self._claim(name)
            uid = claim["metadata"]["uid"]
            ref = (NAMESPACE, name, uid)
            answer = node.client.prepare([ref]).get(uid, ClaimResult(error="no answer for this claim"))
            if answer.error:
                errors.append(f"{name}: {answer.error}")
                continue
            node.prepared.setdefault(uid, (ref, set()))[1].add(pod.name)
            cdi.extend(i for d in answer.devices for i in d.cdi_device_ids)
        obs.prepared = not errors
        obs.prepare_error = "; ".join(errors)
        obs.cdi_devices = cdi
        seen = container_view(node.dirs.cdi, cdi)
        obs.env, obs.metadata = seen.env, seen.metadata

    def _release(self, pod: _Pod) -> None:
        """The kubelet's part of a pod's end: unprepare what only it used on its node, then remove
        the pod (the kubelet's final delete); the controllers do the rest (driver.e2e.control.settle)."""
        node = self.nodes.get(pod.node or "")
        for name in pod.claims:
            try:
                uid = self._claim(name)["metadata"]["uid"]
            except NotFoundError:
                continue
            if node is not None and node.client is not None and uid in node.prepared:
                ref, pods = node.prepared[uid]
                pods.discard(pod.name)
                if not pods:
                    errors = node.client.unprepare([ref])
                    if errors.get(uid):
                        raise InputError(f"unprepare of claim {name} on {node.spec.name} failed: {errors[uid]}")
                    del node.prepared[uid]
        remove_pod(self.store, pod.name)
        settle(self.store, self.settle_s)

    def _released(self, names: Sequence[str]) -> bool:
        for name in names:
            try:
                if (self._claim(name).get("status") or {}).get("allocation"):
                    return False
            except NotFoundError:
                continue
        return True

    # ---- actions ---------------------------------------------------------------------------------
    def create_claim(self, name: str, obj: dict[str, Any]) -> Observation:
        self.store.create(CLAIMS, obj)
        return Observation()

    def run_pod(self, name: str, claims: Sequence[str], podgroup: str | None, skewed: bool) -> Observation:
        if name in self.pods:
            raise InputError(f"pod {name} already exists")
        pod = _Pod(name, store_pod(self.store, name, claims, [TOLERATE_KWOK]), list(claims))
        self.pods[name] = pod
        node, reason = schedule_once(self.store, self.features, name)
        obs = Observation(scheduled=node is not None, reason=reason, node=node)
        if node is None:
            obs.counters = self._counters()
            return obs
        pod.node = node
        devices = self.claim_devices()
        obs.devices = [d for c in pod.claims for d in devices.get(c, [])]
        self._prepare(pod, self.nodes[node], obs)
        obs.counters = self._counters()
        return obs

    def delete_pod(self, name: str) -> Observation:
        pod = self.pods.pop(name, None)
        if pod is None:
            raise InputError(f"delete-pod: pod {name} does not exist")
        self._release(pod)
        return Observation(released=self._released(pod.claims), counters=self._counters())

    def delete_claim(self, name: str) -> Observation:
        users = [p.name for p in self.pods.values() if name in p.claims]
        if users:
            raise InputError(f"delete-claim: claim {name} is still used by pods {', '.join(users)}")
        self.store.delete(CLAIMS, NAMESPACE, name)
        return Observation(released=True, counters=self._counters())

    def delete_node(self, name: str) -> Observation:
        node = self.nodes.pop(name, None)
        if node is None:
            raise InputError(f"delete-node: node {name} does not exist (or was deleted already)")
        if node.plugin is not None:
            node.plugin.stop("TERM")  # the node, and its kubelet, are gone
            node.client = None
        deletion.delete(self.store, "nodes", None, name)
        # The garbage collector deletes what the Node owns (its slices), pod GC the pods bound to
        # it, and the resourceclaim controller unreserves and deallocates their claims.
        gone = [p for p in self.pods.values() if p.node == name]
        for pod in gone:
            del self.pods[pod.name]
        settle(self.store, self.settle_s)
        obs = Observation(released=self._released([c for p in gone for c in p.claims]),
                          node_slices=len(self._slices(name)), counters=self._counters())
        obs.notes.append(f"node {name} deleted with {len(gone)} pod(s): {', '.join(p.name for p in gone) or 'none'}")
        return obs

    def observe(self) -> Observation:
        return Observation(counters=self._counters())

    # Single-node actions; scenario validation keeps them out of multi-node scenarios.
    def create_podgroup(self, name: str, claim: str) -> Observation:
        raise InputError("podgroup: not in multi-node scenarios")

    def delete_podgroup(self, name: str) -> Observation:
        raise InputError("delete-podgroup: not in multi-node scenarios")

    def set_gates(self, gates: Mapping[str, bool]) -> Observation:
        raise InputError("gates: not in multi-node scenarios")

    def fault(self, device: str, message: str, clear: bool) -> Observation:
        raise InputError("fault: not in multi-node scenarios")

    def restart_plugin(self, signal: str) -> Observation:
        raise InputError("restart-plugin: not in multi-node scenarios")
