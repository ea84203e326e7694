"""reconcile() against the kube-apiserver STAND-IN over real HTTP through the kubernetes client."""

from __future__ import annotations

import copy

import pytest

from driver.errors import ConflictError
from driver.features import Features
from driver.publish import reconcile
from driver.publish.reconcile import slice_name
from publish.pools import DRIVER, NODE, inventory, render, with_nic_speed, with_vf_interface


def run(api, pool, server, owner=True):
    uid = api.node_uid(NODE) if owner else None
    return reconcile(api, pool, node_name=NODE, driver_name=DRIVER, owner_uid=uid)


def stored(server):
    return sorted(server.state.slices.values(), key=lambda o: o["metadata"]["name"])


def test_first_publish_creates_every_slice_with_pool_metadata_and_owner(api, server):
    pool = render(inventory(gpus=2, nics=1, vfs=8))
    stats = run(api, pool, server)
    objs = stored(server)
    assert stats.created == len(pool.slices) == len(objs) and stats.updated == stats.deleted == 0
    node_uid = server.state.nodes[NODE]["metadata"]["uid"]
    for i, obj in enumerate(objs):
        assert obj["metadata"]["name"] == slice_name(i, len(objs), DRIVER, NODE)
        assert obj["metadata"]["name"].startswith(f"{i:05x}-")
        assert obj["spec"]["nodeName"] == NODE and obj["spec"]["driver"] == DRIVER
        assert obj["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": len(objs)}
        assert obj["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": node_uid, "controller": True}]
    published = {d["name"]: d for o in objs for d in o["spec"].get("devices", [])}
    assert published.keys() == pool.devices().keys()
    assert not stats.dropped


def test_steady_state_makes_no_writes(api, server):
    pool = render(inventory())
    run(api, pool, server)
    before = len(server.state.writes())
    stats = run(api, render(inventory()), server)
    assert stats.writes == 0 and stats.unchanged == len(pool.slices)
    assert len(server.state.writes()) == before
    # one list, one node get: nothing else
    assert [r[0] for r in server.state.requests[-2:]] == ["GET", "GET"]


def test_one_changed_device_updates_one_slice_without_generation_bump(api, server):
    inv = inventory(gpus=2, nics=1, vfs=8)
    run(api, render(inv), server)
    rv_before = {n: o["metadata"]["resourceVersion"] for n, o in server.state.slices.items()}
    stats = run(api, render(with_vf_interface(inv, 0, 3, "renamed0")), server)
    assert (stats.created, stats.updated, stats.deleted) == (0, 1, 0)
    changed = [n for n, o in server.state.slices.items() if o["metadata"]["resourceVersion"] != rv_before[n]]
    assert len(changed) == 1
    assert all(o["spec"]["pool"]["generation"] == 1 for o in server.state.slices.values())


def test_change_in_two_slices_bumps_generation_and_rewrites_all(api, server):
    inv = inventory(gpus=2, nics=1, vfs=8)
    run(api, render(inv), server)
    stats = run(api, render(with_nic_speed(inv, 0, 25000)), server)  # counter set + VF capacities
    assert stats.generation == 2 and stats.updated == len(server.state.slices)
    assert {o["spec"]["pool"]["generation"] for o in server.state.slices.values()} == {2}


def test_changes_across_slices_bump_generation_on_every_slice(api, server):
    run(api, render(inventory(gpus=2)), server)
    stats = run(api, render(inventory(gpus=3)), server)  # new counter set + more devices: several slices
    objs = stored(server)
    assert stats.generation == 2
    assert {o["spec"]["pool"]["generation"] for o in objs} == {2}
    assert {o["spec"]["pool"]["resourceSliceCount"] for o in objs} == {len(objs)}
    assert stats.writes >= 2


def test_shrinking_pool_deletes_obsolete_slices(api, server):
    run(api, render(inventory(gpus=8, nics=4, vfs=16)), server)
    big = len(server.state.slices)
    pool = render(inventory(gpus=1, nics=0))
    stats = run(api, pool, server)
    assert stats.deleted == big - len(pool.slices)
    assert len(server.state.slices) == len(pool.slices)
    assert {o["spec"]["pool"]["resourceSliceCount"] for o in stored(server)} == {len(pool.slices)}


def test_chunked_pool_over_64_devices_respects_limits(api, server):
    pool = render(inventory(gpus=8, nics=4, vfs=16))
    assert len(pool.devices()) > 64
    run(api, pool, server)  # the stand-in rejects >64 devices with counters (422)
    objs = stored(server)
    assert sum(len(o["spec"].get("devices", [])) for o in objs) == len(pool.devices())
    assert all(len(o["spec"].get("devices", [])) <= 64 for o in objs)
    assert run(api, pool, server).writes == 0


def test_externally_deleted_slice_is_restored_under_the_same_name(api, server):
    pool = render(inventory())
    run(api, pool, server)
    victim = sorted(server.state.slices)[1]
    content = copy.deepcopy(server.state.slices[victim]["spec"])
    del server.state.slices[victim]
    stats = run(api, pool, server)
    assert stats.created == 1
    assert server.state.slices[victim]["spec"]["devices" if "devices" in content else "sharedCounters"] == \
        content.get("devices", content.get("sharedCounters"))
    assert victim in server.state.slices


def test_externally_edited_slice_is_restored(api, server):
    pool = render(inventory())
    run(api, pool, server)
    name = sorted(server.state.slices)[-1]
    original = copy.deepcopy(server.state.slices[name]["spec"])
    server.state.external_edit(name, lambda o: o["spec"]["devices"].pop())
    stats = run(api, pool, server)
    assert stats.updated == 1 and stats.created == 0
    assert server.state.slices[name]["spec"]["devices"] == original["devices"]


def test_foreign_and_stale_slices_are_deleted_others_untouched(api, server):
    pool = render(inventory(gpus=1, nics=0))
    run(api, pool, server)
    base = copy.deepcopy(next(iter(server.state.slices.values())))
    # an old randomly-named slice of ours, another node's slice, another driver's slice
    legacy = copy.deepcopy(base)
    legacy["metadata"] = {"name": f"{NODE}-{DRIVER}-abcde"}
    other_node = copy.deepcopy(base)
    other_node["metadata"] = {"name": "00000-other-node"}
    other_node["spec"]["nodeName"] = "node-2"
    other_node["spec"]["pool"]["name"] = "node-2"
    other_driver = copy.deepcopy(base)
    other_driver["metadata"] = {"name": "00000-other-driver"}
    other_driver["spec"]["driver"] = "other.example.com"
    for obj in (legacy, other_node, other_driver):
        api.create_slice(obj)
    stats = run(api, pool, server)
    assert stats.deleted == 1
    assert legacy["metadata"]["name"] not in server.state.slices
    assert {"00000-other-node", "00000-other-driver"} <= set(server.state.slices)


def test_conflicts_are_retried_from_a_fresh_list(api, server):
    inv = inventory()
    run(api, render(inv), server)
    server.inject_conflicts(2)
    changed = render(with_vf_interface(inv, 0, 3, "renamed0"))
    stats = run(api, changed, server)
    assert stats.conflicts == 2 and stats.attempts == 3 and stats.updated == 1
    assert run(api, changed, server).writes == 0


def test_conflicts_on_create_are_retried(api, server):
    server.inject_conflicts(1)
    pool = render(inventory())
    stats = run(api, pool, server)
    assert stats.conflicts == 1 and len(server.state.slices) == len(pool.slices)


def test_persistent_conflicts_give_up_with_a_clear_error(api, server):
    run(api, render(inventory()), server)
    server.inject_conflicts(100)
    with pytest.raises(ConflictError, match="gave up after 5 conflicting attempts"):
        run(api, render(with_nic_speed(inventory(), 0, 25000)), server)


def test_missing_node_means_no_owner_reference(api, server):
    pool = render(inventory(), node="node-9")
    assert api.node_uid("node-9") is None
    reconcile(api, pool, node_name="node-9", driver_name=DRIVER, owner_uid=None)
    assert all("ownerReferences" not in o["metadata"] for o in server.state.slices.values())


def test_owner_reference_added_once_node_is_known(api, server):
    pool = render(inventory())
    run(api, pool, server, owner=False)
    stats = run(api, pool, server, owner=True)
    assert stats.updated == len(pool.slices)
    assert all(o["metadata"].get("ownerReferences") for o in server.state.slices.values())


def test_gate_off_pool_renders_and_publishes_without_groups(api, server):
    pool = render(inventory(), Features(compatibility_groups=False))
    run(api, pool, server)
    for o in server.state.slices.values():
        for d in o["spec"].get("devices", []):
            assert all("compatibilityGroups" not in e for e in d.get("consumesCounters", []))


def test_quantities_respelled_by_the_server_are_not_a_change(api, server):
    pool = render(inventory())
    run(api, pool, server)
    name = sorted(server.state.slices)[0]  # the counter slice

    def respell(obj):
        counters = obj["spec"]["sharedCounters"][0]["counters"]
        counters["memory"]["value"] = "40Gi" if counters["memory"]["value"] == "40960Mi" else counters["memory"]["value"]
        counters["memory-slice-0"]["value"] = "1000m"
    server.state.external_edit(name, respell)
    assert run(api, pool, server).writes == 0


def test_obsolete_slice_deleted_concurrently_is_fine(api, server, monkeypatch):
    run(api, render(inventory(gpus=8, nics=4, vfs=16)), server)
    real = api.delete_slice

    def racing_delete(name, **kw):
        server.state.slices.pop(name, None)  # someone else was faster
        return real(name, **kw)
    monkeypatch.setattr(api, "delete_slice", racing_delete)
    pool = render(inventory(gpus=1, nics=0))
    stats = run(api, pool, server)
    assert stats.deleted == 0 and len(server.state.slices) == len(pool.slices)
