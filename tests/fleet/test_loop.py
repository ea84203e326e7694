"""`fleet run`: pass after pass, slices put back, Node deletions followed, a broken file survived."""

from __future__ import annotations

import json

import pytest

from driver.errors import InputError
from driver.features import Features
from driver.fleet.loop import FleetLoop
from driver.fleet.spec import load_fleet
from fleet.conftest import DRIVER, fleet_doc, group


@pytest.fixture
def fleet_file(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(fleet_doc(group("a", 3))))
    return path


@pytest.fixture
def loop(target, fleet_file):
    loop = FleetLoop(target, lambda: load_fleet(fleet_file.read_text(), str(fleet_file)), driver_name=DRIVER,
                     features=Features())
    yield loop
    loop.close()


def nodes(store):
    return sorted(n["metadata"]["name"] for n in store.list("nodes"))


def test_deleted_slices_come_back(store, loop):
    loop.run_once()
    name = store.list("resourceslices")[0]["metadata"]["name"]
    store.delete("resourceslices", None, name)
    stats = loop.run_once()
    assert stats.slices_created == 1 and stats.writes == 1
    assert store.get("resourceslices", None, name)
    assert loop.run_once().writes == 0


def test_a_deleted_node_stays_deleted_and_its_slices_go(store, loop, fleet_file):
    loop.run_once()
    per_node = len(store.list("resourceslices")) // 3
    store.delete("nodes", None, "a-0001")
    stats = loop.run_once()
    assert nodes(store) == ["a-0000", "a-0002"]
    assert "a-0001" not in {s["spec"]["nodeName"] for s in store.list("resourceslices")}
    assert (stats.nodes_created, stats.slices_deleted) == (0, per_node)
    assert loop.run_once().writes == 0
    # Someone creates it again: followed too (it is the fleet's by its label).
    store.create("nodes", {"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": "a-0001", "labels": {"fake-dra.example.com/fleet": "lab"}}})
    stats = loop.run_once()
    assert stats.slices_created == per_node and stats.nodes_updated == 1
    # A changed fleet file starts afresh: every node it names exists again.
    store.delete("nodes", None, "a-0002")
    loop.run_once()
    assert nodes(store) == ["a-0000", "a-0001"]
    fleet_file.write_text(json.dumps(fleet_doc(group("a", 4))))
    loop.run_once()
    assert nodes(store) == ["a-0000", "a-0001", "a-0002", "a-0003"]


def test_a_broken_file_keeps_the_last_good_fleet(store, loop, fleet_file, caplog):
    loop.run_once()
    fleet_file.write_text("spec: [")
    assert loop.run_once().writes == 0
    assert "keeping the last good fleet" in caplog.text and nodes(store) == ["a-0000", "a-0001", "a-0002"]


def test_a_broken_file_at_start_is_an_error(target, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(fleet_doc(group("a", 1, "nope"))))
    loop = FleetLoop(target, lambda: load_fleet(bad.read_text(), str(bad)), driver_name=DRIVER, features=Features())
    with pytest.raises(InputError, match="unknown profile 'nope'"):
        loop.run_once()
    loop.close()
