"""driver.schema agrees with kubernetes-validate (jsonschema over the official strict 1.37 schemas).

kubernetes-validate is the reference but too slow for run time (jsonschema over a 2 MB $ref graph per
object); driver.schema is the fast walker fake-dra uses. Both judge the same corpus of real objects
(what the project renders as each of its personalities, their DeviceClasses, the e2e scenarios'
claims and pods) and thousands of
seeded mutations of them (an unknown key anywhere, a scalar of another type, a key removed): every
verdict must be the same. driver.schema checks a little more (enum values, quantity grammar, int
ranges), which these mutations never touch.
"""

from __future__ import annotations

import copy
import random
from functools import lru_cache
from typing import Any

import jsonschema
import pytest
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

from driver import schema
from driver.discovery.fakesysfs import make_sysfs
from driver.discovery import discover
from driver.e2e.manifests import device_classes, scenario_objects
from driver.e2e.scenario import load_scenarios
from driver.features import Features
from driver.hardware import load_catalog
from driver.personality import personality_named
from driver.slices import render_pool, to_resource_slices

DIR = "kubernetes-json-schema/v1.37.0-local-strict"
GATES_OFF = Features()  # what the official 1.37 schema knows


@lru_cache(maxsize=None)
def reference(kind: str, api_version: str) -> jsonschema.protocols.Validator:
    group_version = api_version.replace(".k8s.io", "").replace("/", "-") if "/" in api_version else api_version
    kind_schema = schema_contents(f"{DIR}/{kind.lower()}-{group_version}.json", "1.37")
    registry = Resource.from_contents(schema_contents(f"{DIR}/_definitions.json", "1.37")) @ Registry()
    return jsonschema.validators.Draft202012Validator(kind_schema, registry=Resource.from_contents(kind_schema) @ registry)


@lru_cache(maxsize=1)
def corpus() -> tuple[dict[str, Any], ...]:
    import tempfile
    from pathlib import Path

    objects: list[dict[str, Any]] = list(device_classes())
    sysfs = Path(tempfile.mkdtemp(prefix="fdra-diff-")) / "sys"
    make_sysfs("demo", sysfs)
    inventory = discover(sysfs, load_catalog())
    for features in (Features(), Features(compatibility_groups=False), Features(partitionable_devices=False)):
        objects += to_resource_slices(render_pool(inventory, features, node_name="node-1", driver_name="fake-dra.example.com"))
    for name in ("nvidia", "sriov"):  # the other drivers the project presents the hardware as
        for profile in personality_named(name).drivers():
            objects += profile.device_classes()
            objects += to_resource_slices(profile.render(inventory, Features(), node_name="node-1"))
    for scenario in load_scenarios():
        objects += [o for o in scenario_objects(scenario) if o.get("kind") in ("ResourceClaim", "Pod")]
    objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"type": "kwok"}},
                    "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
                    "status": {"allocatable": {"cpu": "32", "memory": "256Gi"}}})
    return tuple(objects)


def verdicts(obj: dict[str, Any]) -> tuple[bool, bool]:
    ours = not schema.errors(obj, obj["kind"], GATES_OFF)
    theirs = reference(obj["kind"], obj["apiVersion"]).is_valid(obj)
    return ours, theirs


def _containers(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every dict and list inside `value` with its path (the top level's apiVersion/kind excluded)."""
    out: list[tuple[tuple, Any]] = []
    if isinstance(value, dict):
        out.append((path, value))
        for k, v in value.items():
            out += _containers(v, path + (k,))
    elif isinstance(value, list):
        out.append((path, value))
        for i, v in enumerate(value):
            out += _containers(v, path + (i,))
    return out


def _mutate(obj: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str]:
    obj = copy.deepcopy(obj)
    dicts = [(p, d) for p, d in _containers(obj) if isinstance(d, dict)]
    how = rng.choice(("add", "retype", "drop"))
    path, target = rng.choice(dicts)
    if how == "add":
        target["zzUnknownField"] = rng.choice([1, True, {"a": "b"}, [1]])  # not a malformed quantity string: only driver.schema parses those
        return obj, f"add zzUnknownField at {path}"
    keys = [k for k in target if path or k not in ("apiVersion", "kind")]
    if not keys:
        return obj, "nothing"
    key = rng.choice(keys)
    if how == "drop":
        del target[key]
        return obj, f"drop {path + (key,)}"
    value = target[key]
    if isinstance(value, bool):
        target[key] = "true"
    elif isinstance(value, int):
        target[key] = str(value) + "x"
    elif isinstance(value, str):
        target[key] = rng.choice([7, True, ["x"]])
    elif isinstance(value, list):
        target[key] = {"a": value}
    elif isinstance(value, dict):
        target[key] = [value]
    return obj, f"retype {path + (key,)}"


def test_the_corpus_is_valid_for_both():
    assert len(corpus()) > 30
    for obj in corpus():
        assert verdicts(obj) == (True, True), (obj["kind"], obj["metadata"]["name"])


@pytest.mark.parametrize("seed", range(4))
def test_mutations_get_the_same_verdict(seed):
    rng = random.Random(seed)
    rejected = 0
    for n in range(400):
        base = rng.choice(corpus())
        mutated, what = _mutate(base, rng)
        ours, theirs = verdicts(mutated)
        assert ours == theirs, f"{base['kind']} {base['metadata']['name']}: {what}: driver.schema={ours}, " \
                               f"kubernetes-validate={theirs}: {schema.errors(mutated, mutated['kind'], GATES_OFF)}"
        rejected += not ours
    assert rejected > 100  # the mutations do break objects: both sides really judged
