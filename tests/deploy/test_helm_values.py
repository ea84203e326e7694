"""Values the chart refuses, with a message and never a template error, and featureGates as the
chart passes them: only gates of the cluster's Kubernetes release (1.38 removed
DynamicResourceAllocation), in one FAKE_DRA_FEATURES value as NVIDIA's chart passes its featureGates.
Rendered offline by Helm's own library (tests/deploy/helm.py); skipped, saying why, without it."""

from __future__ import annotations

import pytest
import yaml

from driver.features import KNOWN_GATES, gates_of, parse_features, parse_gates

from .helm import CHART, RenderError, needs_helm, render
from .kustomize import by_kind, plugin_env, pod_template

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())


def _errors(values: dict, **kw) -> str:
    with pytest.raises(RenderError) as info:
        render(values, **kw)
    return str(info.value)


# -- refusals: messages, never template errors ------------------------------------------------------


def _not_a_template_error(msg: str) -> None:
    for symptom in ("nil pointer", "error calling", "wrong type for value", "can't evaluate field", "<no value>"):
        assert symptom not in msg, msg


@needs_helm
def test_every_top_level_value_null_fails_with_a_message() -> None:
    msg = _errors({k: None for k in VALUES})
    _not_a_template_error(msg)
    assert "values don't meet the specifications of the schema" in msg
    for k in ("image", "kubeletPlugin", "fleet", "personality"):
        assert f"'{k}'" in msg, msg


@needs_helm
@pytest.mark.parametrize("top", sorted(VALUES))
def test_one_top_level_value_null_is_named(top: str) -> None:
    msg = _errors({top: None})
    _not_a_template_error(msg)
    assert f"missing property '{top}'" in msg


@needs_helm
@pytest.mark.parametrize(("values", "named"), [
    ({"personalty": "nvidia"}, "additional properties 'personalty' not allowed"),
    ({"image": {"repo": "x"}}, "at '/image': additional properties 'repo' not allowed"),
    ({"metrics": {"enabled": True, "prot": 9100}}, "at '/metrics': additional properties 'prot' not allowed"),
    ({"metrics": {"port": "9090"}}, "at '/metrics/port': got string, want integer"),
    ({"personality": "nvida"}, "at '/personality'"),
    ({"profile": {"default": "dgx-a10"}}, "at '/profile/default'"),
    ({"featureGates": {"DRAPartitionableDevice": True}}, "invalid propertyName 'DRAPartitionableDevice'"),
    ({"featureGates": {"DRAPartitionableDevices": "yes"}}, "at '/featureGates/DRAPartitionableDevices': got string, want boolean"),
    ({"kubernetesVersion": "1.39"}, "at '/kubernetesVersion'"),
    ({"fleet": {"spec": {"nodeGroups": [{"name": "a", "count": 1, "profile": "demo", "fidelty": "whole"}]}}},
     "additional properties 'fidelty' not allowed"),
    ({"kubeletPlugin": {"updateStrategy": {"type": "Rolling"}}}, "at '/kubeletPlugin/updateStrategy/type'"),
    ({"driverConfig": {"nvidai": {}}}, "at '/driverConfig': additional properties 'nvidai' not allowed"),
])
def test_schema_refuses_misspelt_values(values: dict, named: str) -> None:
    msg = _errors(values)
    _not_a_template_error(msg)
    assert named in msg, msg


@needs_helm
def test_default_namespace_is_refused_unless_allowed() -> None:
    msg = _errors({}, namespace="default")
    _not_a_template_error(msg)
    assert 'namespace "default"' in msg and "allowDefaultNamespace=true" in msg and "--create-namespace" in msg
    assert _errors({"namespaceOverride": "default"}, namespace="fake-dra")
    docs = render({"allowDefaultNamespace": True}, namespace="default")
    assert {d["metadata"].get("namespace") for d in docs} == {None, "default"}
    # A release namespace of default with the objects elsewhere is fine.
    docs = render({"namespaceOverride": "fake-dra"}, namespace="default")
    assert {d["metadata"].get("namespace") for d in docs} == {None, "fake-dra"}


@needs_helm
def test_labelled_nodes_only_and_a_required_affinity_conflict() -> None:
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "x", "operator": "Exists"}]}]}}}
    msg = _errors({"profile": {"labelledNodesOnly": True}, "kubeletPlugin": {"affinity": required}})
    assert "profile.labelledNodesOnly" in msg and "keep one of them" in msg
    spec = pod_template(render({"kubeletPlugin": {"affinity": required}}))["spec"]
    assert spec["affinity"] == required


# -- featureGates: as NVIDIA's chart passes them, and only the release's --------------------------


@needs_helm
def test_feature_gates_reach_the_plugin_and_the_fleet_as_one_variable() -> None:
    gates = {"DRAPartitionableDevices": True, "DRADeviceCompatibilityGroups": False, "DRAConsumableCapacity": True}
    docs = render({"featureGates": gates, "fleet": {"enabled": True}})
    value = plugin_env(docs)["FAKE_DRA_FEATURES"]
    assert value == "DRAConsumableCapacity=true,DRADeviceCompatibilityGroups=false,DRAPartitionableDevices=true"
    assert parse_gates(value) == gates
    assert parse_features(value).compatibility_groups is False  # the plugin's own parser
    (fleet,) = by_kind(docs)["Deployment"]
    env = {e["name"]: e.get("value") for e in fleet["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["FAKE_DRA_FEATURES"] == value
    assert "FAKE_DRA_FEATURES" not in plugin_env(render({}))


@needs_helm
def test_a_gate_the_release_lacks_is_refused() -> None:
    """1.38 removed DynamicResourceAllocation (kubernetes/kubernetes#141946); 1.36 lacks the groups gate."""
    msg = _errors({"kubernetesVersion": "1.38", "featureGates": {"DynamicResourceAllocation": True}})
    _not_a_template_error(msg)
    assert "featureGates.DynamicResourceAllocation: not a feature gate of Kubernetes 1.38" in msg and "#141946" in msg
    assert render({"kubernetesVersion": "1.37", "featureGates": {"DynamicResourceAllocation": True}})
    msg = _errors({"kubernetesVersion": "1.36", "featureGates": {"DRADeviceCompatibilityGroups": True}})
    assert "featureGates.DRADeviceCompatibilityGroups: not a feature gate of Kubernetes 1.36" in msg


@needs_helm
def test_a_locked_gate_set_the_other_way_is_refused() -> None:
    msg = _errors({"featureGates": {"DRAPrioritizedList": False}})
    assert "featureGates.DRAPrioritizedList: locked to true in Kubernetes 1.37" in msg
    msg = _errors({"kubernetesVersion": "1.38", "featureGates": {"DRADeviceTaints": False}})
    assert "locked to true in Kubernetes 1.38" in msg
    assert render({"kubernetesVersion": "1.37", "featureGates": {"DRADeviceTaints": False}})


@needs_helm
def test_offline_renders_judge_gates_by_the_target_release() -> None:
    """Offline, Helm's .Capabilities is its own default (v1.36.0), not a cluster: the 1.37 table applies."""
    assert render({"featureGates": {"DRADeviceCompatibilityGroups": True}})


@needs_helm
@pytest.mark.parametrize("version", ["1.36", "1.37", "1.38"])
def test_every_gate_of_a_release_is_accepted(version: str) -> None:
    gates = {g: s.default for g, s in gates_of(version).items()}
    value = plugin_env(render({"kubernetesVersion": version, "featureGates": gates}))["FAKE_DRA_FEATURES"]
    assert parse_gates(value) == gates


def test_schema_knows_every_gate_the_plugin_accepts() -> None:
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    assert schema["properties"]["featureGates"]["propertyNames"]["enum"] == list(KNOWN_GATES)
