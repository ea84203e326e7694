"""Local store error paths: a lock file that is not a regular file, and a slice name with no free alternative."""

from __future__ import annotations

import os

import pytest

from driver.errors import InputError
from driver.publish.backend import SLICES, StoreSliceBackend
from driver.store import ObjectStore
from tests.storeutil import plant_row, raw_row

DRIVER = "fake-dra.example.com"


def claim(name="c1"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {}}}


def slice_obj(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}


def test_a_fifo_in_place_of_the_store_lock_is_refused_naming_it(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim("before"))
    lock = tmp_path / ".lock"
    lock.unlink()
    os.mkfifo(lock)
    with pytest.raises(InputError) as err:
        store.create("resourceclaims", claim("after"))
    assert str(err.value) == f"local store {tmp_path}: its lock file {lock} is not a regular file; remove it"
    assert not store.exists("resourceclaims", "default", "after"), "nothing written without the lock"
    assert store.get("resourceclaims", "default", "before")["metadata"]["name"] == "before"

    lock.unlink()  # what the message says to do
    store.create("resourceclaims", claim("after"))
    assert store.exists("resourceclaims", "default", "after")


def test_an_unreadable_slice_file_moves_the_slice_to_a_free_name(tmp_path):
    """The case that works (control for the next test): the broken file is left alone."""
    backend = StoreSliceBackend(ObjectStore(tmp_path))
    name = f"00000-{DRIVER}-n1"
    backend.store.create("resourceclaims", claim("opens-the-store"))
    plant_row(tmp_path, SLICES, None, name, "spec: [\n")
    created = backend.create_slice(slice_obj(name))
    assert created["metadata"]["name"] == f"{name}-1"
    assert raw_row(tmp_path, SLICES, None, name)[3] == "spec: [\n"


def test_no_free_name_for_a_slice_is_an_input_error(tmp_path):
    backend = StoreSliceBackend(ObjectStore(tmp_path))
    name = f"00000-{DRIVER}-n1"
    backend.store.create("resourceclaims", claim("opens-the-store"))
    plant_row(tmp_path, SLICES, None, name, "spec: [\n")
    for n in range(1, 1000):  # every alternative the backend tries is taken
        plant_row(tmp_path, SLICES, None, f"{name}-{n}", "")
    before = backend.store.names(SLICES)
    with pytest.raises(InputError) as err:
        backend.create_slice(slice_obj(name))
    assert str(err.value) == f"local store {tmp_path}: no free name for slice {name}"
    assert backend.store.names(SLICES) == before, "nothing was created or removed"
    assert raw_row(tmp_path, SLICES, None, name)[3] == "spec: [\n"
