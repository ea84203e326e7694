"""The kustomize install: every overlay renders with the real kubectl 1.37, validates strictly, and does
what its name says (gates, metrics, which nodes, which image).

`kubectl apply -k deploy/overlays/<name>` is the install, so these tests read exactly what it would
apply; the components are covered through the overlays that use them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from driver.e2e import kind
from driver.features import GATE_FIELDS, KNOWN_GATES, NOT_IN_1_37, parse_features, parse_gates

from .kustomize import (
    BASE,
    COMPONENTS,
    OVERLAYS,
    ROOT,
    by_kind,
    component_names,
    kubectl,
    overlay_names,
    plugin_container,
    plugin_env,
    pod_template,
    render,
)

K8S = "1.37"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "DeviceClass", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
GROUPS, PARTITIONABLE = "DRADeviceCompatibilityGroups", "DRAPartitionableDevices"


def _kind_common_image() -> str:
    m = re.search(r'^IMAGE="\$\{IMAGE:-([^}]+)\}"$', (ROOT / "hack" / "kind-common.sh").read_text(), re.M)
    assert m, "hack/kind-common.sh must set IMAGE=\"${IMAGE:-...}\""
    return m.group(1)


def test_kubectl_is_the_1_37_client() -> None:
    out = subprocess.run([kubectl(), "version", "--client", "-o", "json"], capture_output=True, text=True, check=True)
    version = json.loads(out.stdout)["clientVersion"]
    assert (version["major"], version["minor"]) == ("1", "37"), version


def test_the_expected_overlays_exist() -> None:
    assert set(overlay_names()) >= {"default", "kind", "groups-on", "groups-off", "partitionable-off", "metrics",
                                    "labelled-nodes"}


@pytest.mark.parametrize("overlay", overlay_names())
def test_overlay_renders_and_validates_strictly(overlay: str) -> None:
    docs = render(OVERLAYS / overlay)
    kinds = by_kind(docs)
    assert {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding", "DeviceClass", "DaemonSet"} <= set(kinds)
    for doc in docs:
        kubernetes_validate.validate(doc, K8S, strict=True)
    # kustomize puts the Namespace first, so one `apply -k` creates it before what lives in it.
    assert docs[0]["kind"] == "Namespace"


def test_a_broken_overlay_fails_strict_validation(tmp_path: Path) -> None:
    """Guard for the test above: a patch with a misspelt field renders, and validation must reject it."""
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(BASE, tmp_path)],  # kustomize refuses absolute bases
        "patches": [{"target": {"kind": "DaemonSet"}, "patch": yaml.safe_dump([
            {"op": "add", "path": "/spec/template/spec/containers/0/securityContex", "value": {}}])}],
    }))
    (ds,) = by_kind(render(tmp_path))["DaemonSet"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, K8S, strict=True)


def test_kustomization_lists_every_base_file() -> None:
    listed = yaml.safe_load((BASE / "kustomization.yaml").read_text())["resources"]
    present = sorted(p.name for p in BASE.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == present, "a manifest in deploy/base/ that the kustomization does not list is never applied"


def test_every_component_is_used_by_an_overlay() -> None:
    used = set()
    for name in overlay_names():
        k = yaml.safe_load((OVERLAYS / name / "kustomization.yaml").read_text())
        used |= {Path(c).name for c in k.get("components", [])}
        assert k["resources"] == ["../../base"], f"overlay {name} must build on the base"
    assert set(component_names()) <= used, f"untested components: {sorted(set(component_names()) - used)}"
    for name in component_names():
        assert yaml.safe_load((COMPONENTS / name / "kustomization.yaml").read_text())["kind"] == "Component"


def test_default_overlay_is_the_base_unchanged() -> None:
    assert render(OVERLAYS / "default") == render(BASE)


@pytest.mark.parametrize("overlay", overlay_names())
def test_namespaces(overlay: str) -> None:
    # No namespace transformer: kustomize would give cluster-scoped kinds it does not know
    # (DeviceClass) a namespace; every namespaced object names fake-dra itself.
    for doc in render(OVERLAYS / overlay):
        ns = doc["metadata"].get("namespace")
        if doc["kind"] in CLUSTER_SCOPED:
            assert ns is None, f"{doc['kind']}/{doc['metadata']['name']} is cluster-scoped"
        else:
            assert ns == "fake-dra", f"{doc['kind']}/{doc['metadata']['name']}"


@pytest.mark.parametrize("overlay", overlay_names())
def test_every_container_runs_the_image_kind_load_tags(overlay: str) -> None:
    image = _kind_common_image()
    # Fully qualified: podman prefixes a short name with localhost/, containerd with docker.io/library/.
    assert re.fullmatch(r"(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?)/[a-z0-9._/-]+:[\w.-]+", image), image
    spec = pod_template(render(OVERLAYS / overlay))["spec"]
    for c in spec.get("initContainers", []) + spec["containers"]:
        assert c["image"] == image, f"{overlay}: container {c['name']}"
        assert c["imagePullPolicy"] == "IfNotPresent", "a loaded, never pushed image must not be pulled"


@pytest.mark.parametrize(("overlay", "want"), [
    ("groups-on", {GROUPS: True, PARTITIONABLE: True}),
    ("groups-off", {GROUPS: False, PARTITIONABLE: True}),
    ("partitionable-off", {GROUPS: False, PARTITIONABLE: False}),
    ("kind", {GROUPS: True, PARTITIONABLE: True}),
])
def test_gate_overlays_set_what_their_names_say(overlay: str, want: dict[str, bool]) -> None:
    value = plugin_env(render(OVERLAYS / overlay))["FAKE_DRA_FEATURES"]
    assert parse_gates(value) == want
    features = parse_features(value)  # the plugin's own parser accepts it
    assert features.enabled(GROUPS) is want[GROUPS] and features.enabled(PARTITIONABLE) is want[PARTITIONABLE]


@pytest.mark.parametrize("overlay", ["default", "metrics", "labelled-nodes"])
def test_plain_overlays_leave_gates_to_detection(overlay: str) -> None:
    assert "FAKE_DRA_FEATURES" not in plugin_env(render(OVERLAYS / overlay))


def test_kind_overlay_matches_the_kind_cluster() -> None:
    value = plugin_env(render(OVERLAYS / "kind"))["FAKE_DRA_FEATURES"]
    cluster = yaml.safe_load((ROOT / "hack" / "kind-config.yaml").read_text())["featureGates"]
    for gate, on in parse_gates(value).items():
        assert cluster.get(gate, KNOWN_GATES[gate].default) is on, f"{gate}: plugin {on}, kind cluster differs"
    # The kind e2e backend predicts outcomes with the same gates the plugin is given (an unset
    # KEP-5941 gate publishes as off; the prediction names it off, as a 1.37 scheduler has it).
    assert parse_features(value).as_gates() == kind.CLUSTER_FEATURES.as_gates()


def test_kind_backend_predicts_with_the_kind_clusters_gates() -> None:
    # Every gate that changes what the reference allocator does must have the value the cluster runs
    # with, or the kind backend reports the prediction gap as a scheduler difference.
    cluster = yaml.safe_load((ROOT / "hack" / "kind-config.yaml").read_text())["featureGates"]
    for gate in GATE_FIELDS:
        if gate in NOT_IN_1_37:
            assert gate not in cluster, f"{gate} is not a 1.37 gate: naming it stops the components"
            continue
        assert cluster.get(gate, KNOWN_GATES[gate].default) is kind.CLUSTER_FEATURES.enabled(gate), gate


@pytest.mark.parametrize("overlay", ["kind", "metrics"])
def test_metrics_overlays_expose_the_port_the_plugin_serves(overlay: str) -> None:
    docs = render(OVERLAYS / overlay)
    template = pod_template(docs)
    plugin = plugin_container(docs)
    port = int(plugin_env(docs)["FAKE_DRA_METRICS_ADDR"].rpartition(":")[2])
    (cport,) = [p for p in plugin["ports"] if p["name"] == "metrics"]
    assert cport["containerPort"] == port
    assert template["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    (svc,) = by_kind(docs)["Service"]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics"
    assert svc["spec"]["selector"].items() <= template["metadata"]["labels"].items()


@pytest.mark.parametrize("overlay", ["default", "groups-on", "labelled-nodes"])
def test_overlays_without_metrics_serve_none(overlay: str) -> None:
    docs = render(OVERLAYS / overlay)
    assert "FAKE_DRA_METRICS_ADDR" not in plugin_env(docs) and "Service" not in by_kind(docs)


def test_labelled_nodes_overlay_requires_the_profile_label() -> None:
    spec = pod_template(render(OVERLAYS / "labelled-nodes"))["spec"]
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expr,) = term["matchExpressions"]
    label = next(a.split("=", 1)[1] for a in spec["initContainers"][0]["args"] if a.startswith("--label="))
    assert expr == {"key": label, "operator": "Exists"}
    assert "affinity" not in pod_template(render(OVERLAYS / "default"))["spec"]


def test_nvidia_overlay_installs_nvidias_device_classes_and_the_personality() -> None:
    """deploy/overlays/nvidia: the plugin runs as the nvidia personality, and the cluster gets exactly the
    DeviceClasses of NVIDIA's chart and of the SR-IOV driver (not fake-dra's own)."""
    from driver.personality import personality_named

    docs = render(OVERLAYS / "nvidia")
    assert plugin_env(docs)["FAKE_DRA_PERSONALITY"] == "nvidia"
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DeviceClass"}
    want = {dc["metadata"]["name"]: dc for p in personality_named("nvidia").drivers() for dc in p.device_classes()}
    assert classes == want


def test_example_overlay_installs_the_example_drivers_device_class_and_the_personality() -> None:
    """deploy/overlays/example: the plugin runs as dra-example-driver's gpu profile, and the cluster gets
    the DeviceClass its chart installs (gpu.example.com), which kubernetes.io's DRA tutorial uses."""
    docs = render(OVERLAYS / "example")
    assert plugin_env(docs)["FAKE_DRA_PERSONALITY"] == "example"
    classes = [d for d in docs if d["kind"] == "DeviceClass"]
    assert [c["metadata"]["name"] for c in classes] == ["gpu.example.com"]
    assert classes[0]["spec"] == {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
