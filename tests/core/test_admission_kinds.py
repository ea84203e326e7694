"""Nodes, Namespaces, Events and the resource.k8s.io kinds as kube-apiserver validates them.

Sources: k8s.io/kubernetes pkg/apis/core/validation (validation.go, events.go) and
pkg/apis/resource/validation/validation.go; each case names the function it checks.
"""

from __future__ import annotations

import pytest

from driver.store.admission import cel
from tests.core.admission_helpers import claim, device_class, refusal, resource_slice, stored

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}


def test_node_taints_and_resources():
    """ValidateNode: validateNodeTaints (under metadata.taints, as upstream reports it),
    ValidateNodeResources, podCIDRs."""
    node = {**NODE, "spec": {"taints": [{"key": "a", "effect": "Sometimes"}, {"key": "a b", "effect": "NoSchedule"},
                                        {"key": "c", "value": "x y", "effect": "NoSchedule"},
                                        {"key": "d", "effect": "NoSchedule"}, {"key": "d", "effect": "NoSchedule"}],
                             "podCIDRs": ["10.0.0.0/33"]},
            "status": {"capacity": {"cpu": "-1", "pods": "1.5"}}}
    message = refusal("Node", node)
    assert 'metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"' in message
    assert 'metadata.taints[1].key: Invalid value: "a b"' in message
    assert 'metadata.taints[2].value: Invalid value: "x y": a valid label must be' in message
    assert 'metadata.taints[4]: Duplicate value: {"effect":"NoSchedule","key":"d"}: taints must be unique by key and effect pair' in message
    assert 'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0' in message
    assert 'status.capacity.pods: Invalid value: "1500m": must be an integer' in message
    assert 'spec.podCIDRs[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value' in message


def test_node_updates():
    """ValidateNodeUpdate: podCIDRs and providerID are set once."""
    old = stored("Node", {**NODE, "spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "kwok://node-1"}})
    message = refusal("Node", {**NODE, "spec": {"podCIDRs": ["10.0.1.0/24"], "providerID": "other"}}, old)
    assert "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid" in message
    assert "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid" in message
    assert refusal("Node", {**NODE, "spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "kwok://node-1",
                                            "taints": [{"key": "a", "effect": "NoSchedule"}]}}, old) == ""


def test_namespaces():
    """ValidateNamespace: a DNS label, finalizer names (validateFinalizerName)."""
    message = refusal("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Team"},
                                    "spec": {"finalizers": ["mine"]}})
    assert 'metadata.name: Invalid value: "Team": a lowercase RFC 1123 label' in message
    assert 'spec.finalizers: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified' in message


def test_events():
    """events.go legacyValidateEvent: the event's namespace is its object's; new-style events need
    their reporting fields."""
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"}}
    assert 'involvedObject.namespace: Invalid value: "other": does not match event.namespace' in refusal("Event", event)
    new_style = {**event, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                 "eventTime": "2026-01-01T00:00:00.000000Z"}
    message = refusal("Event", new_style)
    assert "reportingComponent: Required value" in message and "action: Required value" in message
    assert refusal("Event", {**event, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}) == ""


@pytest.mark.parametrize(("spec", "message"), [
    # validateSelector / validateCELExpression
    ({"selectors": [{"cel": {"expression": "device.driver =="}}]},
     'spec.selectors[0].cel.expression: Invalid value: "device.driver ==": compilation failed:'),
    ({"selectors": [{"cel": {"expression": "device.driver == '" + "x" * 10240 + "'"}}]},
     "spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"),
    ({"selectors": [{"cel": {"expression": "true"}}] * 33}, "spec.selectors: Too many: 33: must have at most 32 items"),
    # validateDeviceConfiguration / validateOpaqueConfiguration / ValidateCSIDriverName
    ({"config": [{"opaque": {"driver": "Bad_Driver", "parameters": {"a": 1}}}]},
     'spec.config[0].opaque.driver: Invalid value: "Bad_Driver": a lowercase RFC 1123 subdomain'),
    ({"config": [{}]}, "spec.config[0].opaque: Required value"),
    ({"config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"x": "y" * 10240}}}]},
     "spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"),
    # validateDeviceClassSpec: extended resource names
    ({"extendedResourceName": "gpu"}, 'spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name'),
])
def test_device_class_rules(spec, message):
    assert message in refusal("DeviceClass", device_class(**spec))


def test_cel_length_and_compile_rules_are_the_hook_for_costs():
    """validateCELExpression: the cost limit is driver.celexpr's estimator's to report (cel.COST_ESTIMATOR)."""
    assert cel.CEL_SELECTOR_EXPRESSION_MAX_LENGTH == 10 * 1024 and cel.CEL_SELECTOR_EXPRESSION_MAX_COST == 1_000_000
    assert cel.expression("device.driver == 'a'", "p") == []
    saved = cel.COST_ESTIMATOR
    try:
        cel.COST_ESTIMATOR = lambda expression: 2_000_000
        assert [str(e) for e in cel.expression("device.driver == 'a'", "p")] == ["p: Forbidden: too complex, exceeds cost limit"]
        assert cel.expression("device.driver == 'a'", "p", stored=True) == []  # stored expressions are not re-checked
    finally:
        cel.COST_ESTIMATOR = saved


@pytest.mark.parametrize(("requests", "devices", "message"), [
    # validateDeviceClaim: unique request names, DNS labels
    ([{"name": "gpu", "exactly": {"deviceClassName": "c"}}] * 2, {}, 'spec.devices.requests[1]: Duplicate value: "gpu"'),
    ([{"name": "GPU", "exactly": {"deviceClassName": "c"}}], {}, 'spec.devices.requests[0].name: Invalid value: "GPU"'),
    # validateDeviceRequest: exactly one of exactly and firstAvailable
    ([{"name": "gpu"}], {}, "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"),
    ([{"name": "gpu", "exactly": {"deviceClassName": "c"}, "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}], {},
     "spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"),
    # validateDeviceAllocationMode
    ([{"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 2}}], {},
     "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"),
    ([{"name": "gpu", "exactly": {"deviceClassName": "c", "count": -1}}], {},
     "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"),
    # validateDeviceClass
    ([{"name": "gpu", "exactly": {"deviceClassName": "Big_Class"}}], {},
     'spec.devices.requests[0].exactly.deviceClassName: Invalid value: "Big_Class"'),
    # validateSet on firstAvailable (8 at most, unique)
    ([{"name": "gpu", "firstAvailable": [{"name": f"s{i}", "deviceClassName": "c"} for i in range(9)]}], {},
     "spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"),
    # validateDeviceToleration
    ([{"name": "gpu", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}],
     {}, "spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: \"v\": must be empty for operator `Exists`"),
    ([{"name": "gpu", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k", "operator": "Equal", "effect": "Later"}]}}],
     {}, 'tolerations[0].effect: Unsupported value: "Later": supported values: "NoExecute", "NoSchedule", "None"'),
    # validateDeviceConstraint / validateRequestNameRef / validateFullyQualifiedName
    ([{"name": "gpu", "exactly": {"deviceClassName": "c"}}], {"constraints": [{"requests": ["nic"], "matchAttribute": "numa"}]},
     'spec.devices.constraints[0].requests[0]: Invalid value: "nic": must be the name of a request in the claim'),
    ([{"name": "gpu", "exactly": {"deviceClassName": "c"}}], {"constraints": [{"matchAttribute": "numa"}]},
     'spec.devices.constraints[0].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain and a name '
     "separated by a slash"),
])
def test_claim_rules(requests, devices, message):
    assert message in refusal("ResourceClaim", claim(*requests, **devices))


def test_claim_spec_is_immutable_and_allocations_are_checked():
    """ValidateResourceClaimUpdate (spec immutable), validateResourceClaimStatusUpdate (an allocation
    is not changed once set, a new one is a valid allocation result)."""
    old = stored("ResourceClaim", claim())
    other = claim({"name": "gpu", "exactly": {"deviceClassName": "other.example.com"}})
    assert 'spec: Invalid value: {"devices":' in refusal("ResourceClaim", other, old)
    assert "field is immutable" in refusal("ResourceClaim", other, old)
    bad = {**claim(), "status": {"allocation": {"devices": {"results": [
        {"request": "nic", "driver": "d.example.com", "pool": "Pool_1", "device": "dev-0"}]}}}}
    message = refusal("ResourceClaim", bad)
    assert 'status.allocation.devices.results[0].request: Invalid value: "nic": must be the name of a request' in message
    assert 'status.allocation.devices.results[0].pool: Invalid value: "Pool_1"' in message
    assert "status.reservedFor: Forbidden: may not be specified when `allocated` is not set" in refusal(
        "ResourceClaim", {**claim(), "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}]}})


def test_claim_templates():
    """ValidateResourceClaimTemplate (the claim spec under spec.spec, template metadata labels) and
    ValidateResourceClaimTemplateUpdate (spec immutable)."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "default"},
                "spec": {"metadata": {"labels": {"a b": "c"}}, "spec": {"devices": {"requests": [{"name": "Gpu"}]}}}}
    message = refusal("ResourceClaimTemplate", template)
    assert 'spec.metadata.labels: Invalid value: "a b"' in message
    assert 'spec.spec.devices.requests[0].name: Invalid value: "Gpu"' in message


@pytest.mark.parametrize(("mutate", "message"), [
    # validateResourceSliceSpec: exactly one node selection, sharedCounters or devices, pool
    (lambda s: s["spec"].pop("nodeName"), "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                           "`perDeviceNodeSelection` is required"),
    (lambda s: s["spec"].update(allNodes=True), 'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of'),
    (lambda s: s["spec"].update(sharedCounters=[{"name": "c", "counters": {"m": {"value": "1"}}}]),
     'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'),
    (lambda s: s["spec"]["pool"].update(resourceSliceCount=0), "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"),
    (lambda s: s["spec"].update(driver="gpu_example.com"), 'spec.driver: Invalid value: "gpu_example.com"'),
    (lambda s: s["spec"].update(driver="d" * 64 + ".com"), "spec.driver: Too long: may not be more than 63 bytes"),
    # validateDevice: names, attributes, taints, consumesCounters, limits
    (lambda s: s["spec"]["devices"].append({"name": "gpu-0"}), 'spec.devices[1]: Duplicate value: "gpu-0"'),
    (lambda s: s["spec"]["devices"][0].update(name="1g.10gb"), 'spec.devices[0].name: Invalid value: "1g.10gb": must not contain dots'),
    (lambda s: s["spec"]["devices"][0].update(attributes={"a": {}}),
     'spec.devices[0].attributes[a]: Invalid value: "": exactly one value must be specified'),
    (lambda s: s["spec"]["devices"][0].update(attributes={"v": {"version": "1.0"}}),
     'spec.devices[0].attributes[v].version: Invalid value: "1.0": must be a string compatible with semver.org spec 2.0.0'),
    (lambda s: s["spec"]["devices"][0].update(attributes={"s": {"string": "x" * 65}}),
     "spec.devices[0].attributes[s].string: Too long: may not be more than 64 bytes"),
    (lambda s: s["spec"]["devices"][0].update(attributes={"a/b/c": {"int": 1}}),
     'spec.devices[0].attributes: Invalid value: "a/b/c": must not contain more than one slash'),
    (lambda s: s["spec"]["devices"][0].update(attributes={f"a{i}": {"int": i} for i in range(33)}),
     "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"),
    (lambda s: s["spec"]["devices"][0].update(taints=[{"key": "k", "effect": "Later"}]),
     'spec.devices[0].taints[0].effect: Unsupported value: "Later"'),
    (lambda s: s["spec"]["devices"][0].update(capacity={"m": {"value": "1", "requestPolicy": {"default": "1"}}}),
     "spec.devices[0].capacity[m].requestPolicy: Forbidden: allowMultipleAllocations must be true"),
    (lambda s: s["spec"]["devices"][0].update(consumesCounters=[{"counterSet": "a", "counters": {"m": {"value": "1"}}}] * 2),
     'spec.devices[0].consumesCounters[1]: Duplicate value: "a"'),
    (lambda s: s["spec"]["devices"][0].update(nodeName="node-1"),
     "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true"),
    (lambda s: s["spec"]["devices"].extend({"name": f"d{i}", "taints": [{"key": "k", "effect": "NoSchedule"}]} for i in range(64)),
     "spec.devices: Too many: 65: must have at most 64 items"),
    (lambda s: s["spec"].update(skipNodeOperations=["NodePrepareResources"]),
     "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"),
])
def test_slice_rules(mutate, message):
    obj = resource_slice()
    mutate(obj)
    assert message in refusal("ResourceSlice", obj)


def test_counter_sets():
    """validateCounterSet: DNS label names, at least one counter, 8 sets at most."""
    obj = resource_slice(sharedCounters=[{"name": "Set", "counters": {}}] + [{"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(8)])
    del obj["spec"]["devices"]
    assert "spec.sharedCounters: Too many: 9: must have at most 8 items" in refusal("ResourceSlice", obj)
    obj["spec"]["sharedCounters"] = obj["spec"]["sharedCounters"][:2]
    message = refusal("ResourceSlice", obj)
    assert 'spec.sharedCounters[0].name: Invalid value: "Set"' in message and "spec.sharedCounters[0].counters: Required value" in message


def test_slice_updates_keep_pool_driver_and_node():
    """validateResourceSliceSpec with an old spec: pool name, driver and nodeName are immutable."""
    old = stored("ResourceSlice", resource_slice())
    moved = resource_slice(nodeName="node-2")
    assert 'spec.nodeName: Invalid value: "node-2": field is immutable' in refusal("ResourceSlice", moved, old)
