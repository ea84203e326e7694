"""Field selectors in the store's terms (driver.store.fields): kube-apiserver's grammar, its fields
per kind and its refusals (apimachinery pkg/fields/selector.go; pkg/apis/core/v1/conversion.go;
pkg/registry/core/pod/strategy.go; pkg/apis/resource/v1/conversion.go)."""

from __future__ import annotations

import pytest

from driver.errors import InputError
from driver.store.fields import FieldSelectorRefused, parse_field_selector, selectable_fields
from driver.store.kinds import resolve

POD = {"metadata": {"name": "p", "namespace": "team"},
       "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "serviceAccountName": "sa", "hostNetwork": True},
       "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}], "nominatedNodeName": "n2"}}


def pods(text: str):
    return parse_field_selector(text).for_kind(resolve("pods"))


@pytest.mark.parametrize("text,matches", [
    ("", True), ("metadata.name=p", True), ("metadata.name==p", True), ("metadata.name!=p", False),
    ("metadata.namespace=team", True), ("spec.nodeName=n1,status.phase=Running", True),
    ("spec.nodeName=n1,status.phase!=Running", False), ("spec.restartPolicy=Always", True),
    ("spec.schedulerName=default-scheduler", True), ("spec.serviceAccountName=sa", True),
    ("spec.hostNetwork=true", True), ("status.podIP=10.0.0.7", True), ("status.nominatedNodeName=n2", True),
    ("spec.host=n1", True),  # the old v1 name of spec.nodeName (conversion rewrites it)
    ("status.podIPs=", True),  # accepted, never set: reads as empty (ToSelectableFields omits it)
])
def test_pod_fields_as_kube_apiserver_reads_them(text, matches):
    assert pods(text).matches(POD) is matches


def test_a_missing_field_reads_as_empty():
    bare = {"metadata": {"name": "q"}}
    assert pods("spec.nodeName=").matches(bare) and not pods("spec.nodeName!=").matches(bare)
    assert pods("spec.hostNetwork=false").matches(bare), "hostNetwork defaults to false"


def test_escaped_values_and_apimachinerys_syntax_errors():
    sel = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert sel.terms[0].value == "a,b=c\\d" and str(sel.terms[0]) == r"metadata.name=a\,b\=c\\d"
    for text, message in [("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
                          (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
                          ("a=b=c", "invalid field selector: unescaped character in value: 61"),
                          ("a=b\\", "invalid field selector: invalid escape sequence: \\")]:
        with pytest.raises(InputError) as err:
            parse_field_selector(text)
        assert str(err.value) == message


@pytest.mark.parametrize("kind,field,message", [
    ("pods", "spec.foo", "field label not supported: spec.foo"),
    ("nodes", "metadata.namespace", "field label not supported: metadata.namespace"),
    ("namespaces", "spec.finalizers", "field label not supported: spec.finalizers"),
    ("events", "message", "field label not supported: message"),
    ("resourceslices", "spec.pool.name",
     "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.name"),
    ("resourceclaims", "status.allocation",
     '"status.allocation" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("jobs", "spec.parallelism", 'field label "spec.parallelism" not supported for Job'),
    ("deployments", "spec.replicas",
     '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("deviceclasses", "spec.selectors",
     '"spec.selectors" is not a known field selector: only "metadata.name", "metadata.namespace"'),
])
def test_unsupported_fields_are_refused_with_kube_apiservers_message(kind, field, message):
    with pytest.raises(FieldSelectorRefused) as err:
        parse_field_selector(f"{field}=x").for_kind(resolve(kind))
    assert str(err.value) == message


def test_each_kinds_fields():
    assert set(selectable_fields(resolve("nodes"))) == {"metadata.name", "spec.unschedulable"}
    assert set(selectable_fields(resolve("resourceslices"))) == {"metadata.name", "spec.nodeName", "spec.driver"}
    assert set(selectable_fields(resolve("resourceclaims"))) == {"metadata.name", "metadata.namespace"}
    assert "involvedObject.name" in selectable_fields(resolve("events"))
    slice_ = {"metadata": {"name": "s"}, "spec": {"driver": "d.example.com", "nodeName": "n1"}}
    sel = parse_field_selector("spec.driver=d.example.com,spec.nodeName=n1").for_kind(resolve("resourceslices"))
    assert sel.matches(slice_) and sel.equals("spec.nodeName") == "n1" and sel.equals("metadata.name") is None
    node = {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}
    assert parse_field_selector("spec.unschedulable=true").for_kind(resolve("nodes")).matches(node)
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Scheduled",
             "source": {"component": "default-scheduler"}, "type": "Normal"}
    assert parse_field_selector("involvedObject.kind=Pod,source=default-scheduler,type=Normal").for_kind(
        resolve("events")).matches(event)
    job = {"metadata": {"name": "j", "namespace": "ns"}, "status": {"succeeded": 3}}
    assert parse_field_selector("status.successful=3").for_kind(resolve("jobs")).matches(job)
    assert parse_field_selector("status.successful=0").for_kind(resolve("jobs")).matches({"metadata": {"name": "k"}})


def test_a_selector_must_be_checked_against_a_kind_before_matching():
    with pytest.raises(ValueError, match="for_kind"):
        parse_field_selector("metadata.name=x").matches(POD)
