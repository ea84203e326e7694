"""Deployments, ReplicaSets and Jobs as kube-apiserver validates them.

Sources: k8s.io/kubernetes pkg/apis/apps/validation/validation.go and
pkg/apis/batch/validation/validation.go (with the registry strategies of pkg/registry/apps and
pkg/registry/batch); each case names the function it checks.
"""

from __future__ import annotations

import copy

import pytest

from tests.core.admission_helpers import admit, container, deployment, job, refusal, stored


@pytest.mark.parametrize(("spec", "message"), [
    # ValidateDeploymentSpec: replicas, selector, template labels
    ({"replicas": -1}, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    ({"selector": None}, "spec.selector: Required value"),
    ({"selector": {}}, "spec.selector: Invalid value: {}: empty selector is invalid for deployment"),
    ({"selector": {"matchLabels": {"app": "api"}}},
     'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`'),
    ({"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}},
     'spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator'),
    # ValidatePodTemplateSpecForReplicaSet: restartPolicy Always, no activeDeadlineSeconds, the pod spec
    ({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container()], "restartPolicy": "Never"}}},
     'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'),
    ({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container()], "activeDeadlineSeconds": 5}}},
     "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"),
    ({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}}, "spec.template.spec.containers: Required value"),
    # ValidateDeploymentStrategy / ValidateRollingUpdateDeployment
    ({"strategy": {"type": "Recreate", "rollingUpdate": {}}},
     "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"),
    ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}},
     'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0'),
    ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}},
     'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%'),
    ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "lots"}}},
     'spec.strategy.rollingUpdate.maxSurge: Invalid value: "lots": a valid percent string must be a numeric string followed by an ending \'%\''),
    ({"strategy": {"type": "Canary"}}, 'spec.strategy: Unsupported value: {"type":"Canary"}: supported values: "Recreate", "RollingUpdate"'),
    # ValidateDeploymentSpec: progressDeadlineSeconds, revisionHistoryLimit
    ({"minReadySeconds": 30, "progressDeadlineSeconds": 30},
     "spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds"),
    ({"revisionHistoryLimit": -1}, "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"),
])
def test_deployment_rules(spec, message):
    assert message in refusal("Deployment", deployment(**spec))


def test_replicasets():
    """ValidateReplicaSet / ValidateReplicaSetSpec (upstream says "deployment" in its empty-selector message too)."""
    rs = deployment(replicas=-2)
    rs.update(apiVersion="apps/v1", kind="ReplicaSet")
    del rs["spec"]["selector"]["matchLabels"]
    message = refusal("ReplicaSet", rs)
    assert "spec.replicas: Invalid value: -2: must be greater than or equal to 0" in message
    assert "empty selector is invalid for deployment" in message


def test_workload_selectors_are_immutable():
    """pkg/registry/apps/deployment/strategy.go ValidateUpdate: apps/v1 selectors do not change."""
    old = stored("Deployment", deployment())
    changed = deployment(selector={"matchLabels": {"app": "web", "tier": "x"}})
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    assert 'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is immutable' in refusal(
        "Deployment", changed, old)
    assert refusal("Deployment", deployment(replicas=5), old) == ""


@pytest.mark.parametrize(("spec", "message"), [
    # validateJobSpec: counts, completionMode, restartPolicy
    ({"parallelism": -1}, "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
    ({"completions": -1}, "spec.completions: Invalid value: -1: must be greater than or equal to 0"),
    ({"backoffLimit": -1}, "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"),
    ({"completionMode": "Sometimes"},
     'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'),
    ({"completionMode": "Indexed", "completions": None, "parallelism": 2},
     "spec.completions: Required value: when completion mode is Indexed"),
    ({"backoffLimitPerIndex": 1}, "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"),
    ({"template": {"spec": {"containers": [container()]}}},
     'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'),
    ({"podFailurePolicy": {"rules": []}, "template": {"spec": {"containers": [container()], "restartPolicy": "OnFailure"}}},
     'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified'),
    ({"podReplacementPolicy": "Sometimes"},
     'spec.podReplacementPolicy: Unsupported value: "Sometimes": supported values: "Failed", "TerminatingOrFailed"'),
    # validateGeneratedSelector / ValidateJobSpec: a user selector needs manualSelector
    ({"selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": {"labels": {"app": "x"}},
                                                            "spec": {"containers": [container()], "restartPolicy": "Never"}}},
     "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\",\"batch.kubernetes.io/controller-uid\":"),
])
def test_job_rules(spec, message):
    assert message in refusal("Job", job(**spec))


def test_indexed_job_pod_hostnames_must_be_dns_labels():
    """ValidateJob: the last index's hostname `<name>-<completions-1>` must be a DNS label."""
    long = job(completionMode="Indexed", completions=10)
    long["metadata"]["name"] = "j" * 62
    assert "will not able to create pod with invalid DNS label: " + "j" * 62 + "-9" in refusal("Job", long)


def test_manual_selectors():
    """validateGeneratedSelector is skipped with manualSelector; the selector must still match."""
    manual = job(manualSelector=True, selector={"matchLabels": {"app": "x"}},
                 template={"metadata": {"labels": {"app": "y"}}, "spec": {"containers": [container()], "restartPolicy": "Never"}})
    assert 'spec.template.metadata.labels: Invalid value: {"app":"y"}: `selector` does not match template `labels`' in refusal("Job", manual)
    manual["spec"]["template"]["metadata"]["labels"] = {"app": "x"}
    out = admit("Job", manual)
    assert out["spec"]["selector"] == {"matchLabels": {"app": "x"}} and out["spec"]["template"]["metadata"]["labels"] == {"app": "x"}


def test_job_updates():
    """ValidateJobSpecUpdate: template, selector, completions and completionMode are immutable;
    validatePodTemplateUpdate lets a suspended, never started job change scheduling directives."""
    old = stored("Job", job())
    image = job(template={"spec": {"containers": [container(image="busybox:1.37")], "restartPolicy": "Never"}})
    assert "spec.template: Invalid value: " in refusal("Job", image, old) and "field is immutable" in refusal("Job", image, old)
    assert "spec.completions: Invalid value: 3: field is immutable" in refusal("Job", job(completions=3), old)
    assert refusal("Job", job(parallelism=4), old) == "", "parallelism may change"
    suspended = stored("Job", job(suspend=True))
    resumed = job(suspend=False, template={"spec": {"containers": [container()], "restartPolicy": "Never",
                                                    "nodeSelector": {"zone": "a"}}})
    assert refusal("Job", resumed, suspended) == ""
    started = copy.deepcopy(suspended)
    started["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    assert "field is immutable" in refusal("Job", resumed, started)
