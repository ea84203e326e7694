"""How the local store encodes objects: compact JSON rows in the database; in exported (and
imported) files, slices as one line of JSON and the rest as YAML; and revisions within a batch."""

import json

import pytest
import yaml

from driver.errors import InputError
from driver.store import ObjectStore
from tests.storeutil import connect, plant_file, plant_row


def slice_obj(name="00000-d-n1"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "d", "nodeName": "n1", "pool": {"name": "n1"}, "devices": [{"name": "gpu-0"}]}}


def test_exported_slices_are_one_line_of_json_that_yaml_readers_read_too(tmp_path):
    store = ObjectStore(tmp_path / "s")
    store.create("resourceslices", slice_obj())
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"}}
    store.create("resourceclaims", claim)
    from driver.store.legacy import export_layout

    assert export_layout(store, tmp_path / "out") == 2
    text = (tmp_path / "out" / "resourceslices" / "_cluster" / "00000-d-n1.yaml").read_text()
    assert text.startswith("{") and text.count("\n") == 1
    assert json.loads(text) == yaml.safe_load(text) == store.get("resourceslices", None, "00000-d-n1")
    assert (tmp_path / "out" / "resourceclaims" / "default" / "c.yaml").read_text().startswith("apiVersion: resource.k8s.io/v1\n")


@pytest.mark.parametrize("text, message", [
    ('{"metadata": {"name": "bad"}, "spec": ' + '{"a":[' * 150 + "1" + "]}" * 150 + "}", "nests more than 100 levels deep"),
    ("{" + '"a":[' * 5000 + "1" + "]" * 5000 + "}", "its stored JSON does not parse"),
    ("{ not json", "its stored JSON does not parse"),
], ids=["deep-150", "deep-5000", "garbage"])
def test_hostile_json_rows_are_an_error_naming_the_object(tmp_path, text, message):
    store = ObjectStore(tmp_path)
    store.create("resourceslices", slice_obj("bad"))
    plant_row(tmp_path, "resourceslices", None, "bad", text)
    with pytest.raises(InputError, match=message) as info:
        store.get("resourceslices", None, "bad")
    assert "resourceslices bad" in str(info.value)
    assert store.list("resourceslices") == []  # left out with a warning, never a crash


def test_a_duplicate_key_in_a_json_row_keeps_the_last_value_as_go_decoders_do(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceslices", slice_obj("dup"))
    plant_row(tmp_path, "resourceslices", None, "dup", '{"metadata": {"name": "first"}, "metadata": {"name": "dup"}, '
                                                       '"spec": {"driver": "d", "pool": {"name": "p", "generation": 1, '
                                                       '"resourceSliceCount": 1}, "allNodes": true}}')
    assert store.get("resourceslices", None, "dup")["metadata"] == {"name": "dup"}


def test_flow_style_yaml_that_is_not_json_still_imports(tmp_path):
    plant_file(tmp_path, "resourceclaims", "default", "c",
               "{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c, namespace: default}}\n")
    assert ObjectStore(tmp_path).get("resourceclaims", "default", "c")["metadata"]["name"] == "c"


def test_a_batch_hands_out_consecutive_versions_committed_at_its_end(tmp_path):
    store = ObjectStore(tmp_path)
    before = int(store.create("resourceslices", slice_obj("a"))["metadata"]["resourceVersion"])
    with store.batch():
        versions = [int(store.create("resourceslices", slice_obj(f"s{i}"))["metadata"]["resourceVersion"])
                    for i in range(5)]
        store.delete("resourceslices", None, "s0")
        assert ObjectStore(tmp_path).current_resource_version() == str(before)  # others see it at commit
    assert versions == list(range(before + 1, before + 6))
    assert int(store.current_resource_version()) == before + 6
    after = int(store.create("resourceslices", slice_obj("b"))["metadata"]["resourceVersion"])
    assert after == before + 7
    assert sorted(s["metadata"]["name"] for s in store.list("resourceslices")) == ["a", "b", "s1", "s2", "s3", "s4"]


def test_writes_leave_the_callers_object_alone(tmp_path):
    store = ObjectStore(tmp_path)
    obj = slice_obj()
    stored = store.create("resourceslices", obj)
    assert "uid" not in obj["metadata"] and stored["metadata"]["uid"]
    stored["metadata"]["labels"] = {"x": "y"}
    assert "labels" not in obj["metadata"]


def test_a_commit_is_durable_when_it_returns(tmp_path):
    """WAL with synchronous=FULL: SQLite fsyncs the log at every commit (one per batch)."""
    store = ObjectStore(tmp_path)
    store.create("resourceslices", slice_obj())
    conn = store._db.connection(create=False)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert connect(tmp_path).execute("SELECT count(*) FROM objects").fetchone()[0] == 1
