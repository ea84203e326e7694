"""The local store's file format (JSON for slices, YAML otherwise) and its batched writes."""

import json

import pytest
import yaml

from driver.errors import InputError
from driver.store import ObjectStore


def slice_obj(name="00000-d-n1"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "d", "nodeName": "n1", "pool": {"name": "n1"}, "devices": [{"name": "gpu-0"}]}}


def test_slices_are_one_line_of_json_that_yaml_readers_read_too(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceslices", slice_obj())
    text = (tmp_path / "resourceslices" / "_cluster" / "00000-d-n1.yaml").read_text()
    assert text.startswith("{") and text.count("\n") == 1
    assert json.loads(text) == yaml.safe_load(text) == store.get("resourceslices", None, "00000-d-n1")
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"}}
    store.create("resourceclaims", claim)
    assert (tmp_path / "resourceclaims" / "default" / "c.yaml").read_text().startswith("apiVersion: resource.k8s.io/v1\n")


@pytest.mark.parametrize("text, message", [
    ("{" + '"a":[' * 150 + "1" + "]" * 150 + "}", "nests more than 100 levels deep"),
    ("{" + '"a":[' * 5000 + "1" + "]" * 5000 + "}", "nests more than 100 levels deep"),
    ("{ not json, nor yaml", "invalid YAML"),
], ids=["deep-150", "deep-5000", "garbage"])
def test_hostile_json_files_are_an_error_naming_the_file(tmp_path, text, message):
    store = ObjectStore(tmp_path)
    path = tmp_path / "resourceslices" / "_cluster" / "bad.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        store.get("resourceslices", None, "bad")
    assert "bad.yaml" in str(info.value)
    assert store.list("resourceslices") == []  # left out with a warning, never a crash


def test_a_duplicate_key_in_a_json_file_keeps_the_last_value_as_go_decoders_do(tmp_path):
    store = ObjectStore(tmp_path)
    path = tmp_path / "resourceslices" / "_cluster" / "dup.yaml"
    path.parent.mkdir(parents=True)
    path.write_text('{"metadata": {"name": "first"}, "metadata": {"name": "dup"}}')
    assert store.get("resourceslices", None, "dup")["metadata"] == {"name": "dup"}


def test_flow_style_yaml_that_is_not_json_still_reads(tmp_path):
    store = ObjectStore(tmp_path)
    path = tmp_path / "resourceclaims" / "default" / "c.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c, namespace: default}}\n")
    assert store.get("resourceclaims", "default", "c")["metadata"]["name"] == "c"


def test_a_batch_hands_out_increasing_versions_and_persists_the_counter(tmp_path):
    store = ObjectStore(tmp_path)
    before = int(store.create("resourceslices", slice_obj("a"))["metadata"]["resourceVersion"])
    with store.batch():
        versions = [int(store.create("resourceslices", slice_obj(f"s{i}"))["metadata"]["resourceVersion"])
                    for i in range(5)]
        # Reserved ahead while the batch runs: a crash now cannot make the next writer reuse one.
        assert int(store.current_resource_version()) > versions[-1]
        store.delete("resourceslices", None, "s0")
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


@pytest.mark.parametrize("syncfs", [True, False], ids=["syncfs-once", "fsync-each"])
def test_a_batch_is_durable_either_way(tmp_path, monkeypatch, syncfs):
    import driver.store.objectstore as objectstore

    calls = {"syncfs": 0, "fsync": 0}
    monkeypatch.setattr(objectstore, "can_sync_filesystem", lambda: syncfs)
    monkeypatch.setattr(objectstore, "sync_filesystem", lambda root: calls.__setitem__("syncfs", calls["syncfs"] + 1) or True)
    real = objectstore.atomic_write

    def counting(path, data, mode, sync_dir=True, fsync=True):
        calls["fsync"] += int(fsync)
        return real(path, data, mode, sync_dir=sync_dir, fsync=fsync)

    monkeypatch.setattr(objectstore, "atomic_write", counting)
    store = ObjectStore(tmp_path)
    with store.batch():
        for i in range(10):
            store.create("resourceslices", slice_obj(f"s{i}"))
    object_fsyncs = calls["fsync"] - 2  # the counter file: reserved ahead, then the final value
    assert (calls["syncfs"], object_fsyncs) == ((1, 0) if syncfs else (0, 10))
    assert len(store.list("resourceslices")) == 10
