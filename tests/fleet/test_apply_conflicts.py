"""`fleet apply` when a Node keeps changing under it: bounded retries, a named error, nothing half-written."""

from __future__ import annotations

import pytest

from driver.errors import ConflictError
from driver.publish.reconcile import MAX_ATTEMPTS
from fleet.conftest import fleet_doc, group

SLICES = "resourceslices"


def _snapshot(store) -> tuple:
    nodes = sorted((n["metadata"]["name"], n["metadata"]["resourceVersion"]) for n in store.list("nodes"))
    slices = sorted((s["metadata"]["name"], s["metadata"]["resourceVersion"]) for s in store.list(SLICES))
    return nodes, slices


def test_a_node_changed_on_every_attempt_gives_up_naming_it_and_writes_no_slice(store, target, apply, monkeypatch):
    """Every update of the Node loses a race (409): after MAX_ATTEMPTS reads and tries the pass stops
    with ConflictError naming the node, before any of that node's slices (its new profile's) are
    written and before the next node is touched; the next pass without the race completes it."""
    apply(fleet_doc(group("a", 1, "demo"), group("b", 1, "demo")))
    before_rv = store.current_resource_version()
    before = _snapshot(store)
    changed = fleet_doc(group("a", 1, "dgx-a100"), group("b", 1, "dgx-a100"))
    real_update, real_get = target.update_node, target.get_node
    tries: list[str] = []
    reads: list[str] = []

    def always_conflicts(obj):
        tries.append(obj["metadata"]["name"])
        raise ConflictError(f"node {obj['metadata']['name']}: the object has been modified")

    def counting_get(name):
        reads.append(name)
        return real_get(name)

    monkeypatch.setattr(target, "update_node", always_conflicts)
    monkeypatch.setattr(target, "get_node", counting_get)
    with pytest.raises(ConflictError) as err:
        apply(changed)
    assert str(err.value) == f"node a-0000: changed by someone else on each of {MAX_ATTEMPTS} attempts"
    assert tries == ["a-0000"] * MAX_ATTEMPTS and reads == ["a-0000"] * MAX_ATTEMPTS
    assert store.current_resource_version() == before_rv and _snapshot(store) == before
    assert {n["metadata"]["labels"]["fake-dra.example.com/profile"] for n in store.list("nodes")} == {"demo"}

    monkeypatch.setattr(target, "update_node", real_update)
    stats = apply(changed)
    assert stats.nodes_updated == 2 and stats.conflicts == 0
    assert {n["metadata"]["labels"]["fake-dra.example.com/profile"] for n in store.list("nodes")} == {"dgx-a100"}
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in store.list(SLICES)} == {6}


def test_a_created_node_racing_forever_gives_up_too(store, target, apply, monkeypatch):
    """A Node the pass means to create whose create keeps losing a race (409) and that is gone again
    each time it is read back also ends after MAX_ATTEMPTS with the node named and nothing written."""
    def taken(obj):
        raise ConflictError(f"node {obj['metadata']['name']}: already exists")

    monkeypatch.setattr(target, "create_node", taken)
    monkeypatch.setattr(target, "get_node", lambda name: None)  # gone again each time it is read
    with pytest.raises(ConflictError, match=f"node a-0000: changed by someone else on each of {MAX_ATTEMPTS} attempts"):
        apply(fleet_doc(group("a", 2)))
    assert store.list("nodes") == [] and store.list(SLICES) == []
