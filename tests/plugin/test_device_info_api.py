"""The real `fake-dra run` against the kube-apiserver STAND-IN (--kubeconfig): claims read from the API,
VF status written to the claim by server-side apply, skipped with one warning when RBAC forbids it;
device metadata flag handling."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from driver.cli import main
from plugin.harness import DRIVER, NODE, Plugin
from publish.standin import StandInServer


def kubeconfig(path: Path, url: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "u"}}],
    }))
    return path


def vf_claim(name: str, device: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": str(uuid.uuid4()), "generation": 1},
            "spec": {"devices": {"requests": [{"name": "net", "exactly": {"deviceClassName": f"vf.{DRIVER}"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "net", "driver": DRIVER, "pool": NODE, "device": device}]}}}}


@pytest.fixture
def api():
    with StandInServer() as srv:
        srv.state.add_node(NODE)
        yield srv


def _plugin(make_plugin, api) -> Plugin:
    plugin = make_plugin()
    kc = kubeconfig(plugin.root / "kubeconfig", api.url)
    plugin.extra_args = ("--kubeconfig", str(kc))
    return plugin


def test_vf_status_is_applied_through_the_api_and_cleared(make_plugin, api):
    plugin = _plugin(make_plugin, api)
    claim = vf_claim("vf", "nic-0-vf-2")
    api.state.claims.append(claim)
    client = plugin.start()
    ref = ("default", "vf", claim["metadata"]["uid"])
    assert client.prepare([ref])[ref[2]].error == ""
    (entry,) = claim["status"]["devices"]
    assert (entry["driver"], entry["pool"], entry["device"]) == (DRIVER, NODE, "nic-0-vf-2")
    assert entry["networkData"]["interfaceName"] == "ens3f0v2" and entry["networkData"]["hardwareAddress"]
    assert api.state.status_owners[("default", "vf")][DRIVER]
    patches = [r for r in api.state.requests if r[0] == "PATCH"]
    assert len(patches) == 1 and f"fieldManager={DRIVER}" in patches[0][2]
    assert plugin.metadata_uids() == {ref[2]}, "metadata files in API mode too"

    assert client.unprepare([ref]) == {ref[2]: ""}
    assert "devices" not in claim["status"]
    assert plugin.stop() == 0


def test_forbidden_status_write_is_skipped_with_one_warning(make_plugin, api):
    plugin = _plugin(make_plugin, api)
    api.state.forbid_status = True
    claims = [vf_claim(f"vf{i}", f"nic-0-vf-{i}") for i in range(2)]
    api.state.claims.extend(claims)
    client = plugin.start()
    for c in claims:
        ref = ("default", c["metadata"]["name"], c["metadata"]["uid"])
        assert client.prepare([ref])[ref[2]].error == "", "status is informational: prepare succeeds"
        assert "devices" not in c["status"]
    assert plugin.stop() == 0
    log = plugin.log_text()
    assert log.count("not allowed to write ResourceClaim status.devices") == 1
    assert "associated-node:patch on resourceclaims/driver" in log


def test_device_metadata_false_writes_no_files(make_plugin):
    plugin = make_plugin(extra_args=("--device-metadata", "false"))
    client = plugin.start()
    from plugin.harness import request

    ref = plugin.allocate("g", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.metadata_uids() == set()
    assert "mounts" not in plugin.cdi.joinpath(f"k8s.{DRIVER}_device_{ref[2]}.json").read_text()
    assert plugin.stop() == 0


def test_bad_device_metadata_value_fails_before_anything_starts(tmp_path, capsys):
    code = main(["run", "--sysfs-root", str(tmp_path), "--node-name", "n1", "--store", str(tmp_path / "s"),
                 "--kubelet-plugins-dir", str(tmp_path / "p"), "--kubelet-registry-dir", str(tmp_path / "r"),
                 "--cdi-root", str(tmp_path / "c"), "--device-metadata", "maybe"])
    assert code == 2
    assert "--device-metadata: expected true or false, got 'maybe'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "p").exists()


def test_device_status_gate_off_writes_no_status(make_plugin):
    plugin = make_plugin(extra_args=("--features", "DRAResourceClaimDeviceStatus=false"))
    client = plugin.start()
    from plugin.harness import request

    ref = plugin.allocate("vf", [request("net", "vf")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert "devices" not in plugin.store.get("resourceclaims", "default", "vf")["status"]
    assert plugin.metadata_uids() == {ref[2]}
    assert plugin.stop() == 0


def test_device_metadata_from_its_variable_is_checked_like_the_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_DRA_DEVICE_METADATA", "perhaps")
    code = main(["run", "--sysfs-root", str(tmp_path), "--node-name", "n1", "--store", str(tmp_path / "s"),
                 "--kubelet-plugins-dir", str(tmp_path / "p"), "--kubelet-registry-dir", str(tmp_path / "r"),
                 "--cdi-root", str(tmp_path / "c")])
    assert code == 2
    err = capsys.readouterr().err
    assert "FAKE_DRA_DEVICE_METADATA='perhaps'" in err and "--device-metadata" in err
    assert not (tmp_path / "r").exists()
