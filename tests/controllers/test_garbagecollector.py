"""The garbage collector against upstream's rules (pkg/controller/garbagecollector/garbagecollector.go:
attemptToDeleteItem, processDeletingDependentsItem, orphanDependents) and kube-apiserver's deletion
(driver.store.deletion: propagation finalizers, finalizers honoured)."""

from __future__ import annotations

import pytest

from driver.errors import InputError, NotFoundError
from driver.store import deletion


def _owner(store, name="owner"):
    return store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def _dependent(store, name, *owners, block=False, finalizers=None):
    refs = [{"apiVersion": "v1", "kind": "Node", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"],
             **({"blockOwnerDeletion": True} if block else {})} for o in owners]
    meta = {"name": name, "namespace": "default", "ownerReferences": refs}
    if finalizers:
        meta["finalizers"] = finalizers
    return store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}})


def _exists(store, resource, ns, name):
    try:
        return store.get(resource, ns, name)
    except NotFoundError:
        return None


def test_background_deletion_deletes_the_dependents_after_the_owner(store, settle):
    owner = _owner(store)
    _dependent(store, "a", owner)
    _dependent(store, "b", owner)
    assert deletion.delete(store, "nodes", None, "owner").gone
    assert _exists(store, "pods", "default", "a") is not None  # nothing happens until the collector runs
    settle(scheduler=False)
    assert store.list("pods", "default") == []


def test_a_dependent_with_another_owner_keeps_living_without_the_dangling_reference(store, settle):
    gone, kept = _owner(store, "gone"), _owner(store, "kept")
    _dependent(store, "both", gone, kept)
    deletion.delete(store, "nodes", None, "gone")
    settle(scheduler=False)
    refs = store.get("pods", "default", "both")["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["kept"]


def test_foreground_keeps_the_owner_until_blocking_dependents_are_gone(store, settle):
    owner = _owner(store)
    _dependent(store, "blocker", owner, block=True, finalizers=["example.com/hold"])
    outcome = deletion.delete(store, "nodes", None, "owner", propagation=deletion.FOREGROUND)
    assert outcome.action == "terminating"
    assert outcome.object["metadata"]["finalizers"] == ["foregroundDeletion"]
    settle(scheduler=False)
    # The dependent is being deleted but holds a finalizer: the owner waits for it.
    blocker = store.get("pods", "default", "blocker")
    assert blocker["metadata"]["deletionTimestamp"]
    assert store.get("nodes", None, "owner")["metadata"]["deletionTimestamp"]
    deletion.remove_finalizer(store, "pods", blocker, "example.com/hold")
    settle(scheduler=False)
    assert _exists(store, "pods", "default", "blocker") is None
    assert _exists(store, "nodes", None, "owner") is None


def test_foreground_does_not_wait_for_dependents_that_do_not_block(store, settle):
    owner = _owner(store)
    _dependent(store, "free", owner, block=False, finalizers=["example.com/hold"])
    deletion.delete(store, "nodes", None, "owner", propagation=deletion.FOREGROUND)
    settle(scheduler=False)
    assert _exists(store, "nodes", None, "owner") is None
    assert store.get("pods", "default", "free")["metadata"]["deletionTimestamp"]


def test_orphan_strips_the_reference_and_keeps_the_dependents(store, settle):
    owner = _owner(store)
    _dependent(store, "a", owner)
    deletion.delete(store, "nodes", None, "owner", propagation=deletion.ORPHAN)
    assert store.get("nodes", None, "owner")["metadata"]["finalizers"] == ["orphan"]
    settle(scheduler=False)
    assert _exists(store, "nodes", None, "owner") is None
    assert "ownerReferences" not in store.get("pods", "default", "a")["metadata"]


def test_finalizers_are_honoured_and_no_new_one_may_be_added_while_deleting(store):
    obj = store.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                         "metadata": {"name": "c", "finalizers": ["example.com/a"]}, "spec": {}})
    assert deletion.delete(store, "deviceclasses", None, "c").action == "terminating"
    current = store.get("deviceclasses", None, "c")
    with pytest.raises(InputError, match="no new finalizers can be added"):
        deletion.update(store, "deviceclasses", {**current, "metadata": {**current["metadata"],
                                                                          "finalizers": ["example.com/a", "example.com/b"]}})
    assert deletion.remove_finalizer(store, "deviceclasses", current, "example.com/a") is None
    assert _exists(store, "deviceclasses", None, "c") is None
    assert obj["metadata"]["uid"]


def test_deleting_a_fleet_node_removes_its_slices_through_owner_references(store, fleet, settle):
    fleet({"name": "g", "count": 2, "profile": "dgx-a100", "fidelity": "whole"})
    assert store.keys("resourceslices", index={"node": "g-0000"})
    deletion.delete(store, "nodes", None, "g-0000")
    settle(scheduler=False)
    assert store.keys("resourceslices", index={"node": "g-0000"}) == []
    assert store.keys("resourceslices", index={"node": "g-0001"})
