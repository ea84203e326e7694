"""Strict decoding with the Go decoders' messages (driver.personality.gojson), every error path.

Messages: k8s.io/apimachinery runtime/serializer/json (missing Kind/apiVersion, unregistered kind,
"strict decoding error: unknown field"), encoding/json ("json: cannot unmarshal <type> into Go
struct field <Struct>.<path> of type <type>"), resource.Quantity's parse error.
"""

from __future__ import annotations

import pytest

from driver.personality.gojson import BOOL, INT, QUANTITY, QUANTITY_ERROR, STRING, DecodeError, MapOf, Scheme, Struct

INNER = Struct("Inner", {"n": INT, "flag": BOOL, "limits": MapOf(QUANTITY, "v1.Limits")})
SCHEME = Scheme("example.com/v1", {"Thing": Struct("Thing", {"name": STRING, "size": QUANTITY, "inner": INNER}),
                                   "Loose": None}, "example.com/api.go:1")


def decode(params):
    return SCHEME.decode(params)


def test_a_valid_object_decodes_with_canonical_quantities_and_nulls_dropped() -> None:
    kind, fields = decode({"apiVersion": "example.com/v1", "kind": "Thing", "name": "x", "size": "1024Mi",
                           "inner": {"n": 3, "flag": None, "limits": {"0": 1073741824}}})
    # A bare number is a DecimalSI quantity, canonical as such.
    assert kind == "Thing" and fields == {"name": "x", "size": "1Gi", "inner": {"n": 3, "limits": {"0": "1073741824"}}}


@pytest.mark.parametrize(("params", "message"), [
    ("text", "Object 'Kind' is missing in '\"text\"'"),
    ({"apiVersion": "example.com/v1"}, "Object 'Kind' is missing in '{\"apiVersion\":\"example.com/v1\"}'"),
    ({"kind": "Thing"}, "Object 'apiVersion' is missing in '{\"kind\":\"Thing\"}'"),
    ({"apiVersion": "example.com/v2", "kind": "Thing"},
     'no kind "Thing" is registered for version "example.com/v2" in scheme "example.com/api.go:1"'),
    ({"apiVersion": "example.com/v1", "kind": "Other"}, 'no kind "Other" is registered'),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "Name": "x", "inner": {"m": 1}},
     'strict decoding error: unknown field "Name", unknown field "inner.m"'),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "inner": {"n": "3"}},
     "json: cannot unmarshal string into Go struct field Inner.inner.n of type int"),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "inner": {"n": 1.5}},
     "json: cannot unmarshal number 1.5 into Go struct field Inner.inner.n of type int"),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "inner": {"flag": "yes"}},
     "json: cannot unmarshal string into Go struct field Inner.inner.flag of type bool"),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "inner": []},
     "json: cannot unmarshal array into Go struct field Thing.inner of type Inner"),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "inner": {"limits": ["1Gi"]}},
     "json: cannot unmarshal array into Go struct field Inner.inner.limits of type v1.Limits"),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "size": "ten"}, QUANTITY_ERROR),
    ({"apiVersion": "example.com/v1", "kind": "Thing", "name": 7}, "json: cannot unmarshal number into Go struct field"),
])
def test_errors_carry_the_go_messages(params, message) -> None:
    with pytest.raises(DecodeError) as err:
        decode(params)
    assert message in str(err.value)


def test_a_type_error_wins_over_unknown_fields() -> None:
    """The serializer returns the unmarshal error before it reports strict (unknown-field) errors."""
    with pytest.raises(DecodeError, match="cannot unmarshal"):
        decode({"apiVersion": "example.com/v1", "kind": "Thing", "bogus": 1, "inner": {"n": "x"}})


def test_a_registered_kind_without_a_model_decodes_leniently() -> None:
    assert decode({"apiVersion": "example.com/v1", "kind": "Loose", "spec": {"a": 1}}) == ("Loose", {"spec": {"a": 1}})
