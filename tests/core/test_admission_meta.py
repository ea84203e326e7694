"""Object metadata, field errors and name formats as kube-apiserver words them (driver.store.admission).

Each case names the upstream function whose rule and message it checks.
"""

from __future__ import annotations

import pytest

from driver.store.admission import names
from driver.store.admission.field import forbidden, go_quote, invalid, invalid_message, not_found, not_supported, too_long
from tests.core.admission_helpers import claim, device_class, pod, refusal, with_meta


def test_errors_print_as_field_error_list_prints_them():
    """apimachinery pkg/util/validation/field/errors.go: Error.Error and ErrorBody."""
    assert str(invalid("spec.replicas", -1, "must be greater than or equal to 0")) == \
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    assert str(not_found("spec.x[0]", "gpus", "d")) == 'spec.x[0]: Not found: "gpus": d'
    assert str(forbidden("spec", "no")) == "spec: Forbidden: no"  # Forbidden, Required, Too long: no value
    assert str(too_long("metadata.annotations", 262144)) == "metadata.annotations: Too long: may not be more than 262144 bytes"
    assert str(not_supported("a", "x", ["Equal", "Exists"])) == 'a: Unsupported value: "x": supported values: "Equal", "Exists"'
    assert str(invalid("a", {"b": 1, "a": "<"}, "d")) == 'a: Invalid value: {"a":"\\u003c","b":1}: d'
    assert go_quote('a"b\n\x01é') == '"a\\"b\\n\\x01é"'


def test_a_list_of_errors_reads_as_kubectl_prints_a_422():
    """kubectl StandardErrorMessage over apierrors.NewInvalid; ErrorList.ToAggregate drops duplicates."""
    one = invalid("a", 1, "x")
    assert invalid_message("Pod", "p", [one]) == 'The Pod "p" is invalid: a: Invalid value: 1: x'
    assert invalid_message("Pod", "p", [one, one, forbidden("b", "y")]) == \
        'The Pod "p" is invalid: [a: Invalid value: 1: x, b: Forbidden: y]'


@pytest.mark.parametrize(("check", "value", "message"), [
    # apimachinery pkg/util/validation IsDNS1123Label / IsDNS1123Subdomain / IsDNS1035Label
    (names.is_dns1123_label, "a.b", "must not contain dots"),
    (names.is_dns1123_label, "A", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                                  "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                                  "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    (names.is_dns1123_label, "a" * 64, "must be no more than 63 characters"),
    (names.is_dns1123_subdomain, "a" * 254, "must be no more than 253 characters"),
    (names.is_dns1035_label, "1a", "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                   "with an alphabetic character"),
    # apimachinery pkg/api/validate/content IsLabelKey (IsQualifiedName), IsLabelValue, IsCIdentifier
    (names.is_qualified_name, "x/y/z", "a valid label key must consist of alphanumeric characters"),
    (names.is_qualified_name, "/x", "prefix part must be non-empty"),
    (names.is_qualified_name, "Bad_Prefix/x", "prefix part a lowercase RFC 1123 subdomain"),
    (names.is_qualified_name, "x/", "name part must be non-empty"),
    (names.is_qualified_name, "a" * 64, "name part must be no more than 63 bytes"),
    (names.is_label_value, "a b", "a valid label must be an empty string or consist of alphanumeric characters"),
    (names.is_label_value, "a" * 64, "must be no more than 63 bytes"),
    (names.is_c_identifier, "1x", "a valid C identifier must start with alphabetic character or '_'"),
])
def test_name_formats(check, value, message):
    found = check(value)
    assert any(message in m for m in found), found


def test_generate_name_may_end_with_a_dash():
    """apimachinery pkg/api/validation/generic.go maskTrailingDash (NameIsDNSSubdomain with prefix)."""
    assert names.name_is_dns_subdomain("web-", True) == []
    assert names.name_is_dns_subdomain("web-", False) != []


def test_labels_are_checked_on_every_kind():
    """apimachinery pkg/apis/meta/v1/validation ValidateLabels: key and value, reported at the map."""
    for kind, obj in (("Pod", pod()), ("ResourceClaim", claim()), ("DeviceClass", device_class())):
        message = refusal(kind, with_meta(obj, labels={"x/y/z": "ok", "team": "ml ops"}))
        assert 'metadata.labels: Invalid value: "x/y/z": a valid label key' in message
        assert 'metadata.labels: Invalid value: "ml ops": a valid label must be an empty string' in message


def test_annotation_keys_and_total_size():
    """apimachinery ValidateAnnotations: keys are qualified names (lower-cased), 256 KiB in total."""
    assert 'metadata.annotations: Invalid value: "bad key!": name part must consist of' in refusal(
        "Pod", with_meta(pod(), annotations={"bad key!": "v"}))
    assert refusal("Pod", with_meta(pod(), annotations={"Example.COM/Upper": "v"})) == ""
    big = {f"k{i}": "x" * 1024 for i in range(257)}
    assert "metadata.annotations: Too long: may not be more than 262144 bytes" in refusal("Pod", with_meta(pod(), annotations=big))


def test_names_per_kind():
    """ValidateObjectMeta's nameFn: a DNS subdomain for pods and claims, validate.LongName (content's
    wording) for DeviceClasses; generateName checked too."""
    assert 'The Pod "Bad" is invalid: metadata.name: Invalid value: "Bad": a lowercase RFC 1123 subdomain' in refusal(
        "Pod", with_meta(pod(), name="Bad"))
    assert 'metadata.generateName: Invalid value: "Web_": a lowercase RFC 1123 subdomain' in refusal(
        "Pod", with_meta(pod(), generateName="Web_"))
    long_class = with_meta(device_class(), name="a" * 254)
    assert 'metadata.name: Invalid value: "' + "a" * 254 + '": must be no more than 253 bytes' in refusal("DeviceClass", long_class)


def test_cluster_scoped_objects_have_no_namespace():
    """validateObjectMetaAccessorWithOptsCommon: Forbidden "not allowed on this type"."""
    assert "metadata.namespace: Forbidden: not allowed on this type" in refusal(
        "DeviceClass", with_meta(device_class(), namespace="default"))


def test_owner_references():
    """apimachinery validateOwnerReference / ValidateOwnerReferences (BannedOwners, one controller)."""
    refs = [{"apiVersion": "", "kind": "", "name": "", "uid": ""},
            {"apiVersion": "a/b/c", "kind": "Event", "name": "e", "uid": "1"},
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1", "controller": True},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "2", "controller": True}]
    message = refusal("Pod", with_meta(pod(), ownerReferences=refs))
    assert "metadata.ownerReferences[0].apiVersion: Required value: must not be empty" in message
    assert "metadata.ownerReferences[0].uid: Required value: must not be empty" in message
    assert 'metadata.ownerReferences[1].apiVersion: Invalid value: "a/b/c": must be <group>/<version> or <version>' in message
    assert "/v1, Kind=Event is disallowed from being an owner" in message
    assert ('Only one reference can have Controller set to true. Found "true" in references for Event/e and '
            "ReplicaSet/r") in message


def test_finalizers():
    """apimachinery ValidateFinalizers and core validateKubeFinalizerName."""
    message = refusal("Pod", with_meta(pod(), finalizers=["custom", "orphan", "foregroundDeletion", "a/b/c"]))
    assert 'metadata.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified' in message
    assert "finalizer orphan and foregroundDeletion cannot be both set" in message
    assert 'metadata.finalizers: Invalid value: "a/b/c": a valid label key' in message
    assert refusal("Pod", with_meta(pod(), finalizers=["example.com/cleanup", "kubernetes"])) == ""


def test_generation_is_not_negative():
    """ValidateNonnegativeField on metadata.generation."""
    assert "metadata.generation: Invalid value: -1: must be greater than or equal to 0" in refusal(
        "Pod", with_meta(pod(), generation=-1))
