"""driver.schema: kube-apiserver's strict decoding checks, with paths, did-you-means and gated fields."""

from __future__ import annotations

import copy

import pytest

from driver import schema
from driver.errors import InputError
from driver.features import Features

OFF = Features()  # KEP-5941 off: the 1.37 schema as is
ON = Features.all_on()
HINT = "turn it on with --features DRASharedConsumableCapacity=true"


def claim(**exactly):
    base = {"deviceClassName": "mig.example.com",
            "selectors": [{"cel": {"expression": 'device.attributes["x"].profile == "1g.5gb"'}}]}
    base.update(exactly)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": base}]}}}


def device_class(spec):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": spec}


def vf_slice(counter):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "vf-0", "capacity": {"bandwidth": {"value": "10G"}},
                                  "consumesCounters": [{"counterSet": "pf", "counters": {"bandwidth": counter}}]}]}}


def counter_set_slice(counter):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "sharedCounters": [{"name": "pf", "counters": {"bandwidth": counter}}]}}


def allocated(result_extra):
    obj = claim()
    obj["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "d.example.com", "pool": "n1", "device": "vf-0", **result_extra}]}}}
    return obj


def messages(obj, kind, features=OFF, **kw):
    return [str(e) for e in schema.errors(obj, kind, features, **kw)]


# -- the typos -------------------------------------------------------------------------

def test_selector_for_selectors_in_a_claim_is_an_error_with_path_and_did_you_mean():
    obj = claim()
    obj["spec"]["devices"]["requests"][0]["exactly"]["selector"] = obj["spec"]["devices"]["requests"][0]["exactly"].pop("selectors")
    with pytest.raises(InputError) as err:
        schema.validate(obj, "ResourceClaim", OFF, "claim.yaml: document 1 (ResourceClaim default/c)")
    assert str(err.value) == ('claim.yaml: document 1 (ResourceClaim default/c): spec.devices.requests[0].exactly.selector: '
                              'unknown field "selector" (did you mean "selectors"?)')


def test_selector_for_selectors_in_a_device_class_is_an_error():
    assert messages(device_class({"selector": [{"cel": {"expression": "true"}}]}), "DeviceClass") == [
        'spec.selector: unknown field "selector" (did you mean "selectors"?)']


def test_a_misplaced_field_points_to_where_it_belongs():
    obj = claim()
    request = obj["spec"]["devices"]["requests"][0]
    request["deviceClassName"] = request["exactly"].pop("deviceClassName")  # the v1beta1 shape
    assert messages(obj, "ResourceClaim") == [
        "spec.devices.requests[0].exactly.deviceClassName: Required value",
        'spec.devices.requests[0].deviceClassName: unknown field "deviceClassName" (did you mean "exactly.deviceClassName"?)']


def test_case_slips_and_unrelated_names():
    assert messages(device_class({"Selectors": []}), "DeviceClass") == [
        'spec.Selectors: unknown field "Selectors" (did you mean "selectors"?)']
    assert messages(device_class({"colour": "red"}), "DeviceClass") == ['spec.colour: unknown field "colour"']


# -- types, formats, enums, required ---------------------------------------------------------

@pytest.mark.parametrize(("change", "expected"), [
    ({"count": "2"}, "spec.devices.requests[0].exactly.count: expected integer, got string '2'"),
    ({"count": 2.0}, "spec.devices.requests[0].exactly.count: expected integer, got number 2.0"),
    ({"count": True}, "spec.devices.requests[0].exactly.count: expected integer, got boolean True"),
    ({"count": 2**63}, "spec.devices.requests[0].exactly.count: 9223372036854775808 does not fit in 64 bits"),
    ({"adminAccess": "yes"}, "spec.devices.requests[0].exactly.adminAccess: expected boolean, got string 'yes'"),
    ({"selectors": {"cel": {}}}, "spec.devices.requests[0].exactly.selectors: expected list, got object"),
    ({"selectors": ["x"]}, "spec.devices.requests[0].exactly.selectors[0]: expected object, got string 'x'"),
    ({"allocationMode": "Exact"},
     'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Exact": supported values: "All", "ExactCount"'),
    ({"tolerations": [{"operator": "In"}]},
     'spec.devices.requests[0].exactly.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"'),
    ({"capacity": {"requests": {"memory": "lots"}}},
     "spec.devices.requests[0].exactly.capacity.requests[memory]: invalid quantity 'lots'"),
    ({"capacity": {"requests": {"memory": [1]}}},
     "spec.devices.requests[0].exactly.capacity.requests[memory]: expected a quantity (a string such as '40Gi', or a number), got list"),
    ({"capacity": {"requests": {5: "1"}}}, "spec.devices.requests[0].exactly.capacity.requests[5]: map keys must be strings, got integer"),
    ({"deviceClassName": None}, "spec.devices.requests[0].exactly.deviceClassName: Required value (null given)"),
    ({"selectors": [None]}, None),  # null list items are allowed where the schema says so
])
def test_type_and_value_errors(change, expected):
    got = messages(claim(**change), "ResourceClaim")
    if expected is None:
        assert got == []
    else:
        assert len(got) == 1 and got[0].startswith(expected), got


def test_an_empty_enum_value_means_unset():
    assert messages(claim(allocationMode=""), "ResourceClaim") == []


def test_quantities_as_numbers_and_int_or_string():
    assert messages(claim(capacity={"requests": {"memory": 1024}}), "ResourceClaim") == []
    assert messages(claim(capacity={"requests": {"memory": 1.5}}), "ResourceClaim") == []
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                                    "livenessProbe": {"httpGet": {"port": "http"}}}]}}
    assert messages(pod, "Pod") == []
    pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"] = ["http"]
    assert messages(pod, "Pod") == [
        "spec.containers[0].livenessProbe.httpGet.port: expected integer or string, got list"]


def test_required_fields_and_objects_that_are_not_objects():
    assert messages({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}, "Pod") == [
        "spec.containers: Required value"]
    assert messages({"kind": "Node", "metadata": {"name": "n", 7: "x"}}, "Node") == [
        "metadata[7]: field names must be strings, got integer 7"]
    assert messages({"kind": "Node", "metadata": {"name": "n", "annotations": {"a": {"b": 1}}}}, "Node") == [
        "metadata.annotations[a]: expected string, got object"]
    assert messages(["not", "an", "object"], "Node") == ["expected an object, got list"]


def test_free_form_objects_take_any_object_but_only_objects():
    obj = claim()
    obj["spec"]["devices"]["config"] = [{"opaque": {"driver": "d.example.com", "parameters": {"any": {"thing": [1, 2]}}}}]
    assert messages(obj, "ResourceClaim") == []
    obj["spec"]["devices"]["config"][0]["opaque"]["parameters"] = "text"
    assert messages(obj, "ResourceClaim") == ["spec.devices.config[0].opaque.parameters: expected object, got string 'text'"]


def test_many_errors_are_counted_not_all_shown():
    spec = {f"field{i}": i for i in range(30)}
    with pytest.raises(InputError) as err:
        schema.validate(device_class(spec), "DeviceClass", OFF, "f.yaml")
    text = str(err.value)
    assert text.count("unknown field") == 5 and text.endswith("and 15+ more")
    assert len(schema.errors(device_class(spec), "DeviceClass", OFF)) == 20


def test_unknown_kind_is_a_caller_error():
    with pytest.raises(InputError, match="StatefulSet: not a kind fake-dra validates"):
        schema.validate({}, "StatefulSet", OFF)


# -- KEP-5941: known with its gate on, unknown (with a hint) otherwise ------------------------

def test_value_from_is_known_only_with_the_gate_on():
    obj = vf_slice({"valueFrom": {"capacityName": "d.example.com/bandwidth"}})
    assert messages(obj, "ResourceSlice", ON) == []
    assert messages(obj, "ResourceSlice", OFF, gate_hint=HINT) == [
        'spec.devices[0].consumesCounters[0].counters[bandwidth].valueFrom: unknown field "valueFrom" '
        f"(a KEP-5941 field: DRASharedConsumableCapacity is off; {HINT})",
        "spec.devices[0].consumesCounters[0].counters[bandwidth].value: Required value"]


def test_the_gate_hint_is_said_once():
    obj = vf_slice({"valueFrom": {"capacityName": "bw"}})
    obj["spec"]["devices"].append(copy.deepcopy(obj["spec"]["devices"][0]) | {"name": "vf-1"})
    got = messages(obj, "ResourceSlice", OFF, gate_hint=HINT)
    assert sum(HINT in m for m in got) == 1 and sum("DRASharedConsumableCapacity is off" in m for m in got) == 2


@pytest.mark.parametrize(("counter", "expected"), [
    ({"value": "1G"}, []),
    ({"valueFrom": {"capacityKey": "bw"}}, []),  # the KEP text's former name
    ({"value": "1G", "valueFrom": {"capacityName": "bw"}},
     ["spec.devices[0].consumesCounters[0].counters[bandwidth]: must set exactly one of value, valueFrom (both are set)"]),
    ({}, ["spec.devices[0].consumesCounters[0].counters[bandwidth]: must set exactly one of value, valueFrom (neither is set)"]),
    ({"valueFrom": {}},
     ["spec.devices[0].consumesCounters[0].counters[bandwidth].valueFrom: must set exactly one of capacityName, capacityKey (neither is set)"]),
    ({"valueFrom": {"capacity": "bw"}},
     ['spec.devices[0].consumesCounters[0].counters[bandwidth].valueFrom.capacity: unknown field "capacity" (did you mean "capacityKey"?)',
      "spec.devices[0].consumesCounters[0].counters[bandwidth].valueFrom: must set exactly one of capacityName, capacityKey (neither is set)"]),
    ({"requestPolicy": {"default": "1G"}, "value": "1G"},
     ['spec.devices[0].consumesCounters[0].counters[bandwidth].requestPolicy: unknown field "requestPolicy"']),
])
def test_consumed_counter_shapes_with_the_gate_on(counter, expected):
    assert messages(vf_slice(counter), "ResourceSlice", ON) == expected


def test_shared_counters_take_a_request_policy_with_the_gate_on_only():
    obj = counter_set_slice({"value": "100G", "requestPolicy": {"default": "10G", "validRange": {"min": "1G", "step": "100M"}}})
    assert messages(obj, "ResourceSlice", ON) == []
    assert messages(obj, "ResourceSlice", OFF) == [
        'spec.sharedCounters[0].counters[bandwidth].requestPolicy: unknown field "requestPolicy" '
        "(a KEP-5941 field: DRASharedConsumableCapacity is off)"]
    bad = counter_set_slice({"value": "100G", "requestPolicy": {"validRange": {"minimum": "1G"}}})
    assert messages(bad, "ResourceSlice", ON) == [
        'spec.sharedCounters[0].counters[bandwidth].requestPolicy.validRange.minimum: unknown field "minimum" (did you mean "min"?)',
        "spec.sharedCounters[0].counters[bandwidth].requestPolicy.validRange.min: Required value"]
    assert messages(counter_set_slice({"requestPolicy": {}}), "ResourceSlice", ON) == [
        "spec.sharedCounters[0].counters[bandwidth].value: Required value"]


def test_consumed_counters_in_results():
    recorded = {"consumedCounters": [{"counterSet": "pf", "counters": {"bandwidth": {"value": "40G"}}}]}
    assert messages(allocated(recorded), "ResourceClaim", ON) == []
    assert messages(allocated(recorded), "ResourceClaim", OFF) == [
        'status.allocation.devices.results[0].consumedCounters: unknown field "consumedCounters" '
        "(a KEP-5941 field: DRASharedConsumableCapacity is off)"]
    plain = {"consumedCounters": [{"counterSet": "pf", "counters": {"bandwidth": "40G"}}]}
    assert messages(allocated(plain), "ResourceClaim", ON) == [
        "status.allocation.devices.results[0].consumedCounters[0].counters[bandwidth]: expected object, got string '40G'"]


def test_an_update_keeps_the_gated_fields_the_stored_object_has():
    stored = allocated({"consumedCounters": [{"counterSet": "pf", "counters": {"bandwidth": {"value": "40G"}}}]})
    updated = copy.deepcopy(stored)
    updated["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u"}]
    assert schema.gates_in_use(stored, "ResourceClaim") == {"DRASharedConsumableCapacity"}
    assert messages(updated, "ResourceClaim", OFF, old=stored) == []  # dropDisabledFields keeps fields in use
    assert messages(updated, "ResourceClaim", OFF, old=claim()) != []  # a new use is still refused


def test_the_1_37_alpha_fields_are_always_known():
    obj = vf_slice({"value": "1G"})
    obj["spec"]["devices"][0]["consumesCounters"][0]["compatibilityGroups"] = ["mig"]
    obj["spec"]["devices"][0]["attributes"] = {"ids": {"ints": [1, 2]}}
    no_alpha = Features(compatibility_groups=False, list_type_attributes=False)
    assert messages(obj, "ResourceSlice", no_alpha) == []


# -- the one apiVersion rule ------------------------------------------------------------------

@pytest.mark.parametrize(("api_version", "kind", "expected"), [
    ("resource.k8s.io/v1", "ResourceClaim", "ResourceClaim"),
    ("v1", "Pod", "Pod"),
    ("apps/v1", "Deployment", "Deployment"),  # a workload kind the local store keeps
    ("apps/v1", "StatefulSet", None),  # not a kind fake-dra reads: the caller decides
])
def test_served_api_versions(api_version, kind, expected):
    assert schema.check_api_version({"apiVersion": api_version, "kind": kind}, "f.yaml") == expected


@pytest.mark.parametrize(("obj", "message"), [
    ({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim"},
     "f.yaml: apiVersion: resource.k8s.io/v1beta1 is not served by a Kubernetes 1.37 kube-apiserver by default (beta and "
     "alpha API versions are off unless --runtime-config enables them): write ResourceClaim as resource.k8s.io/v1; in v1 a "
     "request's deviceClassName, selectors, allocationMode, count, adminAccess, tolerations and capacity go under `exactly:`"),
    ({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice"},
     "without the `basic:` wrapper"),
    ({"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceClass"},
     "f.yaml: apiVersion: resource.k8s.io/v1beta2 is not served by a Kubernetes 1.37 kube-apiserver by default (beta and "
     "alpha API versions are off unless --runtime-config enables them): write DeviceClass as resource.k8s.io/v1"),
    ({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceSlice"}, "write ResourceSlice as resource.k8s.io/v1"),
    ({"apiVersion": "v1", "kind": "ResourceClaim"}, "f.yaml: apiVersion: 'v1' does not serve ResourceClaim; use resource.k8s.io/v1"),
    ({"apiVersion": "resource.k8s.io/v1", "kind": "Node"}, "apiVersion: 'resource.k8s.io/v1' does not serve Node; use v1"),
    ({"kind": "ResourceClaim"}, "f.yaml: apiVersion: required (a ResourceClaim is resource.k8s.io/v1)"),
    ({"apiVersion": "resource.k8s.io/v1"}, "f.yaml: kind: required"),
    ({"apiVersion": "resource.k8s.io/v1", "kind": ["ResourceClaim"]}, "f.yaml: kind: expected a string, got list"),
])
def test_unserved_api_versions_are_refused_saying_what_to_write(obj, message):
    with pytest.raises(InputError) as err:
        schema.check_api_version(obj, "f.yaml")
    assert message in str(err.value)


def test_check_is_the_api_version_rule_then_the_schema():
    assert schema.check(claim(), OFF, "f.yaml") == "ResourceClaim"
    assert schema.check({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"anything": 1}}, OFF, "f.yaml") is None
    with pytest.raises(InputError, match=r"^f.yaml: spec.bogus: unknown field"):
        schema.check(device_class({"bogus": 1}), OFF, "f.yaml")


def test_int32_fields_and_non_finite_quantities():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c"}], "priority": 2**31}}
    assert messages(pod, "Pod") == ["spec.priority: 2147483648 does not fit in 32 bits"]
    got = messages(claim(capacity={"requests": {"memory": float("inf")}}), "ResourceClaim")
    assert len(got) == 1 and got[0].startswith("spec.devices.requests[0].exactly.capacity.requests[memory]: invalid quantity 'inf'")


def test_number_fields_take_ints_and_floats_but_not_booleans():
    """No 1.37 type this project reads has a plain number field; the grammar supports one anyway."""
    from driver.schema.compact import NUM, Field, TypeNode
    from driver.schema.validator import walk

    node = TypeNode("synthetic.Number", {"ratio": Field(NUM, True)})
    assert walk(node, {"ratio": 0.5}, frozenset(), None)[0] == [] and walk(node, {"ratio": 2}, frozenset(), None)[0] == []
    assert [str(e) for e in walk(node, {"ratio": True}, frozenset(), None)[0]] == ["ratio: expected number, got boolean True"]
