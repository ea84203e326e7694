"""No kubelet call outlives its caller: every call ends by its gRPC deadline and never after the
kubelet's 45 s, even when the claim reader is allowed to retry longer (--api-deadline)."""

from __future__ import annotations

import time

from kubernetes import client

from adversarial.claims import allocated_claim, ref
from driver.kube.claims import KubeClaimSource
from driver.plugin.client import KubeletClient
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.types import ClaimRef
from plugin.harness import DRIVER, NODE
from waiting import GENEROUS_S, wait_until


def test_claim_read_retries_end_with_the_grpc_deadline(make_plugin, api, tmp_path):
    plugin = make_plugin(extra_args=("--kubeconfig", str(api.kubeconfig(tmp_path / "kc")), "--no-publish",
                                     "--api-deadline", "30"))
    plugin.start()
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.hold("x")
    with KubeletClient(plugin.registry, DRIVER, timeout_s=3.0) as kubelet:
        t0 = time.monotonic()
        answer = kubelet.prepare([ref(x)])[ref(x)[2]]  # before the fix: DEADLINE_EXCEEDED, the read went on
        took = time.monotonic() - t0
    assert took < 3.0 and "deadline passed" in answer.error
    # The reads run in the call; once it has logged the claim's failure nothing reads for it any more.
    wait_until(lambda: "prepare failed for claim" in plugin.log_text(), "the call to end")
    assert max(t for t, _ in api.reads_of("x")) < t0 + 3.0, "the plugin kept reading after the caller gave up"
    assert not (plugin.state / "checkpoint.json").exists() and plugin.cdi_uids() == set()
    assert plugin.stop() == 0


def test_a_hung_claim_read_is_sent_once_and_ends_with_the_grpc_deadline(make_plugin, api, tmp_path):
    # Issue 29 MED 6: urllib3 read a hung claim 3 more times under the plugin's own retries, and
    # each attempt's timeout was at least 0.5 s, so a kubelet call overran its deadline.
    plugin = make_plugin(extra_args=("--kubeconfig", str(api.kubeconfig(tmp_path / "kc")), "--no-publish",
                                     "--api-deadline", "30"))
    plugin.start()
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.stall("x")  # the API server accepts the read and never answers it
    try:
        with KubeletClient(plugin.registry, DRIVER, timeout_s=3.0) as kubelet:
            t0 = time.monotonic()
            answer = kubelet.prepare([ref(x)])[ref(x)[2]]
            took = time.monotonic() - t0
        assert took < 3.0 and "deadline passed" in answer.error, answer.error
        assert len(api.reads_of("x")) == 1, "a hung read was sent again"
    finally:
        api.release("x")
    assert plugin.cdi_uids() == set()
    assert plugin.stop() == 0


def test_no_call_runs_longer_than_its_cap_even_without_a_grpc_deadline(api, tmp_path, demo_pool):
    # max_call_s stands in for the kubelet's 45 s so the test does not wait that long.
    source = KubeClaimSource(client.ApiClient(client.Configuration(host=api.url)), deadline_s=30.0)
    state = DeviceState(driver_name=DRIVER, claims=source, pool=PoolCache(lambda: demo_pool),
                        cdi=CdiWriter(tmp_path / "cdi", DRIVER), max_call_s=1.5,
                        checkpoint=CheckpointStore(tmp_path / "state", driver_name=DRIVER, node_name=NODE, boot_id="b"))
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.hold("x")
    t0 = time.monotonic()
    (out,) = state.prepare([ClaimRef(*ref(x))]).values()
    assert time.monotonic() - t0 < 15.0, "the read kept retrying for its --api-deadline (30 s)"
    assert "deadline passed" in out.error and "default/x" in out.error
    assert state.prepared() == {}
    state.close()


# Issue 18 item 3 (a call refused as busy answered exactly at its deadline) is held by
# tests/state/test_state_gate.py::test_a_call_refused_as_busy_answers_well_before_its_deadline: since
# the gate admits only validation (issue 25), no kill or pause step of a real plugin process holds a
# gate slot any more, so two paused prepares cannot make a third one busy here.


def test_two_slow_claim_reads_stall_no_other_call_on_the_node(make_plugin, api, tmp_path):
    # Issue 18 item 3: the two-slot state gate was held across the claim's API read, so two slow
    # reads stalled every other prepare and unprepare on the node (an unprepare needs no API).
    plugin = make_plugin(extra_args=("--kubeconfig", str(api.kubeconfig(tmp_path / "kc")), "--no-publish"))
    kubelet = plugin.start()
    slow = [allocated_claim(f"slow-{i}", [f"gpu-{i}"]) for i in range(2)]
    for c in slow:
        api.add(c)
        api.stall(c["metadata"]["name"])
    stalled = [kubelet.start_prepare([ref(c)]) for c in slow]
    for c in slow:
        api.wait_read(c["metadata"]["name"])
    fast = allocated_claim("fast", ["nic-0-vf-0"])
    api.add(fast)
    with KubeletClient(plugin.registry, DRIVER, timeout_s=GENEROUS_S) as other:
        t0 = time.monotonic()
        assert other.prepare([ref(fast)])[ref(fast)[2]].error == ""
        assert other.unprepare([ref(fast)]) == {ref(fast)[2]: ""}
        # The slow reads are held for 30 s by the stand-in: a call that waited for them took that long.
        assert time.monotonic() - t0 < 20.0, "a call waited for the slow reads of other claims"
    for c in slow:
        api.release(c["metadata"]["name"])
    assert all(kubelet.prepare_result(f.result(timeout=GENEROUS_S))[ref(c)[2]].error == "" for f, c in zip(stalled, slow))
    assert plugin.stop() == 0
