"""Every manifest we ship validates against the Kubernetes 1.37 strict schemas, and says what we mean.

Strict schemas reject unknown fields, so a typo (e.g. `securityContex`) fails here instead of being
silently dropped by the API server. The files of the kustomize base and the examples are checked one
by one here; what the overlays render is checked in test_kustomize.py. The semantic checks read the
rendered default overlay, i.e. what `kubectl apply -k deploy/overlays/default` applies.
"""

from __future__ import annotations

import copy
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from driver import DEFAULT_DRIVER_NAME
from driver.e2e import manifests
from driver.e2e.scenario import load_scenarios

from .kustomize import BASE, DEPLOY, OVERLAYS, ROOT, render

K8S = "1.37"


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _all_manifest_files() -> list[Path]:
    base = [p for p in sorted(BASE.glob("*.yaml")) if p.name != "kustomization.yaml"]
    return base + sorted((DEPLOY / "examples").glob("*.yaml"))


def _validate(doc: dict) -> None:
    kubernetes_validate.validate(doc, K8S, strict=True)


@pytest.mark.parametrize("path", _all_manifest_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_manifest_validates_strictly(path: Path) -> None:
    docs = _docs(path)
    assert docs, f"{path} holds no objects"
    for doc in docs:
        _validate(doc)


def test_strict_validation_catches_unknown_fields() -> None:
    """Guard for the test above: the validator must not accept a misspelt field."""
    ds = next(d for d in _docs(BASE / "04-daemonset.yaml") if d["kind"] == "DaemonSet")
    broken = copy.deepcopy(ds)
    broken["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(broken)


def _by_kind() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for doc in render(OVERLAYS / "default"):
        out.setdefault(doc["kind"], []).append(doc)
    return out


def test_rbac_is_least_privilege() -> None:
    role = _by_kind()["ClusterRole"][0]
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    # get: the plugin reads claims by name; list: the publisher protects groups of allocated devices.
    assert rules[(("resource.k8s.io",), ("resourceclaims",))] == {"get", "list"}
    assert rules[(("",), ("nodes",))] == {"get"}
    assert "create" in rules[(("resource.k8s.io",), ("resourceslices",))]
    # VF status.devices by server-side apply: patch only, and (1.36+ granular status authorization)
    # the node-aware verb on the synthetic subresource, for this driver's name only.
    assert rules[(("resource.k8s.io",), ("resourceclaims/status",))] == {"patch"}
    assert rules[(("resource.k8s.io",), ("resourceclaims/driver",))] == {"associated-node:patch"}
    (driver_rule,) = [r for r in role["rules"] if r["resources"] == ["resourceclaims/driver"]]
    assert driver_rule["resourceNames"] == [DEFAULT_DRIVER_NAME]
    assert not any(v.startswith("arbitrary-node:") for verbs in rules.values() for v in verbs)
    assert len(rules) == 5, "no other resources (no secrets, no pods, no metrics)"
    assert not any("*" in verbs for verbs in rules.values())


def test_admission_policy_binds_writes_to_own_node() -> None:
    kinds = _by_kind()
    policy = next(p for p in kinds["ValidatingAdmissionPolicy"]
                  if p["metadata"]["name"] == "fake-dra-resourceslices-own-node")
    binding = next(b for b in kinds["ValidatingAdmissionPolicyBinding"]
                   if b["spec"]["policyName"] == policy["metadata"]["name"])
    sa = kinds["ServiceAccount"][0]
    assert binding["spec"]["validationActions"] == ["Deny"]
    match = policy["spec"]["matchConditions"][0]["expression"]
    assert f"system:serviceaccount:{sa['metadata']['namespace']}:{sa['metadata']['name']}" in match
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert "authentication.kubernetes.io/node-name" in variables["userNodeName"]
    assert "oldObject" in variables["objectNodeName"], "DELETE must be checked against the stored object"
    rules = policy["spec"]["matchConstraints"]["resourceRules"][0]
    assert set(rules["operations"]) == {"CREATE", "UPDATE", "DELETE"}
    assert any("userNodeName == variables.objectNodeName" in v["expression"] for v in policy["spec"]["validations"])


def test_admission_policy_binds_claim_status_writes_to_own_node_and_driver() -> None:
    kinds = _by_kind()
    policy = next(p for p in kinds["ValidatingAdmissionPolicy"] if p["metadata"]["name"] == "fake-dra-claim-status-own-node")
    binding = next(b for b in kinds["ValidatingAdmissionPolicyBinding"]
                   if b["spec"]["policyName"] == policy["metadata"]["name"])
    assert binding["spec"]["validationActions"] == ["Deny"]
    sa = kinds["ServiceAccount"][0]
    match = policy["spec"]["matchConditions"][0]["expression"]
    assert f"system:serviceaccount:{sa['metadata']['namespace']}:{sa['metadata']['name']}" in match
    rules = policy["spec"]["matchConstraints"]["resourceRules"][0]
    assert (rules["resources"], rules["operations"]) == (["resourceclaims/status"], ["UPDATE"])  # PATCH is UPDATE
    text = yaml.safe_dump(policy)
    assert f"'{DEFAULT_DRIVER_NAME}'" in text, "scoped to this driver's entries"
    checks = " ".join(v["expression"] for v in policy["spec"]["validations"])
    assert "f.key == 'metadata.name'" in checks and "variables.userNodeName" in checks
    assert "status.allocation" in checks and "reservedFor" in checks


def test_daemonset_wiring() -> None:
    ds = _by_kind()["DaemonSet"][0]
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    assert pod["serviceAccountName"] == _by_kind()["ServiceAccount"][0]["metadata"]["name"]
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert set(host.values()) == {"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi"}
    plugin = next(c for c in pod["containers"] if c["name"] == "plugin")
    env = {e["name"]: e for e in plugin["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert plugin["livenessProbe"]["exec"]["command"][:2] == ["fake-dra", "probe"]
    init = pod["initContainers"][0]
    assert init["args"][0] == "node-sysfs" and any(a.startswith("--default-profile=") for a in init["args"])
    for c in [plugin, init]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"]["drop"] == ["ALL"] and "privileged" not in sc
    mounts = {m["mountPath"] for m in plugin["volumeMounts"]}
    assert {"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi"} <= mounts


@pytest.mark.parametrize("argv", [["run"], ["probe", "--timeout=5"]], ids=["run", "liveness-probe"])
def test_plugin_uses_the_mounted_directories_without_a_service_account(argv: list[str], monkeypatch) -> None:
    """The directories the plugin (and its exec probe) use come from the manifest, not from guessing
    "in a cluster" from a service-account token: without one (automountServiceAccountToken off, or
    hack/image-smoke.sh's podman run) the defaults would be a local state directory under the
    read-only root filesystem and the kubelet would never see the sockets."""
    from driver import cli
    from driver.commands import common

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    pod = _by_kind()["DaemonSet"][0]["spec"]["template"]["spec"]
    plugin = next(c for c in pod["containers"] if c["name"] == "plugin")
    environ = {e["name"]: e["value"] for e in plugin["env"] if "value" in e} | {"NODE_NAME": "n1"}
    args = cli.parse(argv, environ)
    dirs = common.node_dirs(args, DEFAULT_DRIVER_NAME, "n1", sockets_only=argv[0] == "probe")
    mounts = {m["mountPath"] for m in plugin["volumeMounts"]}
    assert dirs.local_root is None
    assert {str(dirs.plugins), str(dirs.registry)} == {"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry"}
    assert {str(dirs.plugins), str(dirs.registry)} <= mounts
    if argv[0] == "run":
        assert str(dirs.cdi) == "/var/run/cdi" and str(dirs.cdi) in mounts


def test_generated_files_match_generator() -> None:
    for rel, text in manifests.render_deploy_files(load_scenarios()).items():
        assert (DEPLOY / rel).read_text() == text, (
            f"deploy/{rel} is stale: run `fake-dra e2e --render-manifests deploy`"
        )
    names = {d["metadata"]["name"] for d in _docs(BASE / "03-deviceclasses.yaml")}
    assert names == {f"{c}.fake-dra.example.com" for c in ("gpu", "mig", "vgpu", "timeshare", "vf", "nic")}


def test_podgroup_example_shares_one_claim() -> None:
    docs = _docs(DEPLOY / "examples" / "podgroup-shared-claim.yaml")
    group = next(d for d in docs if d["kind"] == "PodGroup")
    pods = [d for d in docs if d["kind"] == "Pod" and d["spec"].get("schedulingGroup")]
    assert len(pods) == 3
    for pod in pods:
        assert pod["spec"]["schedulingGroup"]["podGroupName"] == group["metadata"]["name"]
        # KEP-5729: the pod's claim entry must match the PodGroup's exactly.
        assert pod["spec"]["resourceClaims"] == group["spec"]["resourceClaims"]


def test_every_kind_scenario_has_an_example_manifest() -> None:
    examples = {p.stem for p in (DEPLOY / "examples").glob("*.yaml")}
    wanted = {s.name for s in load_scenarios() if s.kind}
    assert wanted <= examples, f"missing deploy/examples for {sorted(wanted - examples)}"


def test_kind_config_enables_the_gates_and_no_unknown_ones() -> None:
    cfg = yaml.safe_load((ROOT / "hack" / "kind-config.yaml").read_text())
    gates = cfg["featureGates"]
    assert gates["DRADeviceCompatibilityGroups"] is True and gates["DRAPartitionableDevices"] is True
    # Not a Kubernetes 1.37 gate: naming it would stop every component from starting.
    assert "DRASharedConsumableCapacity" not in gates
    assert [n["role"] for n in cfg["nodes"]].count("worker") == 2
    assert any("enable_cdi = true" in patch for patch in cfg["containerdConfigPatches"])
