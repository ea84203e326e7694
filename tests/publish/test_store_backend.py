"""The same reconcile against the local object store (the embedded default) and its gate simulation."""

from __future__ import annotations

import pytest
import yaml

from driver.errors import ConfigError, ConflictError, InvalidObjectError, NotFoundError
from driver.features import Features
from driver.publish import LocalGateConfig, Publisher, make_detector, reconcile
from driver.publish.fields import GROUPS, SHARED_CONSUMABLE
from publish.pools import DRIVER, NODE, inventory, render, with_vf_interface


def small():
    """2 slices (counters + devices), small enough that YAML I/O keeps these tests quick."""
    return inventory(gpus=1, nics=1, vfs=4, vgpu=False)


def slices(store):
    return {o["metadata"]["name"]: o for o in store.list("resourceslices")}


def gates_file(store, data):
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "featuregates.yaml").write_text(yaml.safe_dump(data))


def test_first_publish_steady_state_and_single_device_change(local, store):
    inv = small()
    pool = render(inv)
    stats = reconcile(local, pool, node_name=NODE, driver_name=DRIVER)
    assert stats.created == len(pool.slices) == len(slices(store))
    rv = store.current_resource_version()
    assert reconcile(local, render(inv), node_name=NODE, driver_name=DRIVER).writes == 0
    assert store.current_resource_version() == rv  # nothing touched on disk
    stats = reconcile(local, render(with_vf_interface(inv, 0, 1, "x")), node_name=NODE, driver_name=DRIVER)
    assert (stats.created, stats.updated, stats.deleted) == (0, 1, 0)


def test_node_object_in_store_becomes_owner(local, store):
    store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid-1"}})
    pub = Publisher(local, lambda f: render(small(), f), Features(), 30, node_name=NODE, driver_name=DRIVER)
    pub.run_once()
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "node-uid-1" for o in slices(store).values())


def test_no_node_object_means_no_owner(local, store):
    Publisher(local, lambda f: render(small(), f), Features(), 30, node_name=NODE, driver_name=DRIVER).run_once()
    assert all("ownerReferences" not in o["metadata"] for o in slices(store).values())


def test_deleted_and_edited_slices_are_restored(local, store):
    pool = render(small())
    reconcile(local, pool, node_name=NODE, driver_name=DRIVER)
    names = sorted(slices(store))
    store.delete("resourceslices", None, names[0])
    stats = reconcile(local, pool, node_name=NODE, driver_name=DRIVER)
    assert (stats.created, stats.updated, stats.generation) == (1, 0, 1)  # one create, no pool rewrite
    edited = slices(store)[names[-1]]
    edited["spec"]["devices"] = edited["spec"]["devices"][:1]
    store.update("resourceslices", edited)
    stats = reconcile(local, pool, node_name=NODE, driver_name=DRIVER)
    assert (stats.created, stats.updated, stats.generation) == (0, 1, 1)
    store.delete("resourceslices", None, names[0])
    edited = slices(store)[names[1]]
    edited["spec"]["devices"] = edited["spec"]["devices"][:1]
    store.update("resourceslices", edited)
    stats = reconcile(local, pool, node_name=NODE, driver_name=DRIVER)
    assert (stats.created, stats.updated, stats.generation) == (1, 1, 2)  # two writes: generation bumped
    assert sorted(slices(store)) == names
    assert reconcile(local, pool, node_name=NODE, driver_name=DRIVER).writes == 0


def test_delete_preconditions(local, store):
    reconcile(local, render(small()), node_name=NODE, driver_name=DRIVER)
    name = next(iter(slices(store)))
    with pytest.raises(ConflictError, match="uid precondition"):
        local.delete_slice(name, uid="other")
    with pytest.raises(ConflictError, match="stale"):
        local.delete_slice(name, resource_version="999")
    with pytest.raises(NotFoundError):
        local.delete_slice("00099-nope")


@pytest.mark.parametrize("gates", [None, {"apiserver": {GROUPS: False}}])
def test_update_of_a_missing_slice_is_not_found(local, store, gates):
    if gates:
        gates_file(store, gates)  # the stripping path reads the old object first
    with pytest.raises(NotFoundError, match="00099-nope"):
        local.update_slice({"metadata": {"name": "00099-nope"}, "spec": {"driver": DRIVER, "nodeName": NODE}})
    assert store.list("resourceslices") == []


def test_gate_file_flip_is_detected_and_republished(local, store):
    det = make_detector(local, node_name=NODE, driver_name=DRIVER, interval_s=30)
    now = [0.0]
    det.clock = lambda: now[0]
    pub = Publisher(local, lambda f: render(small(), f), det, 30, node_name=NODE, driver_name=DRIVER)
    assert pub.run_once().features.compatibility_groups
    gates_file(store, {"scheduler": {GROUPS: False}})
    now[0] += 30
    result = pub.run_once()
    assert result.features.compatibility_groups is False
    assert result.report.gates[GROUPS].scheduler_source == "STORE/featuregates.yaml"
    assert not any(e.get("compatibilityGroups") for o in slices(store).values()
                   for d in o["spec"].get("devices", []) for e in d.get("consumesCounters", []))


def test_store_simulates_apiserver_stripping_and_probe(local, store):
    gates_file(store, {"apiserver": {SHARED_CONSUMABLE: False}})
    det = make_detector(local, node_name=NODE, driver_name=DRIVER)
    report = det.detect()
    assert report.gates[SHARED_CONSUMABLE].apiserver is False
    # The probe loses valueFrom, which leaves a counter without a value: refused, like a 422.
    assert "local store dry-run" in report.gates[SHARED_CONSUMABLE].apiserver_source
    assert "probe rejected" in report.gates[SHARED_CONSUMABLE].apiserver_source
    # A real write carrying the field is refused too, and nothing is stored.
    with pytest.raises(InvalidObjectError) as err:
        reconcile(local, render(small(), Features.all_on()), node_name=NODE, driver_name=DRIVER)
    assert err.value.dropped_gates == {SHARED_CONSUMABLE} and err.value.status == 422
    assert ".value: Required value" in str(err.value) and "featuregates.yaml" in str(err.value)
    assert not any(o["spec"].get("devices") for o in slices(store).values())  # only the counter sets got in


def test_stripping_that_leaves_a_valid_object_is_stored(local, store):
    gates_file(store, {"apiserver": {GROUPS: False}})
    stats = reconcile(local, render(small()), node_name=NODE, driver_name=DRIVER)
    assert stats.dropped_gate_names() == {GROUPS} and slices(store)


def test_stripping_keeps_fields_the_old_object_already_used(local, store):
    reconcile(local, render(small()), node_name=NODE, driver_name=DRIVER)
    gates_file(store, {"apiserver": {GROUPS: False}})
    inv = with_vf_interface(small(), 0, 0, "renamed")
    stats = reconcile(local, render(inv), node_name=NODE, driver_name=DRIVER)
    assert not stats.dropped  # like kube-apiserver: an update may keep a field the stored object has


@pytest.mark.parametrize("text, message", [
    ("apiserver: [1]", "apiserver must map gate names"),
    ("apiserver: {NoSuchGate: true}", "apiserver.NoSuchGate: unknown feature gate"),
    ("scheduler: {DRADeviceCompatibilityGroups: maybe}", "expected true or false"),
    ("controller: {}", "unknown keys"),
    ("- a", "expected a mapping"),
    ("a: [", "invalid YAML"),
])
def test_bad_gate_file_is_a_config_error_naming_the_file(store, text, message):
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "featuregates.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        LocalGateConfig.load(store.root)
    assert "featuregates.yaml" in str(info.value)


def test_allocated_devices_from_store_claims(local, store):
    store.create("resourceclaims", {"metadata": {"name": "c", "namespace": "ns1"}, "status": {"allocation": {
        "devices": {"results": [{"driver": DRIVER, "pool": NODE, "device": "gpu-0", "request": "r"},
                                {"driver": "other", "pool": NODE, "device": "gpu-1", "request": "r"}]}}}})
    store.create("resourceclaims", {"metadata": {"name": "pending", "namespace": "ns2"}})
    assert local.allocated_devices(DRIVER, NODE) == {"gpu-0"}


def test_without_a_gate_file_the_local_control_plane_is_a_1_37_one(local, store):
    # KEP-5941 is not a 1.37 gate: a valueFrom slice loses the field, every other gate is on.
    det = make_detector(local, node_name=NODE, driver_name=DRIVER)
    assert det.detect().features == Features(shared_consumable_capacity=False)
    with pytest.raises(InvalidObjectError, match="DRASharedConsumableCapacity, off for the simulated kube-apiserver"):
        reconcile(local, render(small(), Features.all_on()), node_name=NODE, driver_name=DRIVER)
    assert not any(o["spec"].get("devices") for o in slices(store).values())


def test_gate_file_written_for_a_scenario_is_read_back(local, store):
    wanted = Features(compatibility_groups=False, shared_consumable_capacity=True)
    LocalGateConfig.write(store.root, wanted)
    cfg = LocalGateConfig.load(store.root)
    assert cfg.disabled("apiserver") == cfg.disabled("scheduler") == {GROUPS}
    assert make_detector(local, node_name=NODE, driver_name=DRIVER).detect().features == wanted
