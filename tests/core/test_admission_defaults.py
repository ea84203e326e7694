"""Defaults, mutating admission and strategies as kube-apiserver applies them (driver.store.admission).

Sources: k8s.io/kubernetes pkg/apis/{core,apps,batch,resource}/v1/defaults.go,
plugin/pkg/admission/{defaulttolerationseconds,priority}, pkg/apis/core/helper/qos and the
registry strategies; each case names the one it checks.
"""

from __future__ import annotations

import pytest

from driver.store.admission.podefaults import image_tag
from tests.core.admission_helpers import admit, claim, container, deployment, job, pod, refusal, resource_slice, stored

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}


def test_pod_spec_defaults():
    """SetDefaults_PodSpec, SetDefaults_Pod, SetDefaults_Container, SetDefaults_ContainerPort, SetDefaults_Probe,
    SetDefaults_HTTPGetAction, SetDefaults_ObjectFieldSelector, SetDefaults_Volume."""
    out = admit("Pod", pod(containers=[container(ports=[{"containerPort": 80}],
                                                 env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                                                 readinessProbe={"httpGet": {"port": 80}})],
                           volumes=[{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}}]))
    spec = out["spec"]
    assert {k: spec[k] for k in ("dnsPolicy", "restartPolicy", "schedulerName", "terminationGracePeriodSeconds",
                                 "enableServiceLinks", "securityContext")} == {
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30, "enableServiceLinks": True, "securityContext": {}}
    ctr = spec["containers"][0]
    assert (ctr["imagePullPolicy"], ctr["terminationMessagePath"], ctr["terminationMessagePolicy"]) == (
        "IfNotPresent", "/dev/termination-log", "File")
    assert ctr["ports"][0]["protocol"] == "TCP" and ctr["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert ctr["readinessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                     "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert spec["volumes"] == [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}}]


@pytest.mark.parametrize(("image", "tag", "policy"), [
    ("busybox", "latest", "Always"), ("busybox:latest", "latest", "Always"), ("busybox:1.36", "1.36", "IfNotPresent"),
    ("registry:5000/team/app", "latest", "Always"), ("registry:5000/team/app:v2", "v2", "IfNotPresent"),
    ("app@sha256:" + "a" * 64, "", "IfNotPresent"),
])
def test_image_pull_policy_follows_the_tag(image, tag, policy):
    """SetDefaults_Container with pkg/util/parsers ParseImageName: no tag and no digest means latest."""
    assert image_tag(image) == tag
    assert admit("Pod", pod(containers=[container(image=image)]))["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_requests_default_to_limits_in_pods_only():
    """SetDefaults_Pod copies limits into missing requests; pod templates are not changed so."""
    limited = [container(resources={"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}})]
    assert admit("Pod", pod(containers=limited))["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    template = admit("Deployment", deployment(template={"metadata": {"labels": {"app": "web"}}, "spec": {"containers": limited}}))
    assert template["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}


def test_default_toleration_seconds():
    """DefaultTolerationSeconds: not-ready and unreachable for 300 s unless already tolerated."""
    assert admit("Pod", pod())["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
    assert admit("Pod", pod(tolerations=[own]))["spec"]["tolerations"] == [own, UNREACHABLE]
    everything = {"operator": "Exists"}
    assert admit("Pod", pod(tolerations=[everything]))["spec"]["tolerations"] == [everything]


def test_priority_admission():
    """Priority plugin: 0 and PreemptLowerPriority without a class; the built-in classes' values;
    a priority that disagrees is Forbidden; updates keep the stored values."""
    spec = admit("Pod", pod())["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert admit("Pod", pod(priorityClassName="system-node-critical"))["spec"]["priority"] == 2000001000
    assert refusal("Pod", pod(priority=7)) == ('pods "p" is forbidden: the integer value of priority (7) must not be provided '
                                             "in pod spec; priority admission controller computed 0 from the given "
                                             "PriorityClass name")
    assert "priority" not in admit("Pod", pod(priorityClassName="team-high"))["spec"], "the store keeps no PriorityClasses"


@pytest.mark.parametrize(("containers", "qos"), [
    ([container()], "BestEffort"),
    ([container(resources={"requests": {"cpu": "1"}})], "Burstable"),
    ([container(resources={"limits": {"cpu": "1", "memory": "1Gi"}})], "Guaranteed"),
    ([container(resources={"limits": {"cpu": "1", "memory": "1Gi"}}), container(name="b")], "Burstable"),
    ([container(resources={"limits": {"nvidia.com/gpu": "1"}})], "BestEffort"),
])
def test_status_on_create(containers, qos):
    """pod strategy PrepareForCreate: phase Pending and ComputePodQOS (pkg/apis/core/helper/qos)."""
    assert admit("Pod", pod(containers=containers))["status"] == {"phase": "Pending", "qosClass": qos}


def test_gated_pods_say_so_and_status_is_the_servers():
    """applySchedulingGatedCondition; PrepareForUpdate keeps the stored status."""
    gated = admit("Pod", pod(schedulingGates=[{"name": "example.com/wait"}]))
    assert gated["status"]["conditions"] == [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                              "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    bound = stored("Pod", pod())
    bound["spec"]["nodeName"] = "node-1"
    bound["status"] = {"phase": "Running", "qosClass": "BestEffort"}
    again = admit("Pod", {**pod(), "status": {"phase": "Failed"}}, bound)
    assert again["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    assert again["spec"]["nodeName"] == "node-1", "apply's merge patch keeps the binding"


def test_deployment_and_replicaset_defaults():
    """SetDefaults_Deployment, SetDefaults_ReplicaSet (and the template's pod spec)."""
    spec = admit("Deployment", deployment())["spec"]
    assert {k: spec[k] for k in ("replicas", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds")} == {
        "replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert admit("Deployment", deployment(strategy={"type": "Recreate"}))["spec"]["strategy"] == {"type": "Recreate"}
    rs = deployment()
    rs["kind"] = "ReplicaSet"
    assert admit("ReplicaSet", rs)["spec"]["replicas"] == 1
    scaled = stored("Deployment", deployment(replicas=7))
    assert admit("Deployment", deployment(), scaled)["spec"]["replicas"] == 7, "an omitted replicas keeps the stored count"


def test_job_defaults_and_generated_selector():
    """SetDefaults_Job; job strategy PrepareForCreate generateSelector; the job's labels default
    to its template's, generated ones included (as a read shows them)."""
    out = admit("Job", job())
    spec, uid = out["spec"], out["metadata"]["uid"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                 "podReplacementPolicy", "manualSelector")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
              "controller-uid": uid, "job-name": "pi"}
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == labels and out["metadata"]["labels"] == labels
    assert admit("Job", job(parallelism=3))["spec"].get("completions") is None
    assert admit("Job", job(podFailurePolicy={"rules": [{"action": "FailJob", "onPodConditions": [{"type": "X"}]}]}))[
        "spec"]["podReplacementPolicy"] == "Failed"
    again = admit("Job", job(), stored("Job", job()))
    assert again["spec"]["selector"]["matchLabels"], "an update keeps the generated selector and labels"


def test_claim_and_slice_defaults():
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest (ExactCount, count 1);
    ResourcePool.generation is a plain int64 (an omitted one is 0); SetDefaults_DeviceTaint."""
    requests = admit("ResourceClaim", claim({"name": "a", "exactly": {"deviceClassName": "c"}},
                                            {"name": "b", "exactly": {"deviceClassName": "c", "allocationMode": "All"}},
                                            {"name": "f", "firstAvailable": [{"name": "s", "deviceClassName": "c"}]}))[
        "spec"]["devices"]["requests"]
    assert requests[0]["exactly"] == {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}
    assert requests[1]["exactly"] == {"deviceClassName": "c", "allocationMode": "All"}
    assert requests[2]["firstAvailable"][0] == {"name": "s", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}
    obj = resource_slice({"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]})
    del obj["spec"]["pool"]["generation"]
    out = admit("ResourceSlice", obj)
    assert out["spec"]["pool"]["generation"] == 0
    stamp = out["spec"]["devices"][0]["taints"][0]["timeAdded"]
    assert stamp.endswith("Z")
    assert admit("ResourceSlice", obj, out)["spec"]["devices"][0]["taints"][0]["timeAdded"] == stamp


def test_namespace_and_node_defaults():
    """namespace strategy (label, finalizer), SetDefaults_NamespaceStatus, SetDefaults_NodeStatus."""
    ns = admit("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    node = admit("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}})
    assert node["status"]["allocatable"] == {"cpu": "4"}
