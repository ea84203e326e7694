"""kube-scheduler's scheduler_perf DRA workloads, read from their configs and set up in a local store.

The configs and templates are kubernetes/kubernetes' test/integration/scheduler_perf/dra files,
kept verbatim outside this repository (../shared/upstream/scheduler_perf/, with a README naming
their commits and what each op of scheduler_perf's Go code creates). They are read from there,
never copied. This module turns one workload into objects in a local store the way scheduler_perf
turns it into objects in its apiserver:

- a config is a list of test cases, each a `workloadTemplate` (ops) and `workloads` (name,
  labels, params, threshold); `countParam: $x` and `templateParams: {k: $x|default}` take the
  workload's param `x` (or the default, read as YAML; an empty default is nil);
- `createNodes` (default template: a node with capacity pods 110, cpu 4, memory 32Gi, Ready),
  `createAny` (a template rendered `count` times with `.Index` 0..count-1, `.Count` and the
  template params; hack/gotemplate.py renders Go's text/template), `createPods` (the same, in the
  op's namespace), `createResourceDriver` (one slice per node matching a glob: `maxClaimsPerNode`
  devices `instance-<i>`, as README.md describes dra.go), `allocResourceClaims` (each unallocated
  claim of a namespace allocated by the reference allocator on the first node of a shuffled list
  that fits, no reservedFor), `start`/`stopCollectingMetrics` (nothing to do here);
- every node gets `kubernetes.io/hostname: <name>` (node_util.go), and, as kube-apiserver's
  defaulting does (pkg/apis/core/v1/defaults.go SetDefaults_NodeStatus), status.allocatable from
  status.capacity when unset;
- objects are checked as `fake-dra apply` checks them (strict schema, kube-apiserver's rules: the
  first of each template through the store's apply plan) and created with `ObjectStore.create`,
  which names a `generateName` object as kube-apiserver does.

Which copy of a template a config uses when several commits are kept is README.md's table
(`TEMPLATE_COMMITS`).
"""

from __future__ import annotations

import copy
import fnmatch
import os
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gotemplate import render

from driver.allocator.cluster import ClusterView
from driver.errors import AllocationError, InputError
from driver.features import KNOWN_GATES, Features
from driver.store import ObjectStore
from driver.store.apply import plan
from driver.store.kinds import for_object
from driver.store.objectstore import generated_name

# README.md: the set of files that agree with each config (config commit -> template -> commit).
TEMPLATE_COMMITS = {
    "21605d77": {"node-with-dra-test-driver.yaml": "3c88b691"},
    "70174dc1": {"node-with-dra-test-driver.yaml": "3c88b691"},
    "439aa979": {"node-with-dra-test-driver.yaml": "3c88b691"},
    "2e090810": {"node-with-dra-test-driver.yaml": "3c88b691"},
    "16913111": {"node-with-dra-test-driver.yaml": "fa7ba8e2",
                 "resourceslice-partitionable-countersets.yaml": "16913111"},
}
# README.md: configs whose templates do not agree with each other, kept for the record only.
NOT_RUNNABLE = {
    "PartitionableBacktracking": "its counter-set and device templates come from commits that do not agree",
    "CompatibilityGroups": "its templates come from commits that do not agree",
    "FirstAvailable": "its claim template is kept only as resource.k8s.io/v1alpha3",
    "PublishResourceSlices": "it measures how fast slices are published, not pods scheduled",
}
DEFAULT_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "scheduler-perf-"},
                "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                           "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"}}


def find_upstream(start: Path) -> Path | None:
    """../shared/upstream/scheduler_perf from the repository (or any directory above it), or
    $FAKE_DRA_SCHEDULER_PERF."""
    env = os.environ.get("FAKE_DRA_SCHEDULER_PERF")
    if env:
        return Path(env)
    for parent in [start, *start.parents]:
        candidate = parent / "shared" / "upstream" / "scheduler_perf"
        if (candidate / "README.md").exists():
            return candidate
    return None


@dataclass
class Workload:
    case: str
    name: str
    config: Path  # upstream/<commit>/dra/.../performance-config.yaml
    ops: list[dict[str, Any]]
    params: dict[str, Any]
    labels: list[str]
    threshold: float | None
    gates: dict[str, bool]

    @property
    def label(self) -> str:
        return f"{self.case}/{self.name}"

    @property
    def commit(self) -> str:
        return _commit_of(self.config)

    def param(self, value: Any) -> Any:
        """A `$name` or `$name|default` reference resolved against the workload's params."""
        if not isinstance(value, str) or not value.startswith("$"):
            return value
        name, _, default = value[1:].partition("|")
        if name in self.params:
            return self.params[name]
        if "|" in value:
            return yaml.safe_load(default) if default else None
        raise InputError(f"{self.label}: parameter {name!r} is not set")

    def count(self, op: Mapping[str, Any], key: str = "count") -> int:
        if f"{key}Param" in op:
            return int(self.param(op[f"{key}Param"]) or 0)
        return int(op.get(key, 1))

    def template(self, relative: str) -> Path:
        """The template a config names (`templates/x.yaml`, `../templates/x.yaml`), in the copy
        README.md pairs with that config."""
        base = Path(relative).name
        root = _root_of(self.config)
        found = sorted(root.glob(f"*/dra/templates/{base}"))
        if not found:
            raise InputError(f"{self.label}: template {relative} is not among the kept files")
        wanted = TEMPLATE_COMMITS.get(self.commit, {}).get(base)
        if wanted:
            found = [f for f in found if f.relative_to(root).parts[0] == wanted] or found
        return found[0]


def _root_of(config: Path) -> Path:
    for parent in config.parents:
        if (parent / "README.md").exists():
            return parent
    raise InputError(f"{config}: not under a scheduler_perf directory with its README.md")


def _commit_of(config: Path) -> str:
    return config.relative_to(_root_of(config)).parts[0]


def load_workloads(upstream: Path) -> list[Workload]:
    """Every workload of every kept config, in file order."""
    out = []
    for config in sorted(upstream.glob("*/dra/**/performance-config.yaml")):
        for case in yaml.safe_load(config.read_text()) or []:
            for w in case.get("workloads") or []:
                threshold = w.get("threshold")
                if isinstance(threshold, Mapping):
                    threshold = threshold.get("dra")
                gates = {**(case.get("featureGates") or {}), **(w.get("featureGates") or {})}
                out.append(Workload(case["name"], w["name"], config, case.get("workloadTemplate") or [],
                                    dict(w.get("params") or {}), list(w.get("labels") or []),
                                    float(threshold) if threshold is not None else None, gates))
    return out


def features_for(workload: Workload) -> Features:
    """The workload's DRA gates the allocator knows (others, e.g. SchedulerQueueingHints, change
    nothing modelled here)."""
    known = {k: bool(v) for k, v in workload.gates.items() if k in KNOWN_GATES}
    return Features().with_gates(known, workload.label) if known else Features()


# ---- setting a workload up -----------------------------------------------------------------------

@dataclass
class Setup:
    """What a workload's ops made: nodes, and the pods to schedule before and during measurement."""

    nodes: list[str] = field(default_factory=list)
    init_pods: int = 0
    measured: list[tuple[str, int, dict[str, Any], str]] = field(default_factory=list)  # (namespace, count, op, template)
    steady: bool = False


def rendered(workload: Workload, template: Path, count: int, extra: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    source = template.read_text()
    for i in range(count):
        text = render(source, {**extra, "Index": i, "Count": count}, str(template))
        obj = yaml.safe_load(text)
        if not isinstance(obj, dict):
            raise InputError(f"{workload.label}: {template} (Index {i}) did not render one object")
        yield obj


def _checked(store: ObjectStore, obj: dict[str, Any], namespace: str, where: str) -> None:
    """The object through `fake-dra apply`'s checks (a generateName object under a stand-in name)."""
    probe = copy.deepcopy(obj)
    meta = probe.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generated_name(str(meta.pop("generateName")))
    plan(store, [(where, 1, probe)], namespace=namespace, explicit_namespace=True)


def create_all(store: ObjectStore, objs: Iterator[dict[str, Any]], namespace: str, where: str) -> list[dict[str, Any]]:
    out = []
    with store.batch():
        for n, obj in enumerate(objs):
            kind = for_object(obj.get("apiVersion"), obj.get("kind"), where)
            if n == 0:
                _checked(store, obj, namespace, where)
            if kind.namespaced:
                obj.setdefault("metadata", {})["namespace"] = namespace
            out.append(store.create(kind.plural, obj))
    return out


def _node(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if not meta.get("name"):
        meta["name"] = generated_name(str(meta.pop("generateName", "node-")))
    meta.setdefault("labels", {})["kubernetes.io/hostname"] = meta["name"]
    status = obj.setdefault("status", {})
    if status.get("capacity") and not status.get("allocatable"):
        status["allocatable"] = dict(status["capacity"])
    return obj


def driver_slices(op: Mapping[str, Any], workload: Workload, nodes: list[str]) -> Iterator[dict[str, Any]]:
    """createResourceDriver's slices (README.md: dra.go createResourceDriver)."""
    driver, pattern = str(op["driverName"]), str(op.get("nodes") or "*")
    per_node = workload.count(op, "maxClaimsPerNode")
    for node in nodes:
        if not fnmatch.fnmatchcase(node, pattern):
            continue
        yield {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": node},
               "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"instance-{i}", "attributes": {
                            "model": {"string": "A100"}, "family": {"string": "GPU"},
                            "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
                            "capacity": {"memory": {"value": "1Gi"}}} for i in range(per_node)]}}


def alloc_claims(store: ObjectStore, namespace: str, features: Features, seed: int = 0) -> int:
    """allocResourceClaims: each unallocated claim of the namespace on the first node of a shuffled
    list where the reference allocator fits it; written as the claim's status (no reservedFor)."""
    nodes = [n["metadata"]["name"] for n in store.list("nodes")]
    view = ClusterView(features=features)
    view.replace_classes(store.list("deviceclasses"))
    for n in store.list("nodes"):
        view.set_node(n["metadata"]["name"], (n["metadata"].get("labels") or {}))
    view.replace_slices(store.list("resourceslices"))
    claims = store.list("resourceclaims", all_namespaces=True)
    view.replace_claims(claims)
    rng = random.Random(seed)
    done = 0
    with store.batch():
        for claim in claims:
            if claim["metadata"].get("namespace") != namespace or (claim.get("status") or {}).get("allocation"):
                continue
            order = list(nodes)
            rng.shuffle(order)
            for node in order:
                try:
                    (allocation,) = view.allocator(node).allocate([claim], explain=False, commit=False)
                except AllocationError:
                    continue
                stored = store.update("resourceclaims", {**claim, "status": {"allocation": allocation}}, exclusive=True)
                view.set_claim(stored)
                done += 1
                break
            else:
                raise InputError(f"allocResourceClaims: claim {namespace}/{claim['metadata']['name']} fits on no node")
    return done


def set_up(store: ObjectStore, workload: Workload, *, measure: bool = True) -> Setup:
    """Run the workload's ops up to (not including) the measured pods: those are left in
    `Setup.measured` for the caller to create when it starts measuring. Unmeasured pods are
    created (`Setup.init_pods`): the caller schedules them first, as scheduler_perf waits for them."""
    setup = Setup()
    features = features_for(workload)
    for op in workload.ops:
        code = op.get("opcode")
        namespace = str(op.get("namespace") or "default")
        if code == "createNodes":
            count = workload.count(op)
            template = workload.template(op["nodeTemplatePath"]) if op.get("nodeTemplatePath") else None
            objs = rendered(workload, template, count, {}) if template else (copy.deepcopy(DEFAULT_NODE) for _ in range(count))
            made = create_all(store, (_node(o) for o in objs), namespace, f"{workload.label} createNodes")
            setup.nodes += [o["metadata"]["name"] for o in made]
        elif code == "createAny":
            params = {k: workload.param(v) for k, v in (op.get("templateParams") or {}).items()}
            template = workload.template(op["templatePath"])
            create_all(store, rendered(workload, template, workload.count(op), params), namespace, str(template))
        elif code == "createResourceDriver":
            create_all(store, driver_slices(op, workload, setup.nodes), namespace, f"{workload.label} createResourceDriver")
        elif code == "allocResourceClaims":
            alloc_claims(store, namespace, features)
        elif code == "createPods":
            template = str(workload.template(op["podTemplatePath"])) if op.get("podTemplatePath") else ""
            count = workload.count(op)
            if op.get("collectMetrics") and measure:
                setup.measured.append((namespace, count, op, template))
                setup.steady = bool(workload.param(op.get("steadyStateParam", False)))
            else:
                create_all(store, rendered(workload, Path(template), count, {}), namespace, template)
                setup.init_pods += count
        elif code in ("startCollectingMetrics", "stopCollectingMetrics"):
            continue
        else:
            raise InputError(f"{workload.label}: opcode {code!r} is not modelled")
    return setup


def create_measured(store: ObjectStore, workload: Workload, setup: Setup, pods: int | None = None) -> int:
    """Create the measured pods (`pods` overrides the count, for steady-state workloads)."""
    made = 0
    for namespace, count, _, template in setup.measured:
        n = count if pods is None else pods
        create_all(store, rendered(workload, Path(template), n, {}), namespace, template)
        made += n
    return made


def free_for_pods(store: ObjectStore, setup: Setup) -> int:
    """How many measured pods fit: free devices over the devices each pod's claim template asks
    (ExactCount counts; a pod without a template counts one)."""
    total = sum(len((s.get("spec") or {}).get("devices") or ()) for s in store.iter("resourceslices"))
    held = sum(len((((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or ())
               for c in store.iter("resourceclaims", all_namespaces=True))
    per_pod = 1
    for namespace, _, _, _ in setup.measured:
        for t in store.list("resourceclaimtemplates", namespace):
            requests = (((t.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
            per_pod = max(per_pod, sum(int((r.get("exactly") or {}).get("count") or 1) for r in requests))
    return max(0, (total - held) // per_pod)
