"""`fake-dra publish` and `fake-dra gates` end to end: local store, and the kube-apiserver STAND-IN via kubeconfig."""

from __future__ import annotations

import json

import pytest
import yaml

from driver.cli import main
from driver.discovery.fakesysfs import make_sysfs
from driver.store import ObjectStore


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys") / "sys"
    make_sysfs("demo", root)
    return root


@pytest.fixture
def kubeconfig(server, tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server.url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def publish(capsys, *args):
    code = main(["--log-level", "ERROR", "publish", "--once", "-o", "json", "--node-name", "node-1", *args])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else out.err)


def test_publish_once_local_store_then_steady(capsys, sysfs, tmp_path):
    store = str(tmp_path / "store")
    code, stats = publish(capsys, "--sysfs-root", str(sysfs), "--store", store)
    assert code == 0 and stats["backend"] == "store" and stats["created"] == stats["slices"] > 0
    code, stats = publish(capsys, "--sysfs-root", str(sysfs), "--store", store)
    assert stats["writes"] == 0


def test_publish_once_against_apiserver_with_scheduler_metrics(capsys, sysfs, server, kubeconfig):
    server.state.scheduler_gates["DRADeviceCompatibilityGroups"] = False
    code, stats = publish(capsys, "--sysfs-root", str(sysfs), "--kubeconfig", kubeconfig,
                          "--scheduler-metrics-url", server.url + "/metrics")
    assert code == 0 and stats["backend"] == "apiserver"
    assert "DRADeviceCompatibilityGroups=false" in stats["features"]
    assert len(server.state.slices) == stats["slices"]
    assert all(o["metadata"]["ownerReferences"][0]["name"] == "node-1" for o in server.state.slices.values())


def test_delete_slices_on_exit_with_once(capsys, sysfs, tmp_path):
    store = tmp_path / "store"
    code, _ = publish(capsys, "--sysfs-root", str(sysfs), "--store", str(store), "--delete-slices-on-exit")
    assert code == 0 and ObjectStore(store).names("resourceslices") == []


def test_gates_command_reports_sources(capsys, server, kubeconfig):
    server.state.apiserver_gates["DRAConsumableCapacity"] = False
    code = main(["--log-level", "ERROR", "gates", "--node-name", "node-1", "--kubeconfig", kubeconfig,
                 "--scheduler-features", "DRADeviceCompatibilityGroups=false", "--features", "DRASharedConsumableCapacity=false"])
    out = capsys.readouterr().out
    assert code == 0
    assert "DRAConsumableCapacity         effective=off" in out and "field stripped" in out
    assert "scheduler=off     via --scheduler-features flag" in out
    assert "(--features override)" in out
    assert "ASSUMED equal to apiserver" in out and "warning:" in out


def test_gates_command_json_local_store(capsys, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "featuregates.yaml").write_text("apiserver: {DRAPartitionableDevices: false}\n")
    code = main(["--log-level", "ERROR", "gates", "--node-name", "node-1", "--store", str(store), "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["backend"] == "store"
    assert data["gates"]["DRAPartitionableDevices"]["apiserver"] is False
    assert data["gates"]["DRADeviceCompatibilityGroups"]["effective"] is False


@pytest.mark.parametrize("args, message", [
    (["--interval", "0"], "--interval: must be positive"),
    (["--interval", "soon"], "--interval: expected seconds"),
    (["--scheduler-features", "DRAFoo=true"], "--scheduler-features: unknown feature gate"),
    (["--scheduler-metrics-url", "ftp://x"], "expected an http(s) URL"),
    (["--scheduler-metrics-url", "apiserver"], "needs an API server"),
    (["--gate-interval", "-1"], "--gate-interval: must be positive"),
])
def test_bad_flags_are_input_errors(capsys, sysfs, tmp_path, args, message):
    code, err = publish(capsys, "--sysfs-root", str(sysfs), "--store", str(tmp_path / "s"), *args)
    assert code == 2 and message in err


def test_bad_gate_file_is_reported(capsys, sysfs, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "featuregates.yaml").write_text("scheduler: {DRAPartitionableDevices: maybe}\n")
    code, err = publish(capsys, "--sysfs-root", str(sysfs), "--store", str(store))
    assert code == 2 and "featuregates.yaml: scheduler.DRAPartitionableDevices" in err


def test_gates_command_bad_gate_file_is_an_error_not_unknown(capsys, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "featuregates.yaml").write_text("apiserver: {DRAPartitionableDevices: 1}\n")
    code = main(["--log-level", "ERROR", "gates", "--node-name", "node-1", "--store", str(store)])
    assert code == 2 and "apiserver.DRAPartitionableDevices: expected true or false" in capsys.readouterr().err


def test_bad_metrics_addr(capsys, sysfs, tmp_path):
    code = main(["--log-level", "ERROR", "publish", "--node-name", "node-1", "--sysfs-root", str(sysfs),
                 "--store", str(tmp_path / "s"), "--metrics-addr", "nope"])
    assert code == 2 and "--metrics-addr: expected HOST:PORT" in capsys.readouterr().err
