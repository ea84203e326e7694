"""Hand-over during shutdown: a successor process must never lose an acknowledged prepare or end up
with a device held by two claims because the old process was still writing.

Each test plays a rolling update on one node: plugin A is serving a call that will not finish in
its grace period, A gets SIGTERM, successor B (same directories) starts and serves, and only then
can A's call continue. Before the fix A released the state lock at the end of the grace period and
its call later wrote its own view of the checkpoint over B's.
"""

from __future__ import annotations

import signal
import threading
import time

import grpc
import pytest

from adversarial.claims import allocated_claim, ref
from driver.plugin.client import KubeletClient
from plugin.harness import DRIVER, Plugin, request
from waiting import GENEROUS_S, wait_until

pytestmark = pytest.mark.slow


def _in_thread(fn):
    box: dict[str, object] = {}

    def run():
        try:
            box["result"] = fn()
        except grpc.RpcError as exc:
            box["error"] = exc.code()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def _kube_args(kubeconfig, grace: str) -> tuple[str, ...]:
    return ("--kubeconfig", str(kubeconfig), "--no-publish", "--grace-period", grace, "--api-deadline", "30")


def test_claim_read_still_retrying_at_sigterm_is_cancelled_before_the_successor_owns_the_state(
        make_plugin, api, tmp_path):
    a = make_plugin(extra_args=_kube_args(api.kubeconfig(tmp_path / "kubeconfig"), "1"))
    a.start()
    # A kubelet that waits longer than A's --api-deadline: only the hand-over can end A's call early.
    a_client = KubeletClient(a.registry, DRIVER, timeout_s=GENEROUS_S)
    a.clients.append(a_client)
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.hold("x")  # the API server answers 503 for x: A's claim reader keeps retrying (30 s allowed)
    call, box = _in_thread(lambda: a_client.prepare([ref(x)]))
    api.wait_read("x")

    term = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    b = make_plugin(root=a.root, extra_args=a.extra_args)
    b_client = b.start()  # waits for A's state-directory lock
    b_serving = time.monotonic()

    # The scheduler, seeing x's pod fail, gives gpu-0 to y; B prepares it and acknowledges.
    y = allocated_claim("y", ["gpu-0"])
    api.add(y)
    assert b_client.prepare([ref(y)])[ref(y)[2]].error == ""
    api.release("x")  # before the fix A's call now read x, prepared it and overwrote B's checkpoint
    assert a.wait_exit() == 0
    call.join(GENEROUS_S)

    claims = b.checkpoint()["claims"]
    assert ref(y)[2] in claims, "the acknowledged prepare of y was lost"
    assert set(claims) == {ref(y)[2]} and b.cdi_uids() == {ref(y)[2]}, "gpu-0 is held by x and y"
    answer = box.get("result")
    assert "error" in box or answer[ref(x)[2]].error, "x was never prepared, so it must not be acknowledged"
    assert all(status == 503 for _, status in api.reads_of("x")), "A read x after its grace period"
    assert all(t < b_serving for t, _ in api.reads_of("x")), "A was still working when B served"
    # A cancelled the call at the end of its 1 s grace period instead of letting its claim read
    # retry for its 30 s: B was serving well before that (its start included).
    assert "cancelling calls still running at the end of the grace period" in a.log_text()
    assert b_serving - term < 25, "A kept its call running after the grace period"
    assert b.stop() == 0


def test_prepare_half_done_at_the_end_of_the_grace_period_is_rolled_back(make_plugin):
    # A's prepare recorded PrepareStarted, then its disk stalls for 3 s; the grace period is 2 s.
    a = make_plugin(extra_args=("--grace-period", "2"))
    a_client = a.start(env={"FAKE_DRA_TEST_MODE": "1", "FAKE_DRA_PAUSE_AT": "prepare-started:3"})
    x = a.allocate("x", [request("gpu", "gpu")])
    call, box = _in_thread(lambda: a_client.prepare([x]))
    wait_until(lambda: x[2] in _claims(a), "A records PrepareStarted")
    a.proc.send_signal(signal.SIGTERM)
    assert a.wait_exit() == 0
    call.join(GENEROUS_S)

    # Nothing of x may remain: A cancelled it, removed what it wrote and flushed before unlocking.
    assert _claims(a) == {} and a.cdi_uids() == set()
    assert "error" in box or box["result"][x[2]].error
    assert "rolled back an unfinished prepare" in a.log_text()

    b = make_plugin(root=a.root)
    b_client = b.start()
    retry = b_client.prepare([x])[x[2]]  # the kubelet's retry lands on the successor
    assert retry.error == "" and _claims(b)[x[2]]["state"] == "PrepareCompleted"
    assert b.stop() == 0


def test_a_call_still_writing_after_the_cancel_window_exits_without_unlocking_first(make_plugin):
    # The disk stalls for 20 s, far past grace (1 s) + cancel window (1 s): A must not release the
    # lock while that thread can still write; it exits (the kernel drops lock and thread together).
    a = make_plugin(extra_args=("--grace-period", "1"))
    a_client = a.start(env={"FAKE_DRA_TEST_MODE": "1", "FAKE_DRA_PAUSE_AT": "prepare-started:20"})
    x = a.allocate("x", [request("gpu", "gpu")])
    _in_thread(lambda: a_client.prepare([x]))
    wait_until(lambda: x[2] in _claims(a), "A records PrepareStarted")
    term = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    assert a.wait_exit() == 1
    assert time.monotonic() - term < 18, "A must exit after grace + cancel window, not when the 20 s stall ends"
    assert "exiting without releasing the state directory" in a.log_text()

    # The half-done claim stays reserved (PrepareStarted): a claim for the same device is refused.
    assert _claims(a)[x[2]]["state"] == "PrepareStarted"
    device = _claims(a)[x[2]]["devices"][0]["device"]
    b = make_plugin(root=a.root)
    b_client = b.start()
    other = allocated_claim("other", [device])
    b.store.create("resourceclaims", other)
    assert b_client.prepare([ref(other)])[ref(other)[2]].error
    assert b_client.prepare([x])[x[2]].error == ""  # the kubelet's retry completes it
    assert set(_claims(b)) == {x[2]}
    assert b.stop() == 0


def _claims(p: Plugin) -> dict:
    try:
        return p.checkpoint()["claims"]
    except FileNotFoundError:
        return {}


