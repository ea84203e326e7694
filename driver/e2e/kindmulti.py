"""The kind backend for scenarios with `nodes:`: kind workers for the plugin nodes, kwok for the rest.

A scenario node with `plugin: true` is played by a kind worker labelled with its profile
(hack/kind-config.yaml has a `demo` and a `dgx-a100` worker), each worker used once. A kubelet-less
node (`plugin: false`) is a kwok Node the backend creates (`fdra-e2e-<name>`, kwok's annotation,
label and taint) with its slices published as `fake-dra fleet` publishes them (the group template
stamped for the node, reconciled through the API with an owner reference to the Node), so kwok
keeps it Ready and marks its pods Running; nothing prepares claims there, so preparation
expectations on such a node are reported as not observable. Pods may go to any of the scenario's
nodes (node affinity, kwok's taint tolerated) and kube-scheduler picks; the prediction is the
reference allocator's verdict over those nodes. `delete-node` deletes a kwok Node and waits for the
garbage collector, pod GC and the resourceclaim controller; deleting a kind worker is never done.

Skipped, with the reason, when the cluster lacks kwok or workers with the profiles a scenario needs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from driver.e2e.kind import PROFILE_LABEL, KindBackend
from driver.e2e.manifests import NAMESPACE, namespace_object, pod_object
from driver.e2e.observe import Observation
from driver.e2e.scenario import Scenario
from driver.errors import FakeDraError, InputError
from driver.fleet.nodes import KWOK_ANNOTATION, KWOK_TAINT
from driver.fleet.template import Templates
from driver.kube import e2e_client as k
from driver.kube.slices import KubeSliceBackend
from driver.publish.reconcile import reconcile
from driver.schedule.dra import DraFilter, shape_of
from driver.schedule.reasons import dra_reason, fit_error

KWOK_CRD = "stages.kwok.x-k8s.io"
KWOK_PREFIX = "fdra-e2e-"
PREPARE_KEYS = frozenset({"prepared", "prepare_error", "cdi_devices", "env", "metadata", "prepare_calls_same"})


def _workers(api: Any) -> list[dict[str, Any]]:
    return [n for n in k.list_items(api, "Node") if (n["metadata"].get("labels") or {}).get("type") != "kwok"
            and PROFILE_LABEL in (n["metadata"].get("labels") or {})]


def multi_node_skip_reason(api: Any, scenario: Scenario) -> str | None:
    """Why this cluster cannot play the scenario's nodes (None: it can)."""
    by_name = {n.name: n for n in scenario.nodes}
    for step in scenario.steps:
        if step.action == "delete-node" and by_name[step.args["name"]].plugin:
            return f"step {step.index} deletes a node that runs the plugin, which would be a kind worker"
    try:
        kwok = k.get_or_none(api, "CustomResourceDefinition", KWOK_CRD) is not None
        workers = _workers(api)
    except FakeDraError as exc:
        return f"cannot see the cluster's nodes: {exc}"
    if any(not n.plugin for n in scenario.nodes) and not kwok:
        return "its kubelet-less nodes need kwok in the cluster (docs/fleet.md: kind + kwok)"
    have: dict[str, int] = {}
    for node in workers:
        profile = node["metadata"]["labels"][PROFILE_LABEL]
        have[profile] = have.get(profile, 0) + 1
    for profile in sorted({n.profile for n in scenario.nodes if n.plugin}):
        need = sum(1 for n in scenario.nodes if n.plugin and n.profile == profile)
        if have.get(profile, 0) < need:
            return (f"needs {need} kind worker(s) labelled {PROFILE_LABEL}={profile}, the cluster has "
                    f"{have.get(profile, 0)} (hack/kind-config.yaml)")
    return None


class KindMultiNodeBackend(KindBackend):
    def start(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.pods = {}
        k.delete(self.api, "Namespace", NAMESPACE)
        if not k.wait_gone(self.api, "Namespace", NAMESPACE, None, 120):
            raise InputError(f"namespace {NAMESPACE} left over from an earlier run did not go away")
        k.create(self.api, namespace_object())
        self.node_map: dict[str, str] = {}
        self.kwok: dict[str, str] = {}  # scenario name -> uid of the kwok Node made for it
        free = _workers(self.api)
        self.templates = Templates(self.driver_name)
        for spec in scenario.nodes:
            if spec.plugin:
                worker = next((w for w in free if w["metadata"]["labels"][PROFILE_LABEL] == spec.profile), None)
                if worker is None:
                    raise InputError(f"no free kind worker labelled {PROFILE_LABEL}={spec.profile}")
                free.remove(worker)
                self.node_map[spec.name] = worker["metadata"]["name"]
                continue
            name = KWOK_PREFIX + spec.name
            k.delete(self.api, "Node", name)
            k.wait_gone(self.api, "Node", name, None, 60)
            node = k.create(self.api, {"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": name, "annotations": {KWOK_ANNOTATION: "fake"},
                "labels": {"type": "kwok", "kubernetes.io/hostname": name, PROFILE_LABEL: spec.profile}},
                "spec": {"taints": [dict(KWOK_TAINT)]}})
            self.node_map[spec.name] = name
            self.kwok[spec.name] = node["metadata"]["uid"]
            pool = self.templates.get(spec.profile, "{}", "full", self.features).drivers[0].stamp(name)
            reconcile(KubeSliceBackend(self.api), pool, node_name=name, driver_name=self.driver_name,
                      owner_uid=node["metadata"]["uid"])
        self.node = ""  # several nodes: the single-node reads below are replaced

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            for spec_name in list(getattr(self, "kwok", {})):
                k.delete(self.api, "Node", self.node_map[spec_name])  # its slices go with it (owner)
            if hasattr(self, "templates"):
                self.templates.close()

    def _scenario_name(self, cluster_name: str | None) -> str | None:
        return next((s for s, c in self.node_map.items() if c == cluster_name), cluster_name)

    def _slices(self) -> list[dict[str, Any]]:
        nodes = set(self.node_map.values())
        return [s for s in k.list_items(self.api, "ResourceSlice", field_selector=f"spec.driver={self.driver_name}")
                if s["spec"].get("nodeName") in nodes]

    def _predict(self, names: Sequence[str], skewed: bool) -> tuple[bool, str, list[dict[str, Any]]]:
        claims = [self._claim(n) for n in names]
        todo = [c for c in claims if not (c.get("status") or {}).get("allocation")]
        if not todo:
            return True, "", []
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in k.list_items(self.api, "Node")}
        dra = DraFilter(slices=self._slices(), classes=k.list_items(self.api, "DeviceClass"), labels=labels,
                        allocated=[c for c in k.list_items(self.api, "ResourceClaim")
                                   if (c.get("status") or {}).get("allocation")], features=self.features)
        parsed, shape = dra.parse(todo), shape_of(todo)
        nodes = sorted(self.node_map.values())
        if any(not isinstance(dra.try_node(n, parsed, shape), str) for n in nodes):
            return True, "", []
        return False, fit_error({n: dra_reason(dra.explain(n, parsed, shape)) for n in nodes}, len(nodes)), []

    def run_pod(self, name: str, claims: Sequence[str], podgroup: str | None, skewed: bool) -> Observation:
        if podgroup is not None or skewed:
            raise InputError("multi-node scenarios have no podgroups or skewed schedulers")
        names = list(claims)
        guess, why, _ = self._predict(names, skewed)
        k.create(self.api, pod_object(name, names, node_names=sorted(self.node_map.values())))
        self.pods[name] = (names, None)
        pod, outcome = self._wait_pod(name)
        landed = (pod.get("spec") or {}).get("nodeName")
        obs = Observation(predicted=(guess, why), scheduled=bool(landed), node=self._scenario_name(landed))
        if outcome == "unschedulable":
            cond = next(c for c in pod["status"]["conditions"] if c.get("type") == "PodScheduled")
            obs.reason = f"{why} (kube-scheduler: {cond.get('message', '')})" if why else str(cond.get("message", ""))
        devices = self.claim_devices()
        obs.devices = [d for c in names for d in devices.get(c, [])]
        if landed and obs.node in self.kwok:
            obs.unobservable = PREPARE_KEYS
            obs.notes.append(f"{obs.node} is a kwok node: nothing prepares claims there")
        elif landed:
            obs.prepared = (pod.get("status") or {}).get("phase") == "Running"
            obs.prepare_error = outcome if outcome not in ("", "timeout") else ""
            if obs.prepared:
                obs.env = self._env(name)
                obs.cdi_devices = sorted(key for key in obs.env if key.endswith("_TYPE"))
            obs.unobservable = frozenset({"prepare_calls_same"})
        return obs

    def delete_node(self, name: str) -> Observation:
        if name not in self.kwok:
            raise InputError(f"delete-node {name}: only kubelet-less (kwok) nodes are deleted on kind")
        cluster = self.node_map[name]
        gone = [p for p, (claims, _) in self.pods.items()
                if (k.get_or_none(self.api, "Pod", p, NAMESPACE) or {}).get("spec", {}).get("nodeName") == cluster]
        k.delete(self.api, "Node", cluster)
        k.wait_gone(self.api, "Node", cluster, None, self.timeout_s)
        del self.kwok[name]
        for pod in gone:  # pod garbage collection deletes pods bound to a Node that no longer exists
            k.wait_gone(self.api, "Pod", pod, NAMESPACE, self.timeout_s)
        claims = [c for p in gone for c in self.pods.pop(p)[0]]
        deadline = time.monotonic() + self.timeout_s
        left = self._node_slices(cluster)
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = self._node_slices(cluster)
        return Observation(released=self._released(claims), node_slices=left)

    def _node_slices(self, cluster: str) -> int:
        return len(k.list_items(self.api, "ResourceSlice",
                                field_selector=f"spec.driver={self.driver_name},spec.nodeName={cluster}"))

    def observe(self) -> Observation:
        return Observation()
