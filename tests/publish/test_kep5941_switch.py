"""KEP-5941 in local mode: one switch (STORE/featuregates.yaml), a store that never keeps what the
apiserver would refuse, and a publisher that settles when its writes are refused (issue 17).

Before: `run --features DRASharedConsumableCapacity=true` against a store whose simulated apiserver
has the gate off (the default) stored slices whose VF counters had neither value nor valueFrom, and
every later `apply --allocate` failed about a slice the user never wrote.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
import yaml

from driver.cli import main
from driver.commands._local import seed_device_classes
from driver.discovery.fakesysfs import make_sysfs
from driver.e2e.manifests import device_classes
from driver.errors import ConfigError, InvalidObjectError
from driver.publish import Publisher, make_detector
from driver.publish.backend import StoreSliceBackend
from driver.publish.fields import SHARED_CONSUMABLE
from driver.publish.wiring import check_local_switch
from driver.store.objectstore import ObjectStore
from publish.pools import DRIVER, NODE, inventory, render

ON = "apiserver: {DRASharedConsumableCapacity: true}\nscheduler: {DRASharedConsumableCapacity: true}\n"


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys") / "sys"
    make_sysfs("demo", root)
    return root


def value_from_counters(store: ObjectStore) -> int:
    return json.dumps(store.list("resourceslices")).count('"valueFrom"')


def publish(capsys, sysfs, store, *extra):
    code = main(["--log-level", "ERROR", "publish", "--once", "-o", "json", "--node-name", NODE,
                 "--sysfs-root", str(sysfs), "--store", str(store), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


# -- the switch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "publish"])
def test_features_the_store_does_not_back_refuse_to_start_naming_the_file(capsys, sysfs, tmp_path, command):
    store = tmp_path / "store"
    node = f"refused-{command}"
    argv = [command, "--node-name", node, "--sysfs-root", str(sysfs), "--store", str(store),
            "--features", "DRASharedConsumableCapacity=true"] + (["--once"] if command == "publish" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (f"fake-dra {command}: --features DRASharedConsumableCapacity=true: the local store's simulated kube-apiserver "
            f"and kube-scheduler have it off; turn KEP-5941 on in {store / 'featuregates.yaml'} ") in err
    assert "or drop it from --features" in err
    assert not store.exists()  # refused before anything was created
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "fake-dra" / "nodes" / node).exists()


def test_the_switch_alone_turns_value_from_on(capsys, sysfs, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "featuregates.yaml").write_text(ON)
    code, out, err = publish(capsys, sysfs, store)  # no --features: detected from the file
    assert code == 0, err
    assert "DRASharedConsumableCapacity=true" in json.loads(out)["features"]
    assert value_from_counters(ObjectStore(store)) > 0
    # --features may agree, or keep the plugin on static shares; both start.
    assert publish(capsys, sysfs, store, "--features", "DRASharedConsumableCapacity=true")[0] == 0
    code, out, err = publish(capsys, sysfs, store, "--features", "DRASharedConsumableCapacity=false")
    assert code == 0, err
    assert value_from_counters(ObjectStore(store)) == 0


def test_half_a_switch_is_refused_naming_the_component(local, store):
    store.root.mkdir(parents=True)
    (store.root / "featuregates.yaml").write_text("apiserver: {DRASharedConsumableCapacity: true}\n")
    with pytest.raises(ConfigError, match="simulated kube-scheduler has it off"):
        check_local_switch(local, {SHARED_CONSUMABLE: True})
    check_local_switch(local, {SHARED_CONSUMABLE: False})  # static shares are always valid
    check_local_switch(local, {})


# -- the store refuses, the publisher settles ----------------------------------------------------

def test_an_override_the_apiserver_refuses_is_published_without_value_from(local, store, caplog):
    """The file turned the gate off while a plugin with the override runs (the start check passed)."""
    store.root.mkdir(parents=True)
    (store.root / "featuregates.yaml").write_text("apiserver: {DRASharedConsumableCapacity: false}\n")
    det = make_detector(local, node_name=NODE, driver_name=DRIVER, overrides={SHARED_CONSUMABLE: True})
    inv = inventory(gpus=1, nics=1, vfs=4, vgpu=False)
    pub = Publisher(local, lambda f: render(inv, f), det, 30, node_name=NODE, driver_name=DRIVER)
    with caplog.at_level(logging.ERROR, logger="fake-dra.publish"):
        first = pub.run_once()
    assert first.features.shared_consumable_capacity is True  # the override is still what was asked...
    assert value_from_counters(store) == 0  # ...but what is stored is what the apiserver takes
    slices = store.list("resourceslices")
    assert len(slices) == first.stats.slices and all(s["spec"]["pool"]["resourceSliceCount"] == len(slices) for s in slices)
    assert any("refuses the fields --features says to publish" in r.getMessage() for r in caplog.records)
    assert pub.run_once().stats.writes == 0  # settled: not refused and rewritten every pass


def test_a_gate_turned_off_under_a_running_publisher_is_detected_and_republished(local, store):
    store.root.mkdir(parents=True)
    (store.root / "featuregates.yaml").write_text(ON)
    det = make_detector(local, node_name=NODE, driver_name=DRIVER, interval_s=3600)
    inv = inventory(gpus=1, nics=1, vfs=4, vgpu=False)
    pub = Publisher(local, lambda f: render(inv, f), det, 30, node_name=NODE, driver_name=DRIVER)
    assert pub.run_once().features.shared_consumable_capacity is True and value_from_counters(store) > 0
    (store.root / "featuregates.yaml").write_text("apiserver: {DRASharedConsumableCapacity: false}\n")
    for obj in store.list("resourceslices"):  # new slices must be created: the refusal happens on create
        store.delete("resourceslices", None, obj["metadata"]["name"])
    result = pub.run_once()  # detection is not due: the refused write makes it happen now
    assert result.features.shared_consumable_capacity is False
    assert value_from_counters(store) == 0 and store.list("resourceslices")


def test_what_the_store_keeps_is_what_apply_allocate_can_read(capsys, sysfs, tmp_path):
    """The issue's walk: a published store, then `apply --allocate` of a VF claim, both gate states."""
    claim = tmp_path / "vf.yaml"
    claim.write_text(yaml.safe_dump({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "vf"},
        "spec": {"devices": {"requests": [{"name": "vf", "exactly": {
            "deviceClassName": f"vf.{DRIVER}", "capacity": {"requests": {"bandwidth": "10G"}}}}]}}}))  # within a static share too
    for gates, consumed in (("", False), (ON, True)):
        store = tmp_path / f"store-{consumed}"
        store.mkdir()
        if gates:
            (store / "featuregates.yaml").write_text(gates)
        assert publish(capsys, sysfs, store)[0] == 0
        seed_device_classes(ObjectStore(store), device_classes())  # what `run` does in local mode
        code = main(["apply", "-f", str(claim), "--store", str(store), "--allocate", "--node-name", NODE, "-o", "yaml"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert ("consumedCounters" in out) is consumed


def test_an_invalid_slice_is_refused_even_with_nothing_stripped(local, store):
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "d", "atributes": {}}]}}
    with pytest.raises(InvalidObjectError) as err:
        local.create_slice(obj)
    assert str(err.value) == ('ResourceSlice s: the local store refused it as invalid (422): spec.devices[0].atributes: '
                              'unknown field "atributes" (did you mean "attributes"?)')
    assert err.value.dropped_gates == frozenset() and store.list("resourceslices") == []


class _PlainApiserver(StoreSliceBackend):
    """The store answering like a real kube-apiserver: a bare 422, naming no gate."""

    kind = "apiserver"

    def create_slice(self, obj):
        try:
            return super().create_slice(obj)
        except InvalidObjectError as exc:
            raise InvalidObjectError(str(exc)) from None

    update_slice = create_slice


def test_a_422_naming_no_gate_is_matched_to_the_gates_the_probe_found_off(store, caplog):
    store.root.mkdir(parents=True)
    (store.root / "featuregates.yaml").write_text("apiserver: {DRASharedConsumableCapacity: false}\n")
    backend = _PlainApiserver(store)
    det = make_detector(backend, node_name=NODE, driver_name=DRIVER, overrides={SHARED_CONSUMABLE: True})
    inv = inventory(gpus=1, nics=1, vfs=4, vgpu=False)
    pub = Publisher(backend, lambda f: render(inv, f), det, 30, node_name=NODE, driver_name=DRIVER)
    with caplog.at_level(logging.ERROR, logger="fake-dra.publish"):
        pub.run_once()
    assert value_from_counters(store) == 0 and store.list("resourceslices")
    assert any("refuses the fields --features says to publish" in r.getMessage() for r in caplog.records)


def test_a_422_without_an_override_to_blame_is_raised(store):
    """Nothing to tolerate (no override keeps a gate on): the refusal is the pass's error."""
    backend = _PlainApiserver(store)
    det = make_detector(backend, node_name=NODE, driver_name=DRIVER)
    broken = lambda f: _Bogus(render(inventory(gpus=1, nics=0, vgpu=False), f))  # noqa: E731
    pub = Publisher(backend, broken, det, 30, node_name=NODE, driver_name=DRIVER)
    with pytest.raises(InvalidObjectError, match='unknown field "bogus"'):
        pub.run_once()


class _Bogus:
    """A pool whose devices carry a field no Kubernetes version has (a renderer bug)."""

    def __init__(self, pool):
        self.name = pool.name
        self.slices = tuple({**s, "devices": [{**d, "bogus": 1} for d in s.get("devices") or ()]} if s.get("devices") else s
                            for s in pool.slices)
