"""deploy/overlays/kwok-fleet: the fleet publisher as a Deployment, least privilege, and a fleet
file the command accepts. (Rendered and strictly validated with every overlay in test_kustomize.py.)"""

from __future__ import annotations

import argparse

from driver.cli import build_parser
from driver.commands._envflags import variable_for, walk
from driver.fleet.spec import load_fleet

from .kustomize import OVERLAYS, by_kind, render

SA = "system:serviceaccount:fake-dra:fake-dra-fleet"


def _docs():
    return by_kind(render(OVERLAYS / "kwok-fleet"))


def _fleet_deployment(kinds):
    (deployment,) = [d for d in kinds["Deployment"] if d["metadata"]["name"] == "fake-dra-fleet"]
    return deployment


def test_one_publisher_never_two():
    spec = _fleet_deployment(_docs())["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}


def test_the_deployment_runs_fleet_run_on_the_mounted_configmap_and_its_variables_are_fleet_flags():
    kinds = _docs()
    pod = _fleet_deployment(kinds)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = build_parser().parse_args(container["args"])
    assert (args.command, args.action) == ("fleet", "run")
    mount = next(m for m in container["volumeMounts"] if args.filename.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    (configmap,) = [c for c in kinds["ConfigMap"] if c["metadata"]["name"] == volume["configMap"]["name"]]
    key = args.filename[len(mount["mountPath"]) + 1:]
    fleet = load_fleet(configmap["data"][key], key)
    assert fleet.size > 0
    fleet_parser = dict(walk(build_parser()))["fleet"]
    variables = {variable_for(a) for a in fleet_parser._actions if isinstance(a, argparse.Action)}
    assert {e["name"] for e in container["env"] if e["name"].startswith("FAKE_DRA_")} <= variables
    assert pod["serviceAccountName"] == "fake-dra-fleet"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])


def test_rbac_is_least_privilege():
    kinds = _docs()
    (role,) = [r for r in kinds["ClusterRole"] if r["metadata"]["name"] == "fake-dra-fleet"]
    grants = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert grants == {
        ("", "nodes"): {"get", "list", "create", "update", "delete"},
        ("resource.k8s.io", "resourceslices"): {"get", "list", "create", "update", "delete"},
        ("resource.k8s.io", "resourceclaims"): {"list"},
    }
    (binding,) = [b for b in kinds["ClusterRoleBinding"] if b["metadata"]["name"] == "fake-dra-fleet"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "fake-dra-fleet", "namespace": "fake-dra"}]


def test_the_admission_policy_binds_the_fleets_service_account_to_its_own_nodes_and_driver():
    kinds = _docs()
    (policy,) = [p for p in kinds["ValidatingAdmissionPolicy"] if p["metadata"]["name"] == "fake-dra-fleet-owns-its-nodes"]
    assert SA in policy["spec"]["matchConditions"][0]["expression"]
    text = str(policy["spec"]["validations"])
    assert "fake-dra.example.com/fleet" in text and "kwok.x-k8s.io/node" in text and "fake-dra.example.com'" in text
    (binding,) = [b for b in kinds["ValidatingAdmissionPolicyBinding"] if b["spec"]["policyName"] == policy["metadata"]["name"]]
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_the_plugin_daemonset_stays_off_kwok_nodes():
    """kwok's taint keeps the plugin off the fleet's nodes: the DaemonSet must not tolerate it."""
    (daemonset,) = _docs()["DaemonSet"]
    tolerations = daemonset["spec"]["template"]["spec"].get("tolerations") or []
    assert not any(t.get("operator") == "Exists" and not t.get("key") for t in tolerations)
    assert not any(t.get("key") == "kwok.x-k8s.io/node" for t in tolerations)
