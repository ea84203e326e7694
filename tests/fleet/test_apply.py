"""`fleet apply` on the local store: kwok's Node conventions, each node's pool as `run` publishes it,
owner references, no writes when nothing changed, removals, and a cut-short apply that the next
one completes."""

from __future__ import annotations

import pytest

from driver.cli import main
from driver.errors import InputError
from driver.features import Features
from driver.fleet.apply import delete_fleet
from driver.fleet.nodes import FLEET_LABEL, ForeignNode
from driver.slices import slice_name
from fleet.conftest import DRIVER, fleet_doc, group

SLICES = "resourceslices"


def slices_of(store, node):
    return sorted((s for s in store.list(SLICES) if s["spec"]["nodeName"] == node), key=lambda s: s["metadata"]["name"])


def test_nodes_follow_kwoks_conventions_and_own_their_slices(store, apply):
    stats = apply(fleet_doc(group("a100", 2, "dgx-a100", labels={"rack": "r7"}), group("nic", 1, "no-gpu")))
    assert (stats.nodes_created, stats.slices_created) == (3, 6 * 2 + 2)
    node = store.get("nodes", None, "a100-0001")
    meta = node["metadata"]
    assert meta["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert meta["labels"]["type"] == "kwok" and meta["labels"]["rack"] == "r7"
    assert meta["labels"]["fake-dra.example.com/profile"] == "dgx-a100"
    assert meta["labels"][FLEET_LABEL] == "lab" and meta["labels"]["kubernetes.io/hostname"] == "a100-0001"
    assert node["spec"]["taints"] == [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]
    for s in slices_of(store, "a100-0001"):
        assert s["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "a100-0001", "uid": meta["uid"], "controller": True}]
        assert s["spec"]["pool"] == {"name": "a100-0001", "generation": 1, "resourceSliceCount": 6}
    assert [s["metadata"]["name"] for s in slices_of(store, "a100-0001")] == [
        slice_name(i, 6, DRIVER, "a100-0001") for i in range(6)]


def test_each_node_is_what_run_publishes_for_it(tmp_path, store, apply, capsys):
    """The acceptance check: `fake-dra publish --once` (the publisher `run` runs) for a fleet node,
    on its profile's tree, against the fleet's store, finds nothing to write."""
    apply(fleet_doc(group("big", 2, "dgx-a100"), group("vh", 1, "vgpu-host"), group("plain", 1, "no-gpu"),
                    group("flat", 1, "h100", fidelity="whole")))
    for profile, node, extra in (("dgx-a100", "big-0001", ()), ("vgpu-host", "vh-0000", ()),
                                 ("no-gpu", "plain-0000", ()),
                                 ("h100", "flat-0000", ("--features", "DRAPartitionableDevices=false"))):
        tree = tmp_path / profile
        assert main(["make-sysfs", "--profile", profile, "--out", str(tree)]) == 0
        before = store.current_resource_version()
        assert main(["publish", "--once", "--node-name", node, "--sysfs-root", str(tree), "--store", str(store.root),
                     "-o", "json", *extra]) == 0
        out = capsys.readouterr().out
        assert '"writes": 0' in out and '"unchanged": ' in out, (node, out)
        assert store.current_resource_version() == before


def test_a_second_apply_writes_nothing(store, apply):
    doc = fleet_doc(group("a100", 3, "dgx-a100"), group("d", 2, "demo", fidelity="whole"))
    apply(doc)
    before = store.current_resource_version()
    stats = apply(doc)
    assert stats.writes == 0 and stats.nodes == 5 and stats.slices == 3 * 6 + 2
    assert store.current_resource_version() == before


def test_removed_nodes_lose_slices_and_node_and_nothing_else(store, apply):
    apply(fleet_doc(group("a", 3), group("b", 1)))
    store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real-node"}})
    stats = apply(fleet_doc(group("a", 1)))
    assert stats.nodes_deleted == 3 and stats.slices_deleted == 3 * 3
    assert sorted(n["metadata"]["name"] for n in store.list("nodes")) == ["a-0000", "real-node"]
    assert {s["spec"]["nodeName"] for s in store.list(SLICES)} == {"a-0000"}


def test_delete_removes_everything_the_fleet_made_and_only_that(store, target, apply):
    apply(fleet_doc(group("a", 2)))
    apply(fleet_doc(group("x", 1), name="other"))
    stats = delete_fleet(target, "lab", driver_name=DRIVER)
    assert (stats.nodes_deleted, stats.slices_deleted) == (2, 6)
    assert [n["metadata"]["name"] for n in store.list("nodes")] == ["x-0000"]
    assert {s["spec"]["nodeName"] for s in store.list(SLICES)} == {"x-0000"}
    assert delete_fleet(target, "lab", driver_name=DRIVER).writes == 0


def test_a_node_of_someone_else_is_refused_before_any_write(store, apply):
    store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a-0001"}})
    with pytest.raises(ForeignNode, match="node a-0001: exists and belongs to no fleet"):
        apply(fleet_doc(group("a", 3)))
    assert [n["metadata"]["name"] for n in store.list("nodes")] == ["a-0001"] and store.list(SLICES) == []
    apply(fleet_doc(group("b", 1), name="other"))
    with pytest.raises(ForeignNode, match="belongs to fleet 'other'"):
        apply(fleet_doc(group("b", 1)))


def test_a_cut_short_apply_is_completed_by_the_next(store, apply):
    doc = fleet_doc(group("a", 4, "dgx-a100"))

    def stop_after_two(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply(doc, progress=stop_after_two)
    # A batch of nodes is one store transaction: the one cut short is undone whole (none of its
    # Nodes without their slices); earlier batches would stay.
    assert store.list("nodes") == [] and store.list(SLICES) == []
    stats = apply(doc)
    assert (stats.nodes_created, stats.slices_created) == (4, 24)
    assert apply(doc).writes == 0
    for node in ("a-0000", "a-0003"):
        assert [s["spec"]["pool"]["generation"] for s in slices_of(store, node)] == [1] * 6


def test_a_slice_cut_short_mid_node_is_completed(store, apply):
    doc = fleet_doc(group("a", 1, "dgx-a100"))
    apply(doc)
    victims = slices_of(store, "a-0000")[2:]
    for s in victims:
        store.delete(SLICES, None, s["metadata"]["name"])
    stats = apply(doc)
    assert stats.slices_created == len(victims)
    assert {s["spec"]["pool"]["generation"] for s in slices_of(store, "a-0000")} == {2}  # several writes: bumped
    assert apply(doc).writes == 0


def test_someone_elses_edits_are_put_right(store, apply):
    doc = fleet_doc(group("a", 2))
    apply(doc)
    one = slices_of(store, "a-0001")[1]
    one["spec"]["devices"] = one["spec"]["devices"][:1]
    store.update(SLICES, one)
    store.delete(SLICES, None, slices_of(store, "a-0000")[0]["metadata"]["name"])
    node = store.get("nodes", None, "a-0000")
    node["metadata"]["labels"].pop("type")
    node["metadata"]["labels"]["team"] = "mine"
    store.update("nodes", node)
    stats = apply(doc)
    assert (stats.slices_updated, stats.slices_created, stats.nodes_updated) == (1, 1, 1)
    assert store.get("nodes", None, "a-0000")["metadata"]["labels"]["team"] == "mine"  # not the fleet's: kept
    assert apply(doc).writes == 0


def test_group_changes_reach_the_nodes(store, apply):
    apply(fleet_doc(group("a", 1, "demo", labels={"rack": "r1", "zone": "z"})))
    stats = apply(fleet_doc(group("a", 1, "no-gpu", labels={"rack": "r2"})))
    labels = store.get("nodes", None, "a-0000")["metadata"]["labels"]
    assert labels["rack"] == "r2" and "zone" not in labels and labels["fake-dra.example.com/profile"] == "no-gpu"
    assert stats.nodes_updated == 1 and stats.slices_deleted + stats.slices_updated >= 1
    devices = {d["name"] for s in slices_of(store, "a-0000") for d in s["spec"].get("devices", [])}
    assert devices and all(d.startswith("nic-") for d in devices)


def test_gates_of_the_simulated_control_plane_reach_every_node(store, apply):
    stats = apply(fleet_doc(group("a", 2, "dgx-a100")), features=Features().with_gates({"DRADeviceCompatibilityGroups": False}))
    for s in store.list(SLICES):
        for dev in s["spec"].get("devices", []):
            assert all("compatibilityGroups" not in e for e in dev.get("consumesCounters", []))
    assert stats.devices == 2 * sum(1 for s in slices_of(store, "a-0000") for _ in s["spec"].get("devices", []))


def test_dry_run_bytes_are_the_bytes_published(tmp_path, store, apply, capsys):
    import json

    from driver.store.codec import json_text

    doc = fleet_doc(group("a100", 3, "dgx-a100"), group("n", 2, "no-gpu", fidelity="whole"))
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(doc))
    assert main(["fleet", "apply", "-f", str(path), "--dry-run", "-o", "json", "--store", str(tmp_path / "none")]) == 0
    sizes = json.loads(capsys.readouterr().out)
    assert not (tmp_path / "none").exists()  # a dry run writes nothing, not even the store directory
    apply(doc)
    sent = 0
    for s in store.list(SLICES):
        meta = s["metadata"]
        sent += len(json_text({"apiVersion": s["apiVersion"], "kind": s["kind"],
                               "metadata": {"name": meta["name"], "ownerReferences": [
                                   {**meta["ownerReferences"][0], "uid": "0" * 8 + "-0000-0000-0000-" + "0" * 12}]},
                               "spec": s["spec"]}).encode())
    assert sizes["total"]["bytes"] == sent
    assert sizes["total"] == {"nodes": 5, "slices": 20, "devices": 3 * 256 + 2 * 8, "bytes": sent}
    assert [g["bytesPerNode"] > 200_000 for g in sizes["groups"]] == [True, False]


def test_the_etcd_budget_warning(tmp_path, capsys):
    import json

    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("a100", 5, "dgx-a100"))))
    assert main(["fleet", "apply", "-f", str(path), "--dry-run", "--etcd-budget", "1Mi", "--store", str(tmp_path / "s")]) == 0
    err = capsys.readouterr().err
    assert "warning: the fleet's slices are 1.0 MiB of JSON, over --etcd-budget 1.0 MiB" in err
    assert main(["fleet", "apply", "-f", str(path), "--dry-run", "--store", str(tmp_path / "s")]) == 0
    assert "warning" not in capsys.readouterr().err
    with pytest.raises(InputError):
        from driver.commands.fleet import _budget
        _budget("lots")


def test_a_node_changed_between_list_and_write_is_read_again(store, target, apply, monkeypatch):
    """On a cluster kwok writes a Node's status all the time; a label update that loses that race
    (409) reads the Node again and keeps what the other writer wrote."""
    doc = fleet_doc(group("a", 1))
    apply(doc)
    node = store.get("nodes", None, "a-0000")
    node["metadata"]["labels"]["type"] = "real"
    store.update("nodes", node)
    real_update = target.update_node
    raced = []

    def racing(obj):
        if not raced:
            raced.append(True)
            other = store.get("nodes", None, "a-0000")
            other["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
            store.update("nodes", other)  # kwok's heartbeat got there first
        return real_update(obj)

    monkeypatch.setattr(target, "update_node", racing)
    stats = apply(doc)
    assert (stats.nodes_updated, stats.conflicts) == (1, 1)
    stored = store.get("nodes", None, "a-0000")
    assert stored["metadata"]["labels"]["type"] == "kwok"
    assert stored["status"]["conditions"][0]["reason"] == "KubeletReady"
