"""Pods as kube-apiserver validates them (k8s.io/kubernetes pkg/apis/core/validation/validation.go).

Each case names the upstream function whose rule and message it checks.
"""

from __future__ import annotations

import pytest

from tests.core.admission_helpers import container, pod, refusal, stored, with_meta

CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


@pytest.mark.parametrize(("spec", "message"), [
    # validateContainers: at least one container, unique names
    ({"containers": []}, "spec.containers: Required value"),
    ({"containers": [container(), container()]}, 'spec.containers[1].name: Duplicate value: "main"'),
    # validateContainerCommon: name a DNS label, image required
    ({"containers": [container(name="Main")]}, 'spec.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label'),
    ({"containers": [{"name": "main"}]}, "spec.containers[0].image: Required value"),
    # validateResourceClaimNames: a container's claims name entries of spec.resourceClaims
    ({"containers": [container(resources={"claims": [{"name": "x"}]})], "resourceClaims": CLAIMS},
     'spec.containers[0].resources.claims[0]: Not found: "x": must be one of the names in pod.spec.resourceClaims: gpu'),
    ({"containers": [container(resources={"claims": [{"name": "x"}]})]},
     'spec.containers[0].resources.claims[0]: Not found: "x": must be one of the names in pod.spec.resourceClaims which is empty'),
    ({"containers": [container(resources={"claims": [{"name": "gpu"}, {"name": "gpu"}]})], "resourceClaims": CLAIMS},
     'spec.containers[0].resources.claims[1]: Duplicate value: "gpu"'),
    ({"containers": [container(resources={"claims": [{"name": "gpu", "request": "r"}, {"name": "gpu"}]})],
      "resourceClaims": CLAIMS}, 'spec.containers[0].resources.claims[1]: Duplicate value: "gpu"'),
    ({"containers": [container(resources={"claims": [{"name": "gpu", "request": "R"}]})], "resourceClaims": CLAIMS},
     'spec.containers[0].resources.claims[0].request: Invalid value: "R": a lowercase RFC 1123 label'),
    # validateResourceRequirements: requests within limits, names, quantities
    ({"containers": [container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})]},
     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ({"containers": [container(resources={"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}})]},
     'spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'),
    ({"containers": [container(resources={"requests": {"nvidia.com/gpu": "1"}})]},
     "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"),
    ({"containers": [container(resources={"limits": {"nvidia.com/gpu": "500m"}})]},
     'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer'),
    ({"containers": [container(resources={"limits": {"cpu": "-1"}})]},
     'spec.containers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    ({"containers": [container(resources={"limits": {"gpu": "1"}})]},
     'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified'),
    ({"containers": [container(resources={"limits": {"hugepages-2Mi": "3Mi"}})]},
     "HugePages require cpu or memory"),
    # validatePodResources: no claims at pod level
    ({"resources": {"claims": [{"name": "gpu"}]}, "resourceClaims": CLAIMS},
     "spec.resources.claims: Forbidden: claims cannot be set for Resources at pod-level"),
    # validatePodResourceClaim: exactly one source, DNS label names, unique
    ({"resourceClaims": [{"name": "gpu"}]},
     'spec.resourceClaims[0]: Invalid value: {"name":"gpu"}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'),
    ({"resourceClaims": [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]},
     "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"),
    ({"resourceClaims": CLAIMS + CLAIMS}, 'spec.resourceClaims[1].name: Duplicate value: "gpu"'),
    ({"resourceClaims": [{"name": "GPU", "resourceClaimName": "Bad"}]},
     'spec.resourceClaims[0].resourceClaimName: Invalid value: "Bad": a lowercase RFC 1123 subdomain'),
    # ValidateTolerations
    ({"tolerations": [{"key": "a", "operator": "Equalz", "value": "b"}]},
     'spec.tolerations[0].operator: Unsupported value: "Equalz": supported values: "Equal", "Exists"'),
    ({"tolerations": [{"key": "a", "operator": "Lt", "value": "5"}]},  # TaintTolerationComparisonOperators is off
     'spec.tolerations[0].operator: Unsupported value: "Lt"'),
    ({"tolerations": [{"operator": "Equal", "value": "b"}]},
     'operator must be Exists when `key` is empty, which means "match all values and all keys"'),
    ({"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]},
     "value must be empty when `operator` is 'Exists'"),
    ({"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]},
     "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
    ({"tolerations": [{"key": "a", "operator": "Exists", "effect": "Sometimes"}]},
     'spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    ({"tolerations": [{"key": "a b", "operator": "Exists"}]}, 'spec.tolerations[0].key: Invalid value: "a b"'),
    # ValidatePodSpec: nodeSelector keys (ValidateLabels), restartPolicy, dnsPolicy, names
    ({"nodeSelector": {"bad key!": "v"}}, 'spec.nodeSelector: Invalid value: "bad key!": name part must consist of'),
    ({"restartPolicy": "Sometimes"},
     'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    ({"dnsPolicy": "Nope"}, 'spec.dnsPolicy: Unsupported value: "Nope"'),
    ({"nodeName": "Node_1"}, 'spec.nodeName: Invalid value: "Node_1": a lowercase RFC 1123 subdomain'),
    ({"hostname": "a.b"}, 'spec.hostname: Invalid value: "a.b": must not contain dots'),
    ({"activeDeadlineSeconds": 0}, "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"),
    ({"priorityClassName": "Hi"}, 'spec.priorityClassName: Invalid value: "Hi"'),
    ({"os": {"name": "plan9"}}, 'spec.os: Unsupported value: "plan9": supported values: "linux", "windows"'),
    ({"schedulingGates": [{"name": "a"}, {"name": "a"}]}, 'spec.schedulingGates[1]: Duplicate value: "a"'),
    ({"readinessGates": [{"conditionType": "a b"}]}, 'spec.readinessGates[0].conditionType: Invalid value: "a b"'),
    ({"hostAliases": [{"ip": "300.1.1.1", "hostnames": ["a"]}]},
     'spec.hostAliases[0].ip: Invalid value: "300.1.1.1": must be a valid IP address'),
    ({"hostUsers": False, "hostNetwork": True}, "spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false"),
    ({"securityContext": {"runAsUser": -1}},
     "spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    ({"securityContext": {"sysctls": [{"name": "a..b"}]}}, 'spec.securityContext.sysctls[0].name: Invalid value: "a..b"'),
    ({"dnsPolicy": "None"}, "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"),
    ({"ephemeralContainers": [{"name": "debug", "image": "busybox"}]},  # ValidatePodCreate
     "spec.ephemeralContainers: Forbidden: cannot be set on create"),
    ({"nodeName": "n1", "schedulingGates": [{"name": "a"}]},
     "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"),
])
def test_pod_spec_rules(spec, message):
    assert message in refusal("Pod", pod(**spec))


@pytest.mark.parametrize(("affinity", "message"), [
    # validateNodeAffinity / ValidateNodeSelector / ValidateNodeSelectorRequirement
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: "
     "must have at least one node selector term"),
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Within", "values": ["a"]}]}]}}},
     'nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Within": not a valid selector operator'),
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}},
     "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["a"]}]}]}}},
     'matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key'),
    # ValidatePreferredSchedulingTerms / validateWeightedPodAffinityTerms: weights 1-100
    ({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}},
     "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"),
    # validatePodAffinityTerm: topologyKey required, label selector checked
    ({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {
        "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}}]}},
     "labelSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    ({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}},
     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"),
])
def test_affinity_rules(affinity, message):
    assert message in refusal("Pod", pod(affinity=affinity))


@pytest.mark.parametrize(("ctr", "message"), [
    # validateContainerPorts
    ({"ports": [{"containerPort": 70000}]}, "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535"),
    ({"ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}]},
     'spec.containers[0].ports[1].name: Duplicate value: "http"'),
    ({"ports": [{"containerPort": 80, "protocol": "ICMP"}]}, 'ports[0].protocol: Unsupported value: "ICMP"'),
    # ValidateEnv / validateEnvVarValueFrom / ValidateEnvFrom
    ({"env": [{"name": "A=B"}]}, "a valid environment variable name must consist only of printable ASCII characters other than '='"),
    ({"env": [{"name": "A", "valueFrom": {}}]}, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
    ({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}]},
     'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase"'),
    ({"envFrom": [{}]}, "must specify one of: `configMapRef` or `secretRef`"),
    # ValidateVolumeMounts
    ({"volumeMounts": [{"name": "data", "mountPath": "/d"}]}, 'spec.containers[0].volumeMounts[0].name: Not found: "data"'),
    # validatePullPolicy, validateContainerCommon terminationMessagePolicy
    ({"imagePullPolicy": "Sometimes"}, 'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"'),
    ({"terminationMessagePolicy": "Nope"}, 'spec.containers[0].terminationMessagePolicy: Unsupported value: "Nope"'),
    # validateHandler / validateProbe
    ({"livenessProbe": {"exec": {"command": ["true"]}, "httpGet": {"port": 80}}},
     "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"),
    ({"readinessProbe": {}}, "spec.containers[0].readinessProbe: Required value: must specify a handler type"),
    ({"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}},
     "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"),
    # validateResizePolicy, ValidateSecurityContext
    ({"resizePolicy": [{"resourceName": "gpu", "restartPolicy": "NotRequired"}]}, 'Unsupported value: "gpu"'),
    ({"securityContext": {"privileged": True, "allowPrivilegeEscalation": False}},
     "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
    # validateContainerOnlyForPod
    ({"image": " busybox"}, 'spec.containers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace'),
])
def test_container_rules(ctr, message):
    assert message in refusal("Pod", pod(containers=[container(**ctr)]))


def test_init_containers():
    """validateInitContainers: unique names with regular containers, probes only for sidecars."""
    message = refusal("Pod", pod(initContainers=[container(livenessProbe={"exec": {"command": ["true"]}})]))
    assert 'spec.initContainers[0].name: Duplicate value: "main"' in message
    assert ("spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without "
            "restartPolicy=Always") in message
    sidecar = container(name="side", restartPolicy="Always", livenessProbe={"exec": {"command": ["true"]}})
    assert refusal("Pod", pod(initContainers=[sidecar])) == ""


def test_volumes():
    """ValidateVolumes / validateVolumeSource: names, exactly one source."""
    message = refusal("Pod", pod(volumes=[{"name": "a", "emptyDir": {}, "hostPath": {"path": "/x"}}, {"name": "a", "emptyDir": {}}]))
    assert "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type" in message
    message = refusal("Pod", pod(volumes=[{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]))
    assert 'spec.volumes[1].name: Duplicate value: "a"' in message


def test_pod_specific_annotations():
    """ValidatePodSpecificAnnotations: mirror pods need a node, pod-deletion-cost is an int32."""
    message = refusal("Pod", with_meta(pod(), annotations={"kubernetes.io/config.mirror": "x",
                                                           "controller.kubernetes.io/pod-deletion-cost": "big"}))
    assert "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName" in message
    assert 'metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "big": must be a 32bit integer' in message


def test_topology_spread_constraints():
    """validateTopologySpreadConstraints with ValidateMaxSkew, ValidateWhenUnsatisfiable,
    ValidateSpreadConstraintNotRepeat, validateMinDomains."""
    c = {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}
    message = refusal("Pod", pod(topologySpreadConstraints=[c, dict(c)]))
    assert "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero" in message
    assert 'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, ScheduleAnyway}"' in message
    assert "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway" in message


def test_update_rules():
    """ValidatePodUpdate: images may change, tolerations may be added, little else."""
    old = stored("Pod", pod(tolerations=[{"key": "a", "operator": "Exists"}]))
    new_image = pod(tolerations=[{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}],
                    containers=[container(image="busybox:1.37")])
    assert refusal("Pod", new_image, old) == ""
    message = refusal("Pod", pod(containers=[container(), container(name="two")]), old)
    assert "spec.containers: Forbidden: pod updates may not add or remove containers" in message
    message = refusal("Pod", pod(tolerations=[], restartPolicy="Never"), old)
    assert "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds" in message
    assert "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`" in message
    assert "(changed: spec.restartPolicy)" in message
    assert "spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value" in refusal(
        "Pod", pod(activeDeadlineSeconds=20), stored("Pod", pod(activeDeadlineSeconds=10)))


def test_a_gated_pod_may_add_node_selectors_and_drop_gates():
    """ValidatePodUpdate for gated pods, validateOnlyDeletedSchedulingGates, validateNodeSelectorMutation."""
    old = stored("Pod", pod(schedulingGates=[{"name": "example.com/wait"}], nodeSelector={"a": "1"}))
    assert refusal("Pod", pod(nodeSelector={"a": "1", "b": "2"}), old) == ""
    assert "only additions to spec.nodeSelector are allowed" in refusal("Pod", pod(nodeSelector={"a": "2"}), old)
    assert "only deletion is allowed, but found new scheduling gate 'x'" in refusal(
        "Pod", pod(schedulingGates=[{"name": "example.com/wait"}, {"name": "x"}], nodeSelector={"a": "1"}), old)
