"""The kubelet's cancel-then-unprepare sequence against a live plugin (issue 18 item 2).

When a pod is deleted, or the kubelet restarts, while a prepare of its claim is in flight (here:
the claim's API read is slow), the kubelet cancels the prepare and then unprepares the claim. The
plugin answered the unprepare OK, then the first call's read completed and it recorded the claim:
the device stayed held across restarts, later claims for it were refused for ever, and a claim
re-allocated to another device still got the old one. Now a call observes its cancellation before
it commits, and an unprepare overrules a prepare of the same claim still in flight.
"""

from __future__ import annotations

import time

import grpc
import pytest

from adversarial.claims import allocated_claim, ref
from waiting import GENEROUS_S, wait_until

pytestmark = pytest.mark.slow


def _kube_plugin(make_plugin, api, tmp_path):
    plugin = make_plugin(extra_args=("--kubeconfig", str(api.kubeconfig(tmp_path / "kubeconfig")), "--no-publish"))
    return plugin, plugin.start()


def _recorded(plugin) -> dict:
    path = plugin.state / "checkpoint.json"
    return plugin.checkpoint()["claims"] if path.exists() else {}


def _wait_settled(plugin, api, claim: dict) -> None:
    """Until the plugin's read of the claim was answered and its call ended: a cancelled or
    overruled prepare ends with the claim's error in the log ("prepare failed for claim")."""
    wait_until(lambda: any(status == 200 for _, status in api.reads_of(claim["metadata"]["name"])),
               "the slow read to be answered")
    uid = claim["metadata"]["uid"]
    wait_until(lambda: any("prepare failed for claim" in line and uid in line for line in plugin.log_text().splitlines()),
               f"the prepare of {uid} to end")


def test_a_cancelled_prepare_never_commits_after_the_unprepare_was_answered(make_plugin, api, tmp_path):
    plugin, kubelet = _kube_plugin(make_plugin, api, tmp_path)
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.stall("x")  # the API server is slow to answer x
    call = kubelet.start_prepare([ref(x)])
    api.wait_read("x")
    call.cancel()  # the pod was deleted: the kubelet cancels the prepare ...
    assert kubelet.unprepare([ref(x)]) == {ref(x)[2]: ""}  # ... then unprepares the claim: answered OK
    api.release("x")  # the slow read completes now
    _wait_settled(plugin, api, x)
    assert ref(x)[2] not in _recorded(plugin) and plugin.cdi_uids() == set(), \
        "the cancelled prepare recorded the claim after its unprepare was answered"
    assert plugin.metadata_uids() == set()
    # The device is free: the claim the scheduler now gives gpu-0 to is prepared.
    y = allocated_claim("y", ["gpu-0"])
    api.add(y)
    assert kubelet.prepare([ref(y)])[ref(y)[2]].error == ""
    with pytest.raises(grpc.FutureCancelledError):
        call.result()
    assert plugin.stop() == 0


def test_a_prepare_cancelled_by_the_kubelet_keeps_nothing(make_plugin, api, tmp_path):
    # No unprepare at all (a kubelet that restarts sends it only later): the call still must not
    # commit once its caller is gone, since nobody will ever read its answer.
    plugin, kubelet = _kube_plugin(make_plugin, api, tmp_path)
    x = allocated_claim("x", ["gpu-1"])
    api.add(x)
    api.stall("x")
    call = kubelet.start_prepare([ref(x)])
    api.wait_read("x")
    call.cancel()
    # The one fixed wait left in the adversarial suite: the plugin shows nothing when the
    # cancellation reaches it (gRPC runs its callback), so it gets a second to arrive before the
    # slow read returns. Arriving later would not be a bug: a commit before the cancel is kept.
    time.sleep(1.0)
    api.release("x")
    _wait_settled(plugin, api, x)
    assert _recorded(plugin) == {}
    assert plugin.cdi_uids() == set() and plugin.metadata_uids() == set()
    assert "cancelled by the caller" in plugin.log_text()
    assert plugin.stop() == 0


def test_an_unprepare_overrules_a_prepare_that_never_saw_a_cancellation(make_plugin, api, tmp_path):
    # A second kubelet connection unprepares while the first call (not cancelled) still reads.
    plugin, kubelet = _kube_plugin(make_plugin, api, tmp_path)
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.stall("x")
    call = kubelet.start_prepare([ref(x)])
    api.wait_read("x")
    with plugin.client() as other:
        assert other.unprepare([ref(x)]) == {ref(x)[2]: ""}
    api.release("x")
    answer = kubelet.prepare_result(call.result(timeout=GENEROUS_S))[ref(x)[2]]
    assert "unprepared while this prepare was still in flight" in answer.error
    assert plugin.cdi_uids() == set() and ref(x)[2] not in _recorded(plugin)
    assert plugin.stop() == 0
