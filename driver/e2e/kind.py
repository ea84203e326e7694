"""The kind backend: the same scenarios against a real cluster, with the reference allocator as oracle.

Before each pod is created the reference allocator predicts, from the cluster's own slices, classes
and allocated claims, whether kube-scheduler can place it; the harness then lets the real scheduler
and kubelet act and compares: claim status.allocation, pod scheduling condition, pod phase (the
kubelet ran NodePrepareResources), the container's FAKE_DRA_* environment (from its log), the
device metadata files it can read (`kubectl exec ... cat`), and device health read over the
plugin's own socket inside its pod. What cannot be done to a running
cluster (flipping feature gates, valueFrom which 1.37 lacks) is skipped with the reason.

Needs: KUBECONFIG for a cluster set up by hack/kind-create.sh + hack/kind-load.sh + hack/install.sh,
and kubectl on PATH (for `exec` into the plugin pod: fault injection and health).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from driver import DEFAULT_DRIVER_NAME
from driver.allocator.cluster import ClusterView
from driver.allocator.usage import counters_left
from driver.e2e.manifests import NAMESPACE, class_name, namespace_object, pod_object, podgroup_object
from driver.e2e.observe import Observation
from driver.e2e.scenario import Scenario
from driver.e2e.views import devices_by_claim, flatten, skewed_view
from driver.errors import AllocationError, FakeDraError, InputError
from driver.features import Features, parse_features
from driver.kube import e2e_client as k
from driver.state.metadata import container_path

PLUGIN_NS = "fake-dra"
PLUGIN_SELECTOR = "app.kubernetes.io/name=fake-dra,app.kubernetes.io/component=kubelet-plugin"
PROFILE_LABEL = "fake-dra.example.com/profile"
# What hack/kind-config.yaml and deploy/overlays/kind give the cluster and the plugin.
CLUSTER_FEATURES = parse_features("DRASharedConsumableCapacity=false")


def _kubeconfig(explicit: str | None) -> str | None:
    raw = explicit or os.environ.get("KUBECONFIG")
    return raw.split(os.pathsep)[0] if raw else None


def unreachable_reason(kubeconfig: str | None, driver_name: str = DEFAULT_DRIVER_NAME) -> str | None:
    """Why the kind backend cannot run here (None when it can): no config, no cluster, no driver."""
    cfg = _kubeconfig(kubeconfig)
    if not cfg:
        return "no KUBECONFIG: create a cluster with hack/kind-create.sh, hack/kind-load.sh, hack/install.sh"
    if not Path(cfg).is_file():
        return f"KUBECONFIG {cfg} does not exist"
    try:
        api = k.connect(cfg, timeout_s=5)
        k.server_version(api)
    except FakeDraError as exc:
        return f"cluster from {cfg} not reachable: {exc}"
    if k.get_or_none(api, "DeviceClass", class_name("gpu", driver_name)) is None:
        return f"fake-dra is not installed in the cluster from {cfg} (run hack/install.sh)"
    return None


class KindBackend:
    name = "kind"

    def __init__(self, *, kubeconfig: str | None, driver_name: str = DEFAULT_DRIVER_NAME,
                 timeout_s: float = 90.0, features: Features = CLUSTER_FEATURES) -> None:
        self.kubeconfig = _kubeconfig(kubeconfig)
        self.driver_name = driver_name
        self.timeout_s = timeout_s
        self.features = features
        self.api = k.connect(self.kubeconfig)
        self.node = ""
        self.pods: dict[str, tuple[list[str], str | None]] = {}

    # ---- selection ---------------------------------------------------------------------------
    def skip_reason(self, scenario: Scenario) -> str | None:
        if not scenario.kind:
            return "local only (needs what Kubernetes 1.37 lacks, e.g. KEP-5941 valueFrom)"
        if scenario.personality != "fake-dra":
            return f"personality {scenario.personality}: the kind install (deploy/) runs fake-dra's own driver"
        if any(s.action == "gates" for s in scenario.steps):
            return "flips feature gates, which a running cluster cannot do"
        # valueFrom (DRASharedConsumableCapacity) is not in 1.37; scenarios that need it are local only.
        differ = [g for g, on in scenario.features.as_gates().items()
                  if g != "DRASharedConsumableCapacity" and on != self.features.enabled(g)]
        if differ:
            return f"needs gates {', '.join(differ)} set differently from the kind cluster"
        if scenario.nodes:
            from driver.e2e.kindmulti import multi_node_skip_reason

            return multi_node_skip_reason(self.api, scenario)
        return None

    def for_scenario(self, scenario: Scenario) -> Any:
        """Scenarios with `nodes:` run on kind workers and kwok nodes (kindmulti.py)."""
        if not scenario.nodes:
            return self
        from driver.e2e.kindmulti import KindMultiNodeBackend

        return KindMultiNodeBackend(kubeconfig=self.kubeconfig, driver_name=self.driver_name,
                                    timeout_s=self.timeout_s, features=self.features)

    def start(self, scenario: Scenario) -> None:
        nodes = k.list_items(self.api, "Node", label_selector=f"{PROFILE_LABEL}={scenario.profile}")
        if not nodes:
            raise InputError(f"no node labelled {PROFILE_LABEL}={scenario.profile} (see hack/kind-config.yaml)")
        self.node = nodes[0]["metadata"]["name"]
        self.pods = {}
        k.delete(self.api, "Namespace", NAMESPACE)
        if not k.wait_gone(self.api, "Namespace", NAMESPACE, None, 120):
            raise InputError(f"namespace {NAMESPACE} left over from an earlier run did not go away")
        k.create(self.api, namespace_object())

    def stop(self) -> None:
        k.delete(self.api, "Namespace", NAMESPACE)
        k.wait_gone(self.api, "Namespace", NAMESPACE, None, 120)

    # ---- reads -------------------------------------------------------------------------------
    def _slices(self) -> list[dict[str, Any]]:
        return k.list_items(self.api, "ResourceSlice",
                            field_selector=f"spec.driver={self.driver_name},spec.nodeName={self.node}")

    def published_devices(self) -> list[dict[str, Any]]:
        return [flatten(d) for s in self._slices() for d in s["spec"].get("devices") or []]

    def _claim(self, name: str) -> dict[str, Any]:
        return k.get(self.api, "ResourceClaim", name, NAMESPACE)

    def claim_devices(self) -> dict[str, list[dict[str, Any]]]:
        return devices_by_claim(k.list_items(self.api, "ResourceClaim", NAMESPACE), self.published_devices(),
                                self.driver_name)

    # ---- prediction --------------------------------------------------------------------------
    def _predict(self, names: Sequence[str], skewed: bool) -> tuple[bool, str, list[dict[str, Any]]]:
        claims = [self._claim(n) for n in names]
        todo = [c for c in claims if not (c.get("status") or {}).get("allocation")]
        if not todo:
            return True, "", []
        slices, features = self._slices(), self.features
        if skewed:
            slices, features = skewed_view(slices, features)
        try:
            results = self._view(features, slices).allocator(self.node).allocate(todo)
        except AllocationError as exc:
            return False, str(exc), []
        return True, "", [dict(c, status={"allocation": a}) for c, a in zip(todo, results)]

    # ---- pods --------------------------------------------------------------------------------
    def _wait_pod(self, name: str) -> tuple[dict[str, Any], str]:
        """Until the pod runs, cannot be scheduled, or failed to get its devices prepared."""
        deadline = time.monotonic() + self.timeout_s
        pod: dict[str, Any] = {}
        while time.monotonic() < deadline:
            pod = k.get(self.api, "Pod", name, NAMESPACE)
            status = pod.get("status") or {}
            if status.get("phase") in ("Running", "Succeeded", "Failed"):
                return pod, ""
            for cond in status.get("conditions") or []:
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
                    return pod, "unschedulable"
            failure = self._prepare_failure(name)
            if failure:
                return pod, failure
            time.sleep(1)
        return pod, "timeout"

    def _prepare_failure(self, pod: str) -> str:
        events = k.list_items(self.api, "Event", NAMESPACE, field_selector=f"involvedObject.name={pod}")
        for ev in events:
            if "prepare" in str(ev.get("reason", "")).lower() or "NodePrepareResources" in str(ev.get("message", "")):
                return str(ev.get("message", ""))
        return ""

    def _env(self, name: str) -> dict[str, str]:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = k.pod_log(self.api, NAMESPACE, name)
            env = dict(line.split("=", 1) for line in text.splitlines() if line.startswith("FAKE_DRA") and "=" in line)
            if env:
                return env
            time.sleep(1)
        return {}

    def run_pod(self, name: str, claims: Sequence[str], podgroup: str | None, skewed: bool) -> Observation:
        names = list(claims)
        guess, why, allocations = self._predict(names, skewed)
        if skewed and guess:
            for claim in allocations:  # a scheduler ignoring groups would have written exactly this
                current = self._claim(claim["metadata"]["name"])
                current["status"] = claim["status"]
                k.update_status(self.api, current)
        k.create(self.api, pod_object(name, names, podgroup=podgroup, node_name=self.node))
        self.pods[name] = (names, podgroup)
        pod, outcome = self._wait_pod(name)
        obs = Observation(predicted=(guess, why))
        obs.scheduled = bool((pod.get("spec") or {}).get("nodeName"))
        if outcome == "unschedulable":
            cond = next(c for c in pod["status"]["conditions"] if c.get("type") == "PodScheduled")
            # kube-scheduler only says "cannot allocate all claims"; the words of *why* come from the
            # reference allocator, whose verdict the "allocator prediction" check holds to the scheduler's.
            said = str(cond.get("message", ""))
            obs.reason = f"{why} (kube-scheduler: {said})" if why else said
        devices = self.claim_devices()
        obs.devices = [d for c in names for d in devices.get(c, [])]
        if obs.scheduled:
            obs.prepared = (pod.get("status") or {}).get("phase") == "Running"
            obs.prepare_error = outcome if outcome not in ("", "timeout") else ""
            if obs.prepared:
                obs.env = self._env(name)
                obs.metadata = self._metadata_files(name, names)
                # One FAKE_DRA_<DEVICE>_TYPE per CDI device the runtime injected.
                obs.cdi_devices = sorted(key for key in obs.env if key.endswith("_TYPE"))
        obs.notes.append(f"node {self.node}")
        # The kubelet prepares a claim once per node and keeps no answer we could compare.
        obs.unobservable = frozenset({"prepare_calls_same"})
        obs.counters = self._counters()
        return obs

    def _metadata_files(self, pod: str, claims: Sequence[str]) -> dict[str, str] | None:
        """Container path -> content of the device metadata files the pod's container can read:
        for each request of each claim, the path the protocol defines, read with `cat` inside it.
        None (not observed) without kubectl."""
        if shutil.which("kubectl") is None:
            return None
        files: dict[str, str] = {}
        for claim in claims:
            for req in (self._claim(claim).get("spec") or {}).get("devices", {}).get("requests") or []:
                path = container_path(self.driver_name, claim, str(req.get("name")))
                text = self._kubectl(["exec", "-n", NAMESPACE, pod, "-c", "ctr", "--", "cat", path], check=False)
                if text is not None:
                    files[path] = text
        return files

    def _counters(self) -> dict:
        # What the objects say (every gate on), read from the same kind of view the prediction uses.
        view = self._view(Features.all_on(), self._slices())
        return counters_left(view.usage(driver=self.driver_name), self.driver_name)

    def _view(self, features: Features, slices: Sequence[dict[str, Any]]) -> ClusterView:
        """The cluster as kube-scheduler's informers see it: `slices`, the API server's classes and
        allocated claims."""
        view = ClusterView(features=features)
        view.add_slices(slices)
        view.replace_classes(k.list_items(self.api, "DeviceClass"))
        view.replace_claims([c for c in k.list_items(self.api, "ResourceClaim") if (c.get("status") or {}).get("allocation")])
        return view

    def _released(self, names: Sequence[str]) -> bool:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pending = [n for n in names if (c := k.get_or_none(self.api, "ResourceClaim", n, NAMESPACE))
                       and (c.get("status") or {}).get("allocation")]
            if not pending:
                return True
            time.sleep(1)
        return False

    def delete_pod(self, name: str) -> Observation:
        names, _ = self.pods.pop(name, ([], None))
        k.delete(self.api, "Pod", name, NAMESPACE, grace_s=1)
        k.wait_gone(self.api, "Pod", name, NAMESPACE, self.timeout_s)
        still_used = {c for other, _ in self.pods.values() for c in other}
        free = [n for n in names if n not in still_used]
        if free:
            return Observation(released=self._released(free), counters=self._counters())
        return Observation(released=False, counters=self._counters())

    def delete_claim(self, name: str) -> Observation:
        k.delete(self.api, "ResourceClaim", name, NAMESPACE)
        return Observation(released=k.wait_gone(self.api, "ResourceClaim", name, NAMESPACE, self.timeout_s))

    def create_claim(self, name: str, obj: dict[str, Any]) -> Observation:
        k.create(self.api, obj)
        return Observation()

    def create_podgroup(self, name: str, claim: str) -> Observation:
        k.create(self.api, podgroup_object(name, claim))
        return Observation()

    def delete_podgroup(self, name: str) -> Observation:
        members = [p for p, (_, group) in self.pods.items() if group == name]
        claims = sorted({c for p in members for c in self.pods[p][0]})
        for p in members:
            self.pods.pop(p)
            k.delete(self.api, "Pod", p, NAMESPACE, grace_s=1)
        for p in members:
            k.wait_gone(self.api, "Pod", p, NAMESPACE, self.timeout_s)
        k.delete(self.api, "PodGroup", name, NAMESPACE)
        return Observation(released=self._released(claims))

    def set_gates(self, gates: Mapping[str, bool]) -> Observation:
        raise InputError("the kind backend cannot flip feature gates of a running cluster")

    # ---- inside the plugin pod ------------------------------------------------------------------
    def _plugin_pod(self) -> str:
        pods = k.list_items(self.api, "Pod", PLUGIN_NS, field_selector=f"spec.nodeName={self.node}",
                            label_selector=PLUGIN_SELECTOR)
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"
                   and not p["metadata"].get("deletionTimestamp")]
        if not running:
            raise InputError(f"no running fake-dra plugin pod on node {self.node}")
        return running[0]["metadata"]["name"]

    def _kubectl(self, args: list[str], check: bool = True) -> str | None:
        """stdout of a kubectl command; on failure InputError, or None with check=False."""
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise InputError("kubectl is required on PATH for exec into pods (fault injection, health, "
                             "device metadata) on the kind backend")
        cmd = [kubectl, *(["--kubeconfig", self.kubeconfig] if self.kubeconfig else []), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            if not check:
                return None
            raise InputError(f"kubectl {' '.join(args[:4])} failed: {done.stderr.strip()[:500]}")
        return done.stdout

    def _exec(self, script: str) -> str:
        out = self._kubectl(["exec", "-n", PLUGIN_NS, self._plugin_pod(), "-c", "plugin", "--", "python", "-c", script])
        assert out is not None
        return out

    def _health(self) -> dict[str, str]:
        script = (
            "import json; from driver.plugin.client import KubeletClient\n"
            f"c = KubeletClient('/var/lib/kubelet/plugins_registry', {self.driver_name!r},"
            f" endpoint='/var/lib/kubelet/plugins/{self.driver_name}/dra.sock', dra_version='v1')\n"
            "last = {}\n"
            "for snap in c.watch_health(timeout=4, version='v1'):\n"
            "    last = {d.device_name: d.health for d in snap}\n"
            "print(json.dumps(last))\n"
        )
        return dict(json.loads(self._exec(script).strip().splitlines()[-1] or "{}"))

    def fault(self, device: str, message: str, clear: bool) -> Observation:
        dev = next((d for d in self.published_devices() if d["name"] == device), None)
        if dev is None or not dev.get("pciBusID"):
            raise InputError(f"fault: node {self.node} publishes no device {device!r} with a pciBusID")
        value = None if clear else message
        self._exec("import os; from driver.discovery import set_fault; "
                   f"set_fault(os.environ.get('FAKE_DRA_SYSFS_ROOT', '/fake-sysfs'), {dev['pciBusID']!r}, {value!r})")
        return Observation(health=self._health())

    def restart_plugin(self, signal: str) -> Observation:
        old = self._plugin_pod()
        k.delete(self.api, "Pod", old, PLUGIN_NS, grace_s=0 if signal == "KILL" else None)
        k.wait_gone(self.api, "Pod", old, PLUGIN_NS, self.timeout_s)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            try:
                self._plugin_pod()
                return Observation(health=self._health())
            except InputError:
                time.sleep(2)
        raise InputError(f"the fake-dra plugin on node {self.node} did not come back within {self.timeout_s:.0f} s")

    def observe(self) -> Observation:
        return Observation(health=self._health())
