"""A conformance corpus for other allocators: scenarios of every bundled profile and personality with
the reference allocator's expected answers, written as plain files any scheduler can read.

Schedulers outside kube-scheduler call or re-implement the DRA allocator (KAI's scheduler once
dropped NVIDIA's DynamicMIG slices, kai-scheduler/KAI-Scheduler#2100; Kueue, Karpenter and Volcano
call or re-implement it). The corpus gives them realistic inputs (what `fake-dra run` publishes for
each hardware profile under each driver personality, with the DeviceClasses those drivers install)
and what Kubernetes 1.37's allocator does with them, as predicted by `driver.allocator` (certified
against upstream's own allocator test table).

Layout (format version 1; `corpus_readme` writes the README that documents it):

    DIR/README.md
    DIR/index.json                      {formatVersion, kubernetes, generator, scenarios: [...]}
    DIR/scenarios/<name>/objects.yaml   DeviceClasses and ResourceSlices (and Nodes), resource.k8s.io/v1
    DIR/scenarios/<name>/claims.yaml    ResourceClaims, allocated one scheduling cycle each, in order
    DIR/scenarios/<name>/expected.yaml  per claim: its status.allocation, or unallocatable with the reason

Each claim is its own pod, in file order, seeing the earlier ones as allocated (the order matters:
a later claim may fail because an earlier one took the device). `read_corpus` and `check_scenario`
read a corpus back and run it through the reference allocator (the project's tests do).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from driver.allocator import allocate_claims
from driver.discovery import PROFILES
from driver.errors import FakeDraError, InputError
from driver.features import Features
from driver.fleet.template import Templates, device_classes, own_driver_name
from driver.personality.registry import PERSONALITIES
from driver.slices.pool import to_resource_slices

FORMAT_VERSION = 1
NODE = "node-1"


@dataclass(frozen=True)
class Scenario:
    name: str
    profile: str
    personality: str
    features: str  # the gates the expectations hold for (`--features` text)
    objects: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    expected: dict[str, dict[str, Any]]


def _claim(name: str, cls: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": cls, "count": count}}]}}}


def claims_for(classes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For every class: one device, then two more (so exhaustion and sharing rules show)."""
    out = []
    for cls in classes:
        name = str(cls["metadata"]["name"])
        short = name.split(".", 1)[0][:40]
        out.append(_claim(f"one-{short}", name, 1))
        out.append(_claim(f"two-{short}", name, 2))
    return out


def expectations(objects: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
                 features: Features) -> dict[str, dict[str, Any]]:
    outcome = allocate_claims([*objects, *claims], node=NODE, features=features, sequential=True,
                              stop_on_failure=False)
    out: dict[str, dict[str, Any]] = {}
    for result in outcome.results:
        name = str(result.claim["metadata"]["name"])
        out[name] = ({"allocation": result.allocation} if result.allocation is not None
                     else {"unallocatable": result.reason})
    return out


def build_scenarios(driver_name: str, profiles: Sequence[str] | None = None,
                    features: Features = Features()) -> Iterator[Scenario | tuple[str, str]]:
    """Every (profile, personality) scenario, or (name, why it was skipped) when the personality
    cannot render the profile."""
    with Templates(driver_name) as templates:
        for profile in profiles or sorted(PROFILES):
            if profile not in PROFILES:
                raise InputError(f"--profile {profile!r}: unknown; known: {', '.join(sorted(PROFILES))}")
            for personality in sorted(PERSONALITIES):
                name = f"{profile}--{personality}"
                try:
                    group = templates.get(profile, "{}", "full", features, personality)
                except FakeDraError as exc:
                    yield name, str(exc)
                    continue
                slices = [s for t in group.drivers for s in to_resource_slices(t.stamp(NODE))]
                if not any(s["spec"].get("devices") for s in slices):
                    yield name, "the personality publishes no device for this hardware"
                    continue
                classes = device_classes([personality], own_driver_name(personality, driver_name) or driver_name)
                node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}}
                objects = [*classes, node, *slices]
                claims = claims_for(classes)
                yield Scenario(name, profile, personality, str(features), objects, claims,
                               expectations(objects, claims, features))


def _dump(objs: Any) -> str:
    return yaml.safe_dump_all(objs, sort_keys=False) if isinstance(objs, list) else yaml.safe_dump(objs, sort_keys=False)


def export(out: Path, *, driver_name: str, generator: str, profiles: Sequence[str] | None = None,
           features: Features = Features(), force: bool = False) -> dict[str, Any]:
    """Write the corpus into `out` (InputError if it holds anything and `force` is not set)."""
    for profile in profiles or ():
        if profile not in PROFILES:
            raise InputError(f"--profile {profile!r}: unknown; known: {', '.join(sorted(PROFILES))}")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise InputError(f"{out}: not empty (give --force to replace the corpus there)")
        if not (out / "index.json").exists():
            raise InputError(f"{out}: not empty and not a corpus (no index.json); refusing to delete it")
        shutil.rmtree(out)
    (out / "scenarios").mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {"formatVersion": FORMAT_VERSION, "kubernetes": "1.37", "generator": generator,
                             "node": NODE, "scenarios": [], "skipped": []}
    for item in build_scenarios(driver_name, profiles, features):
        if isinstance(item, tuple):
            index["skipped"].append({"name": item[0], "reason": item[1]})
            continue
        where = out / "scenarios" / item.name
        where.mkdir()
        (where / "objects.yaml").write_text(_dump(item.objects))
        (where / "claims.yaml").write_text(_dump(item.claims))
        (where / "expected.yaml").write_text(_dump(item.expected))
        index["scenarios"].append({"name": item.name, "profile": item.profile, "personality": item.personality,
                                   "features": item.features, "claims": len(item.claims),
                                   "allocated": sum("allocation" in e for e in item.expected.values())})
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    (out / "README.md").write_text(corpus_readme(index))
    return index


def read_corpus(root: Path) -> tuple[dict[str, Any], list[Scenario]]:
    """A corpus read back: its index and scenarios; InputError naming the file for a broken one."""
    try:
        index = json.loads((root / "index.json").read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{root / 'index.json'}: cannot read the corpus index: {exc}") from None
    if index.get("formatVersion") != FORMAT_VERSION:
        raise InputError(f"{root / 'index.json'}: formatVersion {index.get('formatVersion')!r}; this reader knows {FORMAT_VERSION}")
    out = []
    for entry in index.get("scenarios") or ():
        where = root / "scenarios" / entry["name"]
        try:
            objects = list(yaml.safe_load_all((where / "objects.yaml").read_text()))
            claims = list(yaml.safe_load_all((where / "claims.yaml").read_text()))
            expected = yaml.safe_load((where / "expected.yaml").read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"{where}: {exc}") from None
        out.append(Scenario(entry["name"], entry["profile"], entry["personality"], entry["features"],
                            objects, claims, expected))
    return index, out


def check_scenario(scenario: Scenario) -> list[str]:
    """Differences between a scenario's expectations and the reference allocator's answers now."""
    from driver.features import parse_features

    got = expectations(scenario.objects, scenario.claims, parse_features(scenario.features or None))
    return [f"{scenario.name}: claim {name}: expected {scenario.expected.get(name)!r}, got {got.get(name)!r}"
            for name in sorted(set(got) | set(scenario.expected)) if got.get(name) != scenario.expected.get(name)]


def corpus_readme(index: Mapping[str, Any]) -> str:
    rows = "\n".join(f"| {s['name']} | {s['profile']} | {s['personality']} | {s['claims']} | {s['allocated']} |"
                     for s in index["scenarios"])
    skipped = "\n".join(f"- {s['name']}: {s['reason']}" for s in index.get("skipped") or ()) or "- none"
    return f"""# DRA allocator conformance corpus (format version {index['formatVersion']})

Written by `fake-dra corpus export` ({index['generator']}). Each scenario is a node's ResourceSlices as a
real driver publishes them (one hardware profile under one driver personality), the DeviceClasses that
driver installs, and ResourceClaims, with what Kubernetes {index['kubernetes']}'s structured allocator
(kube-scheduler's DRA plugin) allocates for each, as predicted by fake-dra's reference allocator.

## Layout

- `index.json`: `formatVersion` (this file describes version 1), `kubernetes`, `generator`, `node` (the
  node every scenario allocates on), `scenarios` (name, profile, personality, `features`: the feature
  gates the answers hold for, as `Gate=true,...`, the kube-scheduler feature gates to run with; claim
  and allocated counts) and `skipped` (combinations the personality cannot render, with why).
- `scenarios/<name>/objects.yaml`: DeviceClasses, the Node and the ResourceSlices (`resource.k8s.io/v1`,
  multi-document YAML).
- `scenarios/<name>/claims.yaml`: ResourceClaims. Allocate them **one scheduling cycle each, in file
  order, on node `{index['node']}`**, each cycle seeing the earlier claims' allocations.
- `scenarios/<name>/expected.yaml`: claim name -> `allocation` (the `status.allocation` the allocator
  writes: results in request order, device names, pools, drivers, config) or `unallocatable` (fake-dra's
  reason in words; kube-scheduler only says the pod cannot be scheduled, so compare the fact, not the
  text).

## Using it

An allocator conforms on a scenario when it allocates exactly the claims `expected.yaml` allocates, to
the same devices (kube-scheduler takes the first solution of a depth-first search over pools by
driver/pool name, slices by name and devices in slice order, so the devices are determined), and
leaves the others unallocated. Share IDs of consumable-capacity devices are random upstream (fake-dra
writes deterministic ones): compare them by presence.

## Scenarios

| scenario | profile | personality | claims | allocated |
|---|---|---|---|---|
{rows}

Skipped:
{skipped}
"""
