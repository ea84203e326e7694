"""Events in the local store: recorded once per (source, object, type, reason), counted after that."""

from __future__ import annotations

import pytest

from driver.errors import InputError
from driver.store import ObjectStore
from driver.store.events import ObjectRef, event_name, events_for, record_event

CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "gpu", "namespace": "team", "uid": "u-1"}}


def test_the_same_reason_is_counted_not_repeated(tmp_path):
    store = ObjectStore(tmp_path)
    ref = ObjectRef.of(CLAIM)
    first = record_event(store, ref, reason="FailedAllocation", message="no GPU left", now="2026-01-01T00:00:00Z")
    again = record_event(store, ref, reason="FailedAllocation", message="still none", now="2026-01-01T00:05:00Z")
    assert first["metadata"]["name"] == again["metadata"]["name"] and again["count"] == 2
    assert again["firstTimestamp"] == "2026-01-01T00:00:00Z" and again["lastTimestamp"] == "2026-01-01T00:05:00Z"
    assert again["message"] == "still none", "the newest message, as the event recorder keeps it"
    assert again["involvedObject"] == {"kind": "ResourceClaim", "name": "gpu", "namespace": "team", "uid": "u-1",
                                       "apiVersion": "resource.k8s.io/v1"}
    assert again["type"] == "Warning" and again["source"] == {"component": "fake-dra"}
    other = record_event(store, ref, reason="Prepared", message="ok", type="Normal")
    assert [e["reason"] for e in events_for(store, ref)] == ["FailedAllocation", "Prepared"]
    assert other["metadata"]["namespace"] == "team" and len(store.list("events", "team")) == 2


def test_a_recreated_object_does_not_inherit_events(tmp_path):
    store = ObjectStore(tmp_path)
    record_event(store, ObjectRef.of(CLAIM), reason="FailedAllocation", message="old")
    new = ObjectRef("ResourceClaim", "gpu", "team", uid="u-2")
    assert events_for(store, new) == []
    # An event recorded before the object had a uid (a claim apply --allocate refused) still matches.
    record_event(store, ObjectRef("ResourceClaim", "gpu", "team"), reason="FailedAllocation", message="no uid")
    assert [e["message"] for e in events_for(store, new)] == ["no uid"]


def test_cluster_scoped_objects_have_their_events_in_default(tmp_path):
    store = ObjectStore(tmp_path)
    event = record_event(store, ObjectRef("Node", "node-1"), reason="FailedScheduling", message="m")
    assert event["metadata"]["namespace"] == "default"
    assert events_for(store, ObjectRef("Node", "node-1"))[0]["reason"] == "FailedScheduling"


def test_names_stay_valid_for_long_object_names():
    ref = ObjectRef("ResourceClaim", "a" * 250 + "-b", "ns")
    name = event_name(ref, "FailedAllocation", "Warning", "fake-dra")
    assert len(name) <= 253 and not name.split(".")[0].endswith("-")


def test_bad_event_input_is_refused(tmp_path):
    with pytest.raises(InputError, match="kind and metadata.name"):
        ObjectRef.of({"metadata": {}})
    with pytest.raises(InputError, match="Normal or Warning"):
        record_event(ObjectStore(tmp_path), ObjectRef.of(CLAIM), reason="R", message="m", type="Error")


def test_a_name_taken_by_another_objects_event_gets_a_fresh_one(tmp_path):
    store = ObjectStore(tmp_path)
    ref = ObjectRef.of(CLAIM)
    squatter = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": event_name(ref, "FailedAllocation", "Warning", "fake-dra"), "namespace": "team"},
                "involvedObject": {"kind": "Pod", "name": "other", "namespace": "team"}, "reason": "X", "count": 1}
    store.create("events", squatter)
    event = record_event(store, ref, reason="FailedAllocation", message="m")
    assert event["metadata"]["name"] != squatter["metadata"]["name"] and event["count"] == 1
    assert [e["message"] for e in events_for(store, ref)] == ["m"]
