"""The local backend: a one-node cluster simulated around the real plugin process.

Roles, each played by the component a real cluster uses for it where we have one:
- API server: the local object store (driver.store), the same one `fake-dra run` reads and writes;
  what it stores (claims, and the slices the plugin published) is checked against the 1.37 schema
  with the scenario's gates (driver.schema), as kube-apiserver would;
- node: a fake sysfs tree of the scenario's profile (driver.discovery.make_sysfs);
- kubelet plugin: `python -m driver run` as a child process (plugin_proc), publishing its slices;
- kube-scheduler: the reference allocator (driver.allocator, which `fake-dra schedule`'s Scheduler
  runs too) on a synced cluster view of the one node, then the reservations (driver.schedule.claims
  `with_consumer`, the Scheduler's) and the binding of the stored Pod to the Node `run` registered.
  Not the Scheduler itself: its reasons group nodes as kube-scheduler's do, with node and counter
  set names wildcarded (`gpu-*-counters`), and the single-node scenarios check the allocator's
  exact reason (which counter set is exhausted). A "skewed" scheduler sees the slices with
  compatibility groups stripped (one that predates KEP-5963: how version skew reaches
  preparation); a PodGroup member's group claim is reserved for the group (KEP-5729: the group is
  the harness's, not a stored PodGroup). A pod that does not fit is deleted: tried once;
- kube-controller-manager: `fake-dra cluster`'s controllers (driver.e2e.control), run until settled
  after each deletion: the resourceclaim controller unreserves a deleted pod's claims and
  deallocates those nothing reserves. A member's Pod lists only its own claims, so the group's
  claim follows the group, whose reservation is dropped here when it ends (the controller keeps
  PodGroup reservations as they are);
- kubelet: this module, over the plugin's real unix sockets (KubeletClient), with the kubelet's
  bookkeeping: a claim is prepared once per node, unprepared when its last pod on the node is
  gone, then the pod's final delete.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from driver import DEFAULT_DRIVER_NAME, schema
from driver.allocator.cluster import ClusterView
from driver.allocator.usage import counters_left
from driver.discovery import discover, make_sysfs, set_fault
from driver.e2e.container import container_view
from driver.e2e.control import PODS, remove_pod, settle, store_pod
from driver.e2e.manifests import NAMESPACE
from driver.e2e.observe import Observation
from driver.e2e.plugin_proc import PluginDirs, PluginProcess
from driver.e2e.scenario import Scenario
from driver.e2e.views import devices_by_claim, flatten, skewed_view
from driver.errors import AllocationError, InputError, NotFoundError
from driver.features import Features
from driver.hardware import load_catalog
from driver.plugin.client import ClaimResult
from driver.publish.backend import LocalGateConfig
from driver.personality import DEFAULT_PERSONALITY, personality_named
from driver.schedule.claims import with_consumer, without_consumer
from driver.state.metadata import HOST_SUBDIR
from driver.store.objectstore import ObjectStore

NODE = "node-1"
CLAIMS = "resourceclaims"


@dataclass
class FinalState:
    """The cluster at the end of a scenario, for the demo's "after" partition map."""

    slices: list[dict[str, Any]]
    claims: list[dict[str, Any]]


@dataclass
class _Pod:
    name: str
    uid: str
    claims: list[str]
    podgroup: str | None
    running: bool = False


@dataclass
class _Prepared:
    """The kubelet's record of one claim prepared on this node."""

    ref: tuple[str, str, str]
    result: ClaimResult
    pods: set[str] = field(default_factory=set)


class LocalBackend:
    name = "local"

    def __init__(self, *, driver_name: str = DEFAULT_DRIVER_NAME, keep: bool = False, settle_s: float = 20.0,
                 final_states: dict[str, FinalState] | None = None,
                 kept: list[tuple[str, str]] | None = None) -> None:
        self.driver_name = driver_name
        self.keep = keep
        self.settle_s = settle_s
        # Shared between the backends of one run (one per scenario), for the demo's "after" map.
        self.final_states: dict[str, FinalState] = final_states if final_states is not None else {}
        # (scenario, directory) of every run kept with keep=True (store, CDI specs, plugin.log).
        self.kept: list[tuple[str, str]] = kept if kept is not None else []
        self._scenario: Scenario | None = None
        self._slice_key: tuple = ("unset",)
        self._slice_cache: list[dict[str, Any]] = []
        # Like kube-scheduler's DRA plugin: the cluster view (parsed slices, what claims hold)
        # survives between scheduling cycles; one per gate set (the skewed scheduler has its own).
        self._views: dict[Features, ClusterView] = {}

    # ---- lifecycle -------------------------------------------------------------------------
    def for_scenario(self, scenario: Scenario) -> Any:
        """A scenario with `nodes:` runs on the multi-node variant of this backend (multinode.py)."""
        if not scenario.nodes:
            return self
        from driver.e2e.multinode import MultiNodeBackend

        return MultiNodeBackend(driver_name=self.driver_name, keep=self.keep, settle_s=self.settle_s,
                                final_states=self.final_states, kept=self.kept)

    def start(self, scenario: Scenario) -> None:
        self._scenario = scenario
        # Short path: AF_UNIX socket paths are limited to 107 bytes.
        self.dirs = PluginDirs(Path(tempfile.mkdtemp(prefix="fdra-", dir="/tmp")))
        self._slice_key = ("unset",)
        make_sysfs(scenario.profile, self.dirs.sysfs, scenario.gpus)
        # The scenario's personality: the harness plays the kubelet for its first driver (NVIDIA's
        # personality also runs the SR-IOV plugin, whose claims this harness does not prepare).
        self.profiles = personality_named(scenario.personality).drivers(
            scenario.driver_config, None if scenario.personality != DEFAULT_PERSONALITY else self.driver_name)
        if scenario.personality != DEFAULT_PERSONALITY:
            self.driver_name = self.profiles[0].name
        config_file = None
        if scenario.driver_config:
            config_file = self.dirs.root / "driver-config.yaml"
            config_file.write_text(yaml.safe_dump(dict(scenario.driver_config)))
        self.store = ObjectStore(self.dirs.store)
        for dc in (dc for profile in self.profiles for dc in profile.device_classes()):
            self.store.create("deviceclasses", dc)
        self.features = scenario.features
        LocalGateConfig.write(self.dirs.store, self.features)  # the simulated control plane's gates
        self.pods: dict[str, _Pod] = {}
        self.podgroups: dict[str, str] = {}
        self.prepared: dict[str, _Prepared] = {}  # claim uid -> kubelet record
        self.plugin = PluginProcess(self.dirs, node_name=NODE, driver_name=self.driver_name, features=self.features,
                                    personality=None if scenario.personality == DEFAULT_PERSONALITY else scenario.personality,
                                    driver_config=config_file)
        self.client = self.plugin.start()
        self._wait_for_pool()

    def stop(self) -> None:
        scenario, self._scenario = self._scenario, None
        try:
            if scenario is not None and hasattr(self, "store"):
                self.final_states[scenario.name] = FinalState(self._slices(), self.store.list(CLAIMS, NAMESPACE))
        finally:
            if hasattr(self, "plugin"):
                self.plugin.stop("TERM")
            if hasattr(self, "dirs"):
                if self.keep:
                    self.kept.append((scenario.name if scenario else "?", str(self.dirs.root)))
                else:
                    shutil.rmtree(self.dirs.root, ignore_errors=True)

    def _expected_devices(self) -> set[str]:
        pool = self.profiles[0].render(discover(self.dirs.sysfs, load_catalog()), self.features, node_name=NODE)
        return set(pool.devices())

    def _wait_for_pool(self) -> None:
        """Until the store holds a complete pool with exactly the devices the plugin should publish."""
        want = self._expected_devices()
        deadline = time.monotonic() + self.settle_s
        seen: set[str] = set()
        while time.monotonic() < deadline:
            slices = self._slices()
            seen = {d["name"] for s in slices for d in s["spec"].get("devices") or []}
            gens = {s["spec"]["pool"]["generation"] for s in slices}
            complete = len(gens) == 1 and all(s["spec"]["pool"]["resourceSliceCount"] == len(slices) for s in slices)
            if complete and seen == want:
                return
            time.sleep(0.1)
        raise InputError(f"the plugin did not publish the expected pool within {self.settle_s:.0f} s "
                         f"({len(seen)} of {len(want)} devices): {self.plugin.log_tail()}")

    def diagnostics(self) -> str:
        plugin = getattr(self, "plugin", None)
        if plugin is None or plugin.alive():
            return ""
        return f"plugin not running; log: {plugin.log_tail()}"

    # ---- reads -----------------------------------------------------------------------------
    def _slices(self) -> list[dict[str, Any]]:
        """This driver's slices. Parsing and checking them dominates a step, so reuse them while
        none changed (their names and resourceVersions, read without reading the slices)."""
        key = tuple(self.store.versions("resourceslices", index={"driver": self.driver_name}))
        if key != self._slice_key:
            self._slice_cache = self.store.list("resourceslices", index={"driver": self.driver_name})
            # What the plugin published must be well-formed. Every gated field counts as known here:
            # the store's writes already refused what its gates do not know, and a slice written
            # before a gate flip keeps its fields until republished (as on kube-apiserver).
            for obj in self._slice_cache:
                schema.validate(obj, "ResourceSlice", Features.all_on(), f"published ResourceSlice {obj['metadata']['name']}")
            self._slice_key = key
        return list(self._slice_cache)  # read-only for callers; the skewed scheduler copies before editing

    def published_devices(self) -> list[dict[str, Any]]:
        return [flatten(d) for s in self._slices() for d in s["spec"].get("devices") or []]

    def _claim(self, name: str) -> dict[str, Any]:
        return self.store.get(CLAIMS, NAMESPACE, name)

    def claim_devices(self) -> dict[str, list[dict[str, Any]]]:
        return devices_by_claim(self.store.list(CLAIMS, NAMESPACE), self.published_devices(), self.driver_name)

    def _counters(self) -> dict:
        # What the objects say (every gate on), read from the same kind of synced view the scheduler uses.
        view = self._view(Features.all_on(), self._slices())
        return counters_left(view.usage(driver=self.driver_name), self.driver_name)

    def _health(self, until: tuple[str, str] | None = None, timeout_s: float = 5.0) -> dict[str, str]:
        """Device -> health from the plugin's stream; with `until`, wait for that device to reach that state."""
        last: dict[str, str] = {}
        deadline = time.monotonic() + timeout_s
        for snapshot in self.client.watch_health(timeout=timeout_s):
            last = {d.device_name: d.health for d in snapshot}
            if until is None or last.get(until[0]) == until[1] or time.monotonic() > deadline:
                break
        return last

    # ---- scheduler and controllers -----------------------------------------------------------
    def _bind(self, pod: _Pod) -> None:
        """The binding (module doc): spec.nodeName and PodScheduled=True, as kube-scheduler's."""
        stored = self.store.get(PODS, NAMESPACE, pod.name)
        status = dict(stored.get("status") or {})
        status["conditions"] = [*(c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"),
                                {"type": "PodScheduled", "status": "True"}]
        self.store.update(PODS, {**stored, "spec": {**stored["spec"], "nodeName": NODE}, "status": status})

    def _schedule(self, names: Sequence[str], skewed: bool) -> tuple[list[str], str]:
        """Allocate the unallocated claims among `names` with the reference allocator (module doc);
        returns (newly allocated, reason if not)."""
        claims = {n: self._claim(n) for n in names}
        todo = [n for n in names if not (claims[n].get("status") or {}).get("allocation")]
        if not todo:
            return [], ""
        slices, features = self._slices(), self.features
        if skewed:
            slices, features = skewed_view(slices, features)
        try:
            results = self._view(features, slices).allocator(NODE).allocate([claims[n] for n in todo])
        except AllocationError as exc:
            return [], str(exc)
        for name, allocation in zip(todo, results):
            claim = claims[name]
            claim["status"] = {**(claim.get("status") or {}), "allocation": allocation}
            self._write_claim(claim)
        return todo, ""

    def _write_claim(self, claim: dict[str, Any], *, create: bool = False) -> None:
        """The apiserver's part of a claim write: refuse what it would refuse (driver.schema)."""
        name = claim["metadata"]["name"]
        old = None if create else self._claim(name)
        schema.validate(claim, "ResourceClaim", self.features, f"ResourceClaim {NAMESPACE}/{name}", old=old)
        if create:
            self.store.create(CLAIMS, claim)
        else:
            self.store.update(CLAIMS, claim)

    def _view(self, features: Features, slices: Sequence[dict[str, Any]]) -> ClusterView:
        """The cluster view of a gate set, synced with the store: only what changed since the last
        cycle or report is parsed again."""
        features = features.for_scheduler()
        view = self._views.get(features)
        if view is None:
            view = self._views[features] = ClusterView(features=features)
        view.replace_slices(slices)
        view.replace_classes(self.store.list("deviceclasses"))
        view.replace_claims([c for c in self.store.list(CLAIMS, NAMESPACE) if (c.get("status") or {}).get("allocation")])
        return view

    def _reserve(self, name: str, consumer: dict[str, str]) -> None:
        claim = with_consumer(self._claim(name), consumer)
        if claim is not None:
            self._write_claim(claim)

    def _unreserve_group(self, name: str, uid: str) -> None:
        """Drop an ended PodGroup's reservation, deallocating the claim when nothing else reserves it,
        as the resourceclaim controller does for pods (it keeps PodGroup reservations as they are)."""
        self._write_claim(without_consumer(self._claim(name), uid))

    # ---- kubelet ---------------------------------------------------------------------------
    def _prepare(self, pod: _Pod, obs: Observation) -> None:
        errors, same = [], True
        cdi: list[str] = []
        for name in pod.claims:
            claim = self._claim(name)
            uid = claim["metadata"]["uid"]
            ref = (NAMESPACE, name, uid)
            record = self.prepared.get(uid)
            answer = self.client.prepare([ref]).get(uid, ClaimResult(error="no answer for this claim"))
            if record is not None:
                # The kubelet prepares a claim once per node; asking again (as a restarted kubelet
                # would) must give the identical answer.
                same = same and answer == record.result
            elif not answer.error:
                record = self.prepared[uid] = _Prepared(ref, answer)
            if answer.error:
                errors.append(f"{name}: {answer.error}")
                continue
            record.pods.add(pod.name)
            cdi.extend(i for d in answer.devices for i in d.cdi_device_ids)
        obs.prepared = not errors
        obs.prepare_error = "; ".join(errors)
        obs.cdi_devices = cdi
        seen = container_view(self.dirs.cdi, cdi)
        obs.env, obs.metadata = seen.env, seen.metadata
        obs.prepare_calls_same = same
        pod.running = not errors

    def _release_pod(self, pod: _Pod) -> None:
        """The kubelet unprepares what the pod alone held and removes the pod; the resourceclaim
        controller then drops it from its claims' reservedFor. Only the claim its PodGroup references
        is reserved by the group (KEP-5729) and stays; the pod's own claims are released even for a
        group member."""
        for name in pod.claims:
            claim = self._claim(name)
            uid = claim["metadata"]["uid"]
            record = self.prepared.get(uid)
            if record is not None:
                record.pods.discard(pod.name)
                if not record.pods:
                    errors = self.client.unprepare([record.ref])
                    if errors.get(uid):
                        raise InputError(f"unprepare of claim {name} failed: {errors[uid]}")
                    del self.prepared[uid]
        remove_pod(self.store, pod.name)
        settle(self.store, self.settle_s)

    def _released(self, names: Sequence[str]) -> bool:
        for name in names:
            try:
                claim = self._claim(name)
            except NotFoundError:
                continue
            if (claim.get("status") or {}).get("allocation") or self._on_node(claim["metadata"]["uid"]):
                return False
        return True

    def _on_node(self, uid: str) -> bool:
        """Whether the kubelet still holds the claim prepared or a CDI spec or device metadata file
        of it is left behind."""
        return (uid in self.prepared or any(self.dirs.cdi.glob(f"*{uid}*"))
                or (self.dirs.state / HOST_SUBDIR / uid).exists())

    # ---- actions ---------------------------------------------------------------------------
    def create_claim(self, name: str, obj: dict[str, Any]) -> Observation:
        self._write_claim(obj, create=True)
        return Observation()

    def run_pod(self, name: str, claims: Sequence[str], podgroup: str | None, skewed: bool) -> Observation:
        if name in self.pods:
            raise InputError(f"pod {name} already exists")
        if podgroup is not None and podgroup not in self.podgroups:
            raise InputError(f"pod {name}: podgroup {podgroup} does not exist")
        group_claim = self.podgroups[podgroup] if podgroup is not None else None
        every = [*claims, *([group_claim] if group_claim and group_claim not in claims else [])]
        pod = _Pod(name, store_pod(self.store, name, [c for c in every if c != group_claim]), every, podgroup)
        self.pods[name] = pod
        obs = Observation()
        _, reason = self._schedule(pod.claims, skewed)
        if reason:
            remove_pod(self.store, name)  # tried once, as driver.e2e.control.schedule_once does
        obs.scheduled = not reason
        obs.reason = reason
        if reason:
            obs.counters = self._counters()
            return obs
        for c in pod.claims:
            if c == group_claim:
                self._reserve(c, {"resource": "podgroups", "apiGroup": "scheduling.k8s.io", "name": podgroup,
                                  "uid": f"podgroup-{podgroup}-uid"})
            else:
                self._reserve(c, {"resource": "pods", "name": name, "uid": pod.uid})
        self._bind(pod)
        devices = self.claim_devices()
        obs.devices = [d for c in pod.claims for d in devices.get(c, [])]
        self._prepare(pod, obs)
        obs.counters = self._counters()
        return obs

    def delete_pod(self, name: str) -> Observation:
        pod = self.pods.pop(name, None)
        if pod is None:
            raise InputError(f"delete-pod: pod {name} does not exist")
        self._release_pod(pod)
        return Observation(released=self._released(pod.claims), counters=self._counters())

    def delete_claim(self, name: str) -> Observation:
        users = [p.name for p in self.pods.values() if name in p.claims]
        if users:
            raise InputError(f"delete-claim: claim {name} is still used by pods {', '.join(users)}")
        uid = self._claim(name)["metadata"]["uid"]
        self.store.delete(CLAIMS, NAMESPACE, name)
        return Observation(released=not self._on_node(uid), counters=self._counters())

    def create_podgroup(self, name: str, claim: str) -> Observation:
        self.podgroups[name] = claim
        return Observation()

    def delete_podgroup(self, name: str) -> Observation:
        claim = self.podgroups.pop(name, None)
        if claim is None:
            raise InputError(f"delete-podgroup: podgroup {name} does not exist")
        for pod in [p for p in self.pods.values() if p.podgroup == name]:
            del self.pods[pod.name]
            self._release_pod(pod)
        self._unreserve_group(claim, f"podgroup-{name}-uid")
        return Observation(released=self._released([claim]), counters=self._counters())

    def set_gates(self, gates: Mapping[str, bool]) -> Observation:
        self.features = self.features.with_gates(gates)
        LocalGateConfig.write(self.dirs.store, self.features)
        self.client = self.plugin.restart("TERM", self.features)
        self._wait_for_pool()
        return Observation(notes=[f"gates now {self.features}"])

    def fault(self, device: str, message: str, clear: bool) -> Observation:
        dev = next((d for d in self.published_devices() if d["name"] == device), None)
        if dev is None or not dev.get("pciBusID"):
            raise InputError(f"fault: no published device {device!r} with a pciBusID")
        set_fault(self.dirs.sysfs, str(dev["pciBusID"]), None if clear else message)
        return Observation(health=self._health(until=(device, "HEALTHY" if clear else "UNHEALTHY")))

    def restart_plugin(self, signal: str) -> Observation:
        self.client = self.plugin.restart(signal)
        self._wait_for_pool()
        return Observation(health=self._health(), counters=self._counters())

    def observe(self) -> Observation:
        return Observation(health=self._health(), counters=self._counters())
