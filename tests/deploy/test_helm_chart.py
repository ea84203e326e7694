"""The Helm chart deploy/helm/fake-dra, rendered and linted offline by Helm's own library.

`helm install fake-dra deploy/helm/fake-dra --namespace fake-dra --create-namespace` is the other
way in beside `kubectl apply -k`, so the chart must install the same objects as the overlays
(presets in chart_presets.yaml), every render must pass the Kubernetes 1.37 strict schemas, and
bad values must be refused with a message naming them, never with a template error. Helm itself
comes from the helm-python-sdk wheel (tests/deploy/helm.py); where it is unavailable these tests skip
and say why, except the ones that need no Helm (generated files, locks).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from driver import schema as project_schema
from driver.features import Features

from . import helm
from .helm import CHART, HELM_LABELS, key, needs_helm, render, without_helm_labels
from .kustomize import OVERLAYS, ROOT, by_kind, overlay_names, plugin_env, pod_template
from .kustomize import render as kustomize_render

K8S = "1.37"
PRESETS = yaml.safe_load((Path(__file__).parent / "chart_presets.yaml").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
# Values a user would set, beyond the presets: every render of these must be valid too.
USER_VALUES = {
    "personality-sriov": {"personality": "sriov"},
    "nvidia-metrics-gates": {"personality": "nvidia", "metrics": {"enabled": True, "port": 9400},
                             "featureGates": {"DRAListTypeAttributes": True}},
    "fleet-nvidia-groups": {"fleet": {"enabled": True, "spec": {"nodeGroups": [
        {"name": "gb200", "count": 4, "profile": "dgx-a100", "personality": "nvidia"},
        {"name": "nic", "count": 2, "profile": "no-gpu"}]}}},
    "driver-config": {"driverConfig": {"slices": {"singleMode": "mig"}}},
    "registry-image": {"image": {"repository": "registry.example.com/fake-dra", "tag": ""},
                       "imagePullSecrets": [{"name": "pull"}], "serviceAccount": {"annotations": {"a": "b"}}},
    "scheduling": {"kubeletPlugin": {"tolerations": [{"operator": "Exists"}], "nodeSelector": {"gpu": "fake"},
                                     "podAnnotations": {"team": "dra"},
                                     "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                                         {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}},
                   "profile": {"labelledNodesOnly": True, "default": "h100"}},
    "1.38-gates": {"kubernetesVersion": "1.38", "featureGates": {"DRADeviceTaints": True, "DRAOptionalNodeOperations": True}},
    "no-policies-no-probe": {"admissionPolicy": {"enabled": False}, "kubeletPlugin": {"livenessProbe": {"enabled": False}}},
    "names": {"fullnameOverride": "dra-sim", "nameOverride": "sim", "namespaceOverride": "sim-system"},
}


# -- generated parts and locks: no Helm needed ------------------------------------------------------


def test_chart_files_are_what_hack_gen_chart_writes() -> None:
    """gates.json, drivers.json, the DeviceClasses, the schema's enums, Chart.yaml's version and the
    values table of docs/deploy.md all come from the project's tables."""
    done = subprocess.run([sys.executable, str(ROOT / "hack" / "gen_chart.py"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr + "(run hack/gen_chart.py)"


def test_chart_version_is_the_package_version() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert meta["version"] == meta["appVersion"] == version


def test_every_value_is_in_the_docs_table() -> None:
    table = (ROOT / "docs" / "deploy.md").read_text()
    for path in _leaf_paths(VALUES):
        documented = f"| `{path}` |" in table or f"| `{path}." in table  # itself, or each of its keys
        assert documented or any(f"| `{p}` |" in table for p in _prefixes(path)), path


def _leaf_paths(values: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in values.items():
        path = f"{prefix}.{k}" if prefix else k
        out += _leaf_paths(v, path) if isinstance(v, dict) and v else [path]
    return out


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_helm_python_sdk_is_a_test_dependency_only() -> None:
    """The runtime lock (and so the image) never carries it; the test lock pins it; driver/ never imports it."""
    runtime = (ROOT / "requirements.lock").read_text()
    assert not re.search(r"^helm-python-sdk==", runtime, re.M)
    assert re.search(r"^helm-python-sdk==\S+", (ROOT / "requirements-test.lock").read_text(), re.M)
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(r.startswith("helm-python-sdk") for r in test_extra)
    for path in (ROOT / "driver").rglob("*.py"):
        assert "helm_python" not in path.read_text(), path


# -- the overlays, object for object ----------------------------------------------------------------


def test_every_overlay_has_a_preset() -> None:
    assert set(PRESETS) == set(overlay_names()), "add the overlay's values to tests/deploy/chart_presets.yaml"
    assert all(p["why"] for p in PRESETS.values())


@needs_helm
@pytest.mark.parametrize("overlay", sorted(PRESETS))
def test_preset_renders_the_overlays_objects(overlay: str) -> None:
    chart = {key(d): without_helm_labels(d) for d in render(PRESETS[overlay]["values"])}
    kustomize = {key(d): without_helm_labels(d) for d in kustomize_render(OVERLAYS / overlay)}
    assert sorted(chart) == sorted(kustomize), f"{overlay}: objects differ"
    for k in kustomize:
        assert chart[k] == kustomize[k], f"{overlay}: {k} differs"


@needs_helm
def test_the_comparison_fails_on_a_difference() -> None:
    """Guard for the test above: a changed value must show up as a different object."""
    chart = {key(d): without_helm_labels(d) for d in render({"createNamespace": True, "profile": {"default": "h100"}})}
    kustomize = {key(d): without_helm_labels(d) for d in kustomize_render(OVERLAYS / "default")}
    assert chart.keys() == kustomize.keys()
    assert chart[("DaemonSet", "fake-dra", "fake-dra-kubelet-plugin")] != kustomize[("DaemonSet", "fake-dra", "fake-dra-kubelet-plugin")]


@needs_helm
def test_every_chart_object_carries_helms_labels() -> None:
    for doc in render(PRESETS["kwok-fleet"]["values"]):
        if doc["kind"] == "DeviceClass":
            continue  # the personality's classes verbatim (NVIDIA's carry no labels at all)
        assert set(HELM_LABELS) <= set(doc["metadata"]["labels"]), key(doc)


# -- every render is valid --------------------------------------------------------------------------


def _all_renders() -> list[tuple[str, dict]]:
    return [(f"preset-{k}", p["values"]) for k, p in sorted(PRESETS.items())] + sorted(USER_VALUES.items())


@needs_helm
@pytest.mark.parametrize(("name", "values"), _all_renders(), ids=[n for n, _ in _all_renders()])
def test_render_validates_strictly(name: str, values: dict) -> None:
    """Kubernetes 1.37's strict schemas (kubernetes-validate) for every object; the project's own
    validator (driver.schema, what `fake-dra apply` checks) for the kinds it knows."""
    docs = render(values)
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S, strict=True)
        if doc["kind"] in project_schema.served():
            project_schema.validate(doc, doc["kind"], Features(), where=f"{name}: {doc['kind']}")


@needs_helm
def test_strict_validation_catches_a_bad_render() -> None:
    (ds,) = by_kind(render({}))["DaemonSet"]
    ds["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, K8S, strict=True)


@needs_helm
@pytest.mark.parametrize(("name", "values"), _all_renders(), ids=[n for n, _ in _all_renders()])
def test_lint_strict(name: str, values: dict) -> None:
    report = helm.helm_python.lint(str(CHART), values, strict=True, namespace="fake-dra", kube_version="v1.37.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not problems and not report["errors"], (problems, report["errors"])


@needs_helm
def test_lint_reports_a_broken_value() -> None:
    report = helm.helm_python.lint(str(CHART), {"personalty": "nvidia"}, strict=True, namespace="fake-dra")
    assert report["errors"] and "personalty" in " ".join(report["errors"])


# -- personality, profile, driver config, fleet, API version ----------------------------------------


@needs_helm
@pytest.mark.parametrize("name", ["fake-dra", "nvidia", "sriov"])
def test_personality_installs_its_device_classes_and_names_its_drivers(name: str) -> None:
    from driver.personality import personality_named

    docs = render({"personality": name})
    drivers = personality_named(name).drivers()
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DeviceClass"}
    assert classes == {dc["metadata"]["name"]: dc for p in drivers for dc in p.device_classes()}
    assert plugin_env(docs).get("FAKE_DRA_PERSONALITY") == (None if name == "fake-dra" else name)
    (role,) = [r for r in by_kind(docs)["ClusterRole"]]
    (rule,) = [r for r in role["rules"] if r["resources"] == ["resourceclaims/driver"]]
    assert rule["resourceNames"] == [p.name for p in drivers]
    policy = next(p for p in by_kind(docs)["ValidatingAdmissionPolicy"] if p["metadata"]["name"].endswith("claim-status-own-node"))
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["drivers"] == "[" + ", ".join(f"'{p.name}'" for p in drivers) + "]"


@needs_helm
def test_profile_values_reach_the_init_container_and_the_affinity() -> None:
    spec = pod_template(render({"profile": {"default": "h100", "nodeLabel": "example.com/hw", "labelledNodesOnly": True}}))["spec"]
    args = spec["initContainers"][0]["args"]
    assert "--default-profile=h100" in args and "--label=example.com/hw" in args
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "example.com/hw", "operator": "Exists"}]}


@needs_helm
def test_driver_config_is_mounted_where_the_plugin_reads_it(tmp_path: Path) -> None:
    from driver.commands.common import load_driver_config

    config = {"nvidia": {"featureGates": {"DynamicMIG": True}}, "slices": {"singleMode": "mig"}}
    docs = render({"personality": "nvidia", "driverConfig": config})
    (cm,) = [d for d in by_kind(docs)["ConfigMap"] if d["metadata"]["name"].endswith("driver-config")]
    path = plugin_env(docs)["FAKE_DRA_DRIVER_CONFIG"]
    (tmp_path / "c.yaml").write_text(cm["data"][Path(path).name])
    assert load_driver_config(str(tmp_path / "c.yaml")) == config
    plugin = next(c for c in pod_template(docs)["spec"]["containers"] if c["name"] == "plugin")
    assert any(m["mountPath"] == str(Path(path).parent) and m["name"] == "driver-config" for m in plugin["volumeMounts"])
    assert "driverConfig" not in yaml.safe_dump(render({}))  # nothing without it


@needs_helm
def test_fleet_file_is_one_fake_dra_fleet_reads() -> None:
    from driver.fleet.spec import parse_fleet

    values = USER_VALUES["fleet-nvidia-groups"]
    docs = render(values)
    (cm,) = [d for d in by_kind(docs)["ConfigMap"] if d["metadata"]["name"] == "fake-dra-fleet"]
    fleet = parse_fleet(yaml.safe_load(cm["data"]["fleet.yaml"]), "fleet.yaml")
    assert [g.name for g in fleet.groups] == ["gb200", "nic"]
    policy = next(p for p in by_kind(docs)["ValidatingAdmissionPolicy"] if p["metadata"]["name"].endswith("fleet-owns-its-nodes"))
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["drivers"] == "['gpu.nvidia.com', 'sriovnetwork.k8snetworkplumbingwg.io', 'fake-dra.example.com']"
    assert "Deployment" not in by_kind(render({}))


@needs_helm
def test_resource_api_version_overrides_the_device_classes() -> None:
    docs = render({"resourceApiVersion": "resource.k8s.io/v1beta2"})
    assert {d["apiVersion"] for d in docs if d["kind"] == "DeviceClass"} == {"resource.k8s.io/v1beta2"}
    assert {d["apiVersion"] for d in render({}) if d["kind"] == "DeviceClass"} == {"resource.k8s.io/v1"}


@needs_helm
def test_image_tag_defaults_to_the_app_version() -> None:
    spec = pod_template(render({"image": {"repository": "registry.example.com/fake-dra", "tag": ""}}))["spec"]
    version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert {c["image"] for c in spec["containers"] + spec["initContainers"]} == {f"registry.example.com/fake-dra:{version}"}


@needs_helm
def test_metrics_port_is_one_number_everywhere() -> None:
    docs = render({"metrics": {"enabled": True, "port": 9400}})
    template = pod_template(docs)
    assert plugin_env(docs)["FAKE_DRA_METRICS_ADDR"] == "0.0.0.0:9400"
    assert template["metadata"]["annotations"]["prometheus.io/port"] == "9400"
    (svc,) = by_kind(docs)["Service"]
    assert svc["spec"]["ports"][0]["port"] == 9400
    assert "Service" not in by_kind(render({"metrics": {"enabled": True, "service": False}}))


def test_without_the_wheel_the_chart_tests_skip_and_say_why() -> None:
    """On a platform without a helm-python-sdk wheel the import fails: the chart tests skip, naming why."""
    code = ("import sys; sys.modules['helm_python'] = None\n"
            "from tests.deploy import helm\n"
            "mark = helm.needs_helm.mark\n"
            "print(mark.args[0], '|', mark.kwargs['reason'])")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    skip, reason = done.stdout.strip().split(" | ", 1)
    assert skip == "True" and "helm-python-sdk is not usable here" in reason and "Linux x86_64" in reason
