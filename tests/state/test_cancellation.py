"""A prepare observes its own cancellation before it commits, and an unprepare of the same claim
overrules it at any step before that (issue 18 item 2), in-process: every step of the call."""

from __future__ import annotations

import threading

import pytest

from state.conftest import result
from waiting import GENEROUS_S


@pytest.mark.parametrize("step", ["prepare-started", "prepare-cdi-written"])
def test_an_unprepare_during_the_prepare_wins_at_every_step_before_the_commit(env, step):
    ref = env.claims.add("c", [result("gpu-0")])
    at_step, go_on = threading.Event(), threading.Event()

    def hook(current: str) -> None:
        if current == step:
            at_step.set()
            go_on.wait(GENEROUS_S)

    st = env.state(crash_hook=hook)
    out: dict = {}
    call = threading.Thread(target=lambda: out.update(st.prepare([ref])))
    call.start()
    assert at_step.wait(GENEROUS_S)
    unprepared: dict = {}
    unprep = threading.Thread(target=lambda: unprepared.update(st.unprepare([ref])))
    unprep.start()  # waits for the claim's lock, which the prepare holds
    go_on.set()
    call.join(GENEROUS_S)
    unprep.join(GENEROUS_S)
    assert "unprepared while this prepare was still in flight" in out[ref.uid].error
    assert unprepared == {ref.uid: ""}
    assert st.prepared() == {} and env.cdi_files() == []
    assert st.prepare([ref])[ref.uid].error == "", "the claim may be prepared again afterwards"


def test_a_prepare_whose_caller_went_away_rolls_back_before_it_commits(env):
    ref = env.claims.add("c", [result("gpu-1")])
    abandoned = threading.Event()

    def hook(current: str) -> None:
        if current == "prepare-cdi-written":
            abandoned.set()  # the kubelet cancels the call here (its gRPC context ends)

    st = env.state(crash_hook=hook)
    answer = st.prepare([ref], abandoned=abandoned)[ref.uid]
    assert "cancelled by the caller" in answer.error
    assert st.prepared() == {} and env.cdi_files() == []
    assert st.prepare([ref])[ref.uid].error == ""


def test_a_cancelled_call_stops_waiting_for_its_claim_read(env):
    ref = env.claims.add("c", [result("gpu-1")])
    inner = env.claims

    class Slow:
        def get_claim(self, namespace, name, deadline=None):
            while deadline.wait(0.05):
                pass
            deadline.check(f"reading resourceclaim {namespace}/{name}")
            return inner.get_claim(namespace, name)

    env.claims = Slow()  # type: ignore[assignment]
    st = env.state()
    env.claims = inner
    abandoned = threading.Event()
    threading.Timer(0.2, abandoned.set).start()
    answer = st.prepare([ref], timeout_s=20, abandoned=abandoned)[ref.uid]
    assert "cancelled by the caller" in answer.error and st.prepared() == {}


def test_an_unprepare_does_not_overrule_a_prepare_that_started_after_it(env):
    ref = env.claims.add("c", [result("gpu-0")])
    st = env.state()
    assert st.prepare([ref])[ref.uid].error == ""
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert st.prepare([ref])[ref.uid].error == "" and ref.uid in st.prepared()
