"""Crash safety: SIGKILL the plugin at each step of prepare and unprepare, restart, retry.

FAKE_DRA_CRASH_AT=<step> (honoured only with FAKE_DRA_TEST_MODE=1) makes the plugin kill itself
with SIGKILL right after that step. After each crash the on-disk state must be consistent (the
checkpoint parses, every CDI spec and device metadata file belongs to a recorded claim, the
devices stay reserved), and the kubelet's retry must succeed and converge to exactly the expected
final state, metadata files and VF claim status included.
"""

from __future__ import annotations

import signal

import grpc
import pytest

from driver.plugin.client import KubeletClient
from plugin.harness import DRIVER, Plugin, request

CRASH = {"FAKE_DRA_TEST_MODE": "1"}


def _crash_call(plugin: Plugin, step: str, call) -> None:
    client = plugin.start(env={**CRASH, "FAKE_DRA_CRASH_AT": step})
    with pytest.raises(grpc.RpcError) as exc:
        call(client)
    assert exc.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL)
    assert plugin.wait_exit() == -signal.SIGKILL
    _assert_consistent(plugin)


def _assert_consistent(plugin: Plugin) -> None:
    cp = plugin.checkpoint()  # parses: atomic writes never leave a torn file
    assert cp["kind"] == "FakeDraCheckpoint"
    assert plugin.cdi_uids() <= set(cp["claims"]), "a CDI spec without a checkpoint record is an orphan"
    assert plugin.metadata_uids() <= set(cp["claims"]), "so is a device metadata file"
    assert not list(plugin.state.glob("checkpoint.json.corrupt-*"))
    assert not [p for p in plugin.cdi.glob(".*")], "temporary files left behind"


@pytest.mark.slow
@pytest.mark.parametrize("step", ["prepare-started", "prepare-cdi-written", "prepare-completed"])
def test_crash_during_prepare(make_plugin, step):
    plugin = make_plugin()
    plugin.start()
    ref = plugin.allocate("mig", [request("gpu", "mig")])
    plugin.stop()

    _crash_call(plugin, step, lambda c: c.prepare([ref]))
    entry = plugin.checkpoint()["claims"][ref[2]]
    assert entry["state"] == ("PrepareCompleted" if step == "prepare-completed" else "PrepareStarted")
    device = entry["devices"][0]["device"]

    client = plugin.start()
    # While the claim is half-prepared its device stays reserved: a conflicting claim is refused.
    gpu = device.split("-mig-")[0]
    plugin.store.create("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "whole", "namespace": "default", "uid": "whole-uid"},
        "status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": gpu}]}}}})
    assert f"{gpu}-counters" in client.prepare([("default", "whole", "whole-uid")])["whole-uid"].error

    out = client.prepare([ref])[ref[2]]  # the kubelet's retry
    assert out.error == "" and out.devices[0].device_name == device
    assert plugin.checkpoint()["claims"][ref[2]]["state"] == "PrepareCompleted"
    assert plugin.cdi_uids() == {ref[2]}
    meta = plugin.metadata_stream(ref[2], "gpu")
    assert {o["metadata"]["generation"] for o in meta} == {1}, "a retry with the same content does not rewrite it"
    assert meta[0]["requests"][0]["devices"][0]["name"] == device
    assert client.unprepare([ref]) == {ref[2]: ""}
    assert plugin.cdi_uids() == set() and plugin.checkpoint()["claims"] == {}
    assert plugin.metadata_uids() == set()
    assert plugin.stop() == 0


@pytest.mark.slow
@pytest.mark.parametrize("step", ["unprepare-cdi-removed", "unprepare-completed"])
def test_crash_during_unprepare(make_plugin, step):
    plugin = make_plugin()
    client = plugin.start()
    ref = plugin.allocate("vf", [request("net", "vf", capacity={"requests": {"bandwidth": "10G"}})])
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.metadata_uids() == {ref[2]}
    (entry,) = plugin.store.get("resourceclaims", "default", "vf")["status"]["devices"]
    assert entry["conditions"][0]["type"] == "Ready" and entry["networkData"]["hardwareAddress"]
    plugin.stop()
    plugin.store.delete("resourceclaims", "default", "vf")  # unprepare must not need the claim

    _crash_call(plugin, step, lambda c: c.unprepare([ref]))
    assert plugin.cdi_uids() == set() and plugin.metadata_uids() == set()
    assert (ref[2] in plugin.checkpoint()["claims"]) == (step == "unprepare-cdi-removed")

    client = plugin.start()
    assert client.unprepare([ref]) == {ref[2]: ""}
    assert plugin.cdi_uids() == set() and plugin.checkpoint()["claims"] == {}
    assert plugin.stop() == 0


@pytest.mark.slow
def test_crash_after_a_vf_status_write_converges(make_plugin):
    plugin = make_plugin()
    plugin.start()
    ref = plugin.allocate("vf", [request("net", "vf")])
    plugin.stop()
    _crash_call(plugin, "prepare-cdi-written", lambda c: c.prepare([ref]))
    # Written before the crash point, so it is there even though the claim is only PrepareStarted.
    (entry,) = plugin.store.get("resourceclaims", "default", "vf")["status"]["devices"]
    assert entry["conditions"][0]["status"] == "True"

    client = plugin.start()
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.store.get("resourceclaims", "default", "vf")["status"]["devices"] == [entry], \
        "the retry finds the same entry and leaves it (same lastTransitionTime)"
    assert client.unprepare([ref]) == {ref[2]: ""}
    assert "devices" not in plugin.store.get("resourceclaims", "default", "vf")["status"]
    assert plugin.stop() == 0


def test_crash_hook_is_ignored_outside_test_mode(make_plugin):
    plugin = make_plugin()
    client = plugin.start(env={"FAKE_DRA_CRASH_AT": "prepare-started"})
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.stop() == 0


def test_unknown_crash_step_is_rejected(make_plugin):
    plugin = make_plugin()
    proc = plugin.spawn(env={**CRASH, "FAKE_DRA_CRASH_AT": "bogus"})
    assert proc.wait(30) == 2
    assert "FAKE_DRA_CRASH_AT: unknown step 'bogus'" in plugin.log_text()
    plugin.proc = None


def test_restart_keeps_serving_prepared_claims_without_re_prepare(make_plugin):
    # After a plugin restart the kubelet does not re-send prepare for running pods; the state
    # must still be there for unprepare and for revalidation of new claims.
    plugin = make_plugin()
    client = plugin.start()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    first = client.prepare([ref])[ref[2]]
    plugin.stop(signal.SIGKILL)
    client = plugin.start()
    assert client.prepare([ref])[ref[2]] == first
    with KubeletClient(plugin.registry, DRIVER) as fresh:  # a new kubelet connection, no register()
        assert fresh.unprepare([ref]) == {ref[2]: ""}
