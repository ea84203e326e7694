"""Scenario data files: the e2e harness's test cases, as YAML with a one-line reason each.

A scenario is a node profile (fake sysfs), cluster feature gates and a list of steps. Each step is
one action (what a user, the scheduler or an operator does) with an optional `expect` block (what
the scheduler and the kubelet plugin must do in answer). Scenarios are data so driver authors can
add cases without reading the harness, and so the same file drives the local and the kind backend.

Loading validates everything up front and names file, step and field in each error: a typo in a
scenario must never turn into a silently skipped check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from driver.errors import InputError
from driver.features import Features, parse_features
from driver.fsutil import read_text_file
from driver.slices.names import is_dns_label
from driver.yamlio import load_one


# action -> (required keys, optional keys) besides `action`, `why` and `expect`.
ACTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # A ResourceClaim (or, with podgroup, a claim owned by a PodGroup). Allocation happens when the
    # first pod (or PodGroup member) needs it, as with WaitForFirstConsumer.
    "claim": (frozenset({"name", "requests"}), frozenset({"constraints", "config"})),
    # A pod that uses claims. The scheduler allocates them, then the kubelet prepares them.
    # scheduler: "skewed" allocates as a scheduler that does not know compatibility groups.
    "pod": (frozenset({"name"}), frozenset({"claims", "podgroup", "scheduler"})),
    "delete-pod": (frozenset({"name"}), frozenset()),
    "delete-claim": (frozenset({"name"}), frozenset()),
    # A PodGroup (scheduling.k8s.io/v1beta1) whose claim is shared by all its pods (KEP-5729).
    "podgroup": (frozenset({"name", "claim"}), frozenset()),
    # The group ends: its pods are gone, the claim is unprepared and deallocated.
    "delete-podgroup": (frozenset({"name"}), frozenset()),
    # Feature gates change in the cluster (apiserver, scheduler, and the plugin re-renders).
    "gates": (frozenset({"set"}), frozenset()),
    # A simulated hardware fault on the device with this name (or clear it).
    "fault": (frozenset({"device"}), frozenset({"message", "clear"})),
    "restart-plugin": (frozenset(), frozenset({"signal"})),
    # A Node is deleted (scenarios with `nodes:`): its slices go with it (owner references), its pods
    # are deleted (pod garbage collection) and their claims released (resourceclaim controller).
    "delete-node": (frozenset({"name"}), frozenset()),
    # Only checks expectations (e.g. health) against the current state.
    "observe": (frozenset(), frozenset()),
}

EXPECT_KEYS = frozenset(
    {
        "scheduled",  # bool: every claim of the pod allocated and the pod bound to the node
        "unschedulable",  # substring of the scheduler's reason
        "devices",  # {count, type, profile, same_parent, distinct_parents}
        "prepared",  # bool: the kubelet plugin prepared every claim of the pod
        "prepare_error",  # substring of the plugin's per-claim error
        "cdi_devices",  # int: number of CDI device IDs handed to the runtime
        "env",  # {VAR: value} that the container sees (from the CDI spec)
        "metadata",  # device metadata files the container sees: {files, devices, type, network, generation}
        "health",  # {device name: HEALTHY|UNHEALTHY|UNKNOWN}
        "prepare_calls_same",  # bool: repeated prepares (several pods) answered identically
        "released",  # bool: the claim's devices are no longer allocated nor prepared
        "counters",  # {counter-set substring: {counter: remaining quantity}}
        "node",  # str: the node the pod landed on (scenarios with `nodes:`)
        "node_slices",  # int: ResourceSlices left for the step's node (delete-node)
    }
)
# What a scenario with several nodes may do: scheduling across nodes and losing nodes. Gate flips,
# faults, plugin restarts and PodGroups stay single-node scenarios.
MULTI_NODE_ACTIONS = frozenset({"claim", "pod", "delete-pod", "delete-claim", "delete-node", "observe"})
NODE_KEYS = frozenset({"name", "profile", "plugin"})
DEVICE_KEYS = frozenset({"count", "type", "profile", "same_parent", "distinct_parents", "same_parent_as"})
METADATA_KEYS = frozenset({"files", "devices", "type", "network", "generation"})
SIGNALS = frozenset({"TERM", "KILL"})


@dataclass(frozen=True)
class Step:
    index: int  # 1-based position in the scenario, used in reports
    action: str
    args: Mapping[str, Any]
    expect: Mapping[str, Any] = field(default_factory=dict)
    why: str = ""

    @property
    def label(self) -> str:
        target = self.args.get("name") or self.args.get("device") or ""
        return f"{self.index}. {self.action} {target}".rstrip()


@dataclass(frozen=True)
class ScenarioNode:
    """A node of a multi-node scenario. `plugin: false` makes it kubelet-less, like a kwok node: its
    slices are published as a fleet publishes them, and nothing prepares claims there."""

    name: str
    profile: str
    plugin: bool = True


@dataclass(frozen=True)
class Scenario:
    name: str
    reason: str
    profile: str
    features: Features
    steps: tuple[Step, ...]
    path: str = ""
    kind: bool = True  # can run on the kind backend (False: local-only, e.g. needs valueFrom)
    personality: str = "fake-dra"  # driver.personality name: which driver(s) the node is presented as
    driver_config: Mapping[str, Any] = field(default_factory=dict)  # the plugin's driver config (nvidia: ...)
    gpus: int | None = None  # keep only the profile's first N GPUs (make-sysfs --gpus)
    nodes: tuple[ScenarioNode, ...] = ()  # empty: one node running the plugin, with `profile`

    def claim_names(self) -> list[str]:
        return [s.args["name"] for s in self.steps if s.action == "claim"]


def _fail(where: str, msg: str) -> InputError:
    return InputError(f"scenario {where}: {msg}")


def _check_name(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str) or not is_dns_label(value):
        raise _fail(where, f"{what} {value!r} must be a DNS label (lower-case letters, digits, '-')")
    return value


def _parse_step(raw: Any, index: int, where: str) -> Step:
    here = f"{where} step {index}"
    if not isinstance(raw, Mapping):
        raise _fail(here, "must be a mapping with an `action`")
    action = raw.get("action")
    if action not in ACTIONS:
        raise _fail(here, f"unknown action {action!r} (known: {', '.join(sorted(ACTIONS))})")
    required, optional = ACTIONS[action]
    args = {k: v for k, v in raw.items() if k not in ("action", "why", "expect")}
    missing = sorted(required - set(args))
    if missing:
        raise _fail(here, f"action {action} needs {', '.join(missing)}")
    unknown = sorted(set(args) - required - optional)
    if unknown:
        raise _fail(here, f"action {action} does not take {', '.join(unknown)}")
    for key in ("name", "claim", "podgroup"):
        if key in args:
            _check_name(args[key], here, key)
    for claim in args.get("claims", []) or []:
        _check_name(claim, here, "claims entry")
    if action == "claim":
        _check_requests(args["requests"], here)
    if action == "gates":
        if not isinstance(args["set"], Mapping):
            raise _fail(here, "gates.set must map gate names to true/false")
        _features(args["set"], here + " gates.set")
    if action == "restart-plugin" and args.get("signal", "TERM") not in SIGNALS:
        raise _fail(here, f"signal must be one of {', '.join(sorted(SIGNALS))}")
    if action == "pod" and args.get("scheduler", "default") not in ("default", "skewed"):
        raise _fail(here, "scheduler must be 'default' or 'skewed'")
    expect = raw.get("expect") or {}
    if not isinstance(expect, Mapping):
        raise _fail(here, "expect must be a mapping")
    unknown = sorted(set(expect) - EXPECT_KEYS)
    if unknown:
        raise _fail(here, f"unknown expectation {', '.join(unknown)} (known: {', '.join(sorted(EXPECT_KEYS))})")
    metadata = expect.get("metadata")
    if metadata is not None and (not isinstance(metadata, Mapping) or set(metadata) - METADATA_KEYS):
        raise _fail(here, f"expect.metadata takes only {', '.join(sorted(METADATA_KEYS))}")
    devices = expect.get("devices")
    if devices is not None:
        if not isinstance(devices, Mapping) or set(devices) - DEVICE_KEYS:
            raise _fail(here, f"expect.devices takes only {', '.join(sorted(DEVICE_KEYS))}")
    why = raw.get("why", "")
    if not isinstance(why, str):
        raise _fail(here, "why must be a string")
    return Step(index=index, action=action, args=args, expect=dict(expect), why=why)


def _features(gates: Mapping[str, Any], where: str) -> Features:
    for name, value in gates.items():
        if not isinstance(value, bool):
            raise _fail(where, f"gate {name} must be true or false, got {value!r}")
    try:
        return parse_features(",".join(f"{k}={'true' if v else 'false'}" for k, v in gates.items()))
    except InputError as exc:
        raise _fail(where, str(exc).removeprefix("--features: ")) from None


def _check_requests(requests: Any, where: str) -> None:
    if not isinstance(requests, Sequence) or isinstance(requests, str) or not requests:
        raise _fail(where, "claim.requests must be a non-empty list")
    for i, req in enumerate(requests):
        if not isinstance(req, Mapping):
            raise _fail(where, f"claim.requests[{i}] must be a mapping")
        _check_name(req.get("name"), where, f"claim.requests[{i}].name")
        if "class" not in req:
            raise _fail(where, f"claim.requests[{i}] needs a class (gpu, mig, vgpu, timeshare, vf, or a DeviceClass "
                               "name such as mig.nvidia.com)")
        extra = set(req) - {"name", "class", "selector", "count", "capacity"}
        if extra:
            raise _fail(where, f"claim.requests[{i}] does not take {', '.join(sorted(extra))}")


def parse_scenario(data: Any, path: str = "<memory>") -> Scenario:
    """One scenario document -> Scenario, or InputError naming the path and field."""
    if not isinstance(data, Mapping):
        raise _fail(path, "must be a mapping")
    name = _check_name(data.get("name"), path, "name")
    where = f"{name} ({path})"
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
        raise _fail(where, "needs a one-line `reason`")
    unknown = sorted(set(data) - {"name", "reason", "profile", "features", "steps", "kind", "personality",
                                  "driverConfig", "gpus", "nodes"})
    if unknown:
        raise _fail(where, f"unknown field {', '.join(unknown)}")
    gates = data.get("features") or {}
    if not isinstance(gates, Mapping):
        raise _fail(where, "features must map gate names to true/false")
    features = _features(gates, where + " features")
    steps_raw = data.get("steps")
    if not isinstance(steps_raw, Sequence) or isinstance(steps_raw, str) or not steps_raw:
        raise _fail(where, "needs a non-empty list of steps")
    steps = tuple(_parse_step(s, i, where) for i, s in enumerate(steps_raw, start=1))
    _check_references(steps, where)
    personality, driver_config = _personality(data, where)
    gpus = data.get("gpus")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        raise _fail(where, f"gpus must be a non-negative integer (the profile's first N GPUs), got {gpus!r}")
    profile = str(data.get("profile", "demo"))
    nodes = _parse_nodes(data.get("nodes"), profile, where)
    if nodes and (personality != "fake-dra" or driver_config or gpus is not None):
        raise _fail(where, "personality, driverConfig and gpus are for single-node scenarios (not with `nodes:`)")
    for step in steps:
        if nodes and step.action not in MULTI_NODE_ACTIONS:
            raise _fail(f"{where} step {step.index}", f"action {step.action} is for single-node scenarios "
                        f"(with `nodes:` only {', '.join(sorted(MULTI_NODE_ACTIONS))})")
        if not nodes and (step.action == "delete-node" or {"node", "node_slices"} & set(step.expect)):
            raise _fail(f"{where} step {step.index}", "delete-node and the node expectations need `nodes:`")
        names = {n.name for n in nodes}
        for value in (step.args.get("name") if step.action == "delete-node" else None, step.expect.get("node")):
            if value is not None and value not in names:
                raise _fail(f"{where} step {step.index}", f"node {value!r} is not one of the scenario's nodes "
                            f"({', '.join(sorted(names))})")
    return Scenario(
        name=name,
        reason=reason.strip(),
        profile=profile,
        features=features,
        steps=steps,
        path=path,
        kind=bool(data.get("kind", True)),
        personality=personality,
        driver_config=driver_config,
        gpus=gpus,
        nodes=nodes,
    )


def _personality(data: Mapping[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """The scenario's personality and driver config, checked by configuring it (the plugin would)."""
    from driver.personality import DEFAULT_PERSONALITY, personality_named

    name = data.get("personality", DEFAULT_PERSONALITY)
    config = data.get("driverConfig") or {}
    if not isinstance(config, Mapping):
        raise _fail(where, "driverConfig must be a mapping (the sections of a driver config file)")
    try:
        personality_named(name if isinstance(name, str) else repr(name), "personality").drivers(config)
    except InputError as exc:
        raise _fail(where, str(exc)) from None
    return str(name), dict(config)


def _parse_nodes(raw: Any, profile: str, where: str) -> tuple[ScenarioNode, ...]:
    from driver.discovery import profile_named

    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise _fail(where, "nodes must be a non-empty list of {name, profile, plugin}")
    out: list[ScenarioNode] = []
    for i, node in enumerate(raw):
        here = f"{where} nodes[{i}]"
        if not isinstance(node, Mapping):
            raise _fail(here, "must be a mapping with name, profile, plugin")
        extra = sorted(set(node) - NODE_KEYS)
        if extra:
            raise _fail(here, f"does not take {', '.join(extra)} (known: {', '.join(sorted(NODE_KEYS))})")
        name = _check_name(node.get("name"), here, "name")
        if any(n.name == name for n in out):
            raise _fail(here, f"node {name!r} is listed twice")
        try:
            node_profile = profile_named(str(node.get("profile", profile))).name
        except InputError as exc:
            raise _fail(here, str(exc)) from None
        plugin = node.get("plugin", True)
        if not isinstance(plugin, bool):
            raise _fail(here, f"plugin must be true or false, got {plugin!r}")
        out.append(ScenarioNode(name, node_profile, plugin))
    return tuple(out)


def _check_references(steps: Sequence[Step], where: str) -> None:
    """Pods may only use claims, and PodGroups, declared by earlier steps."""
    claims: set[str] = set()
    groups: set[str] = set()
    for step in steps:
        here = f"{where} step {step.index}"
        if step.action == "claim":
            claims.add(step.args["name"])
        elif step.action == "podgroup":
            if step.args["claim"] not in claims:
                raise _fail(here, f"podgroup uses claim {step.args['claim']!r} that no earlier step creates")
            groups.add(step.args["name"])
        elif step.action == "pod":
            for claim in step.args.get("claims", []) or []:
                if claim not in claims:
                    raise _fail(here, f"pod uses claim {claim!r} that no earlier step creates")
            group = step.args.get("podgroup")
            if group is not None and group not in groups:
                raise _fail(here, f"pod joins podgroup {group!r} that no earlier step creates")
            if not step.args.get("claims") and group is None:
                raise _fail(here, "pod needs claims or a podgroup")


def bundled_dir() -> Path:
    return Path(str(resources.files("driver.e2e").joinpath("scenarios")))


def load_file(path: str | Path) -> Scenario:
    p = Path(path)
    text = read_text_file(p, "scenario file")
    data = load_one(text, f"scenario file {p}")
    return parse_scenario(data, str(p))


def load_scenarios(directory: str | Path | None = None, names: Sequence[str] = ()) -> list[Scenario]:
    """Every scenario in `directory` (default: the bundled ones), or only `names`, in file order."""
    root = Path(directory) if directory is not None else bundled_dir()
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise InputError(f"--scenarios-dir {root}: {what}")
    files = sorted(root.glob("*.yaml"))
    if not files:
        raise InputError(f"--scenarios-dir {root}: no scenario files (*.yaml) in it")
    scenarios = [load_file(p) for p in files]
    seen: dict[str, str] = {}
    for s in scenarios:
        if s.name in seen:
            raise InputError(f"scenario name {s.name!r} is used by both {seen[s.name]} and {s.path}")
        seen[s.name] = s.path
    if not names:
        return scenarios
    unknown = [n for n in names if n not in seen]
    if unknown:
        raise InputError(f"--scenario: unknown scenario {', '.join(unknown)} (known: {', '.join(sorted(seen))})")
    return [s for s in scenarios if s.name in set(names)]
