"""Shutdown and deadlines of DeviceState in-process: cancellation, rollback, and nothing written
after the state directory is released (the process-level hand-over is tests/adversarial)."""

from __future__ import annotations

import json
import threading
import time

from driver.state.checkpoint import STARTED
from state.conftest import result
from waiting import GENEROUS_S, wait_until


class _Waiting:
    """A claim source whose reads wait on the call's deadline (like the API reader retrying)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.reading = threading.Event()

    def get_claim(self, namespace, name, deadline=None):
        self.reading.set()
        while deadline.wait(0.05):
            pass
        deadline.check(f"reading resourceclaim {namespace}/{name}")
        return self.inner.get_claim(namespace, name)


def _cancelled_at(env, step: str, **kw):
    """A DeviceState whose calls are cancelled (as by a shutdown) when a prepare reaches `step`."""
    holder: list = []

    def hook(current: str) -> None:
        if current == step:
            holder[0]._calls.cancel.set()

    holder.append(env.state(crash_hook=hook, **kw))
    return holder[0]


def _cp(env) -> dict:
    try:
        return json.loads((env.state_dir / "checkpoint.json").read_text())["claims"]
    except FileNotFoundError:
        return {}


def test_shutdown_cancels_a_read_at_the_end_of_the_grace_period(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    source = _Waiting(env.claims)
    env.claims, claims = source, env.claims  # type: ignore[assignment]
    st = env.state()
    env.claims = claims
    out: dict = {}
    call = threading.Thread(target=lambda: out.update(st.prepare([ref])))
    call.start()
    assert source.reading.wait(GENEROUS_S)
    t0 = time.monotonic()
    assert st.shutdown(grace_s=0.3, cancel_s=2.0) is True
    assert 0.3 <= time.monotonic() - t0 < 0.3 + 2.0 + 1.0  # grace, then the read cancelled at once
    call.join(GENEROUS_S)
    assert "cancelled, the plugin is shutting down; retry" in out[ref.uid].error
    assert st.prepared() == {}
    st.close()


def test_no_call_starts_after_shutdown(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = env.state()
    assert st.shutdown(grace_s=0.1, cancel_s=0.1)
    assert "shutting down" in st.prepare([ref])[ref.uid].error
    assert "shutting down" in st.unprepare([ref])[ref.uid]
    assert st.prepared() == {} and env.cdi_files() == []


def test_a_refused_call_shortens_names_that_failed_validation(env):
    from driver.state.types import ClaimRef

    st = env.state()
    assert st.shutdown(grace_s=0.1, cancel_s=0.1)
    huge = ClaimRef("default", "n" * 1_000_000, "0d6c1f3e-5f3c-4b1e-9e7a-2b1d3c4e5f60")
    for answer in (st.prepare([huge])[huge.uid].error, st.unprepare([huge])[huge.uid]):
        assert "shutting down" in answer and "(1000000 chars)" in answer and len(answer) < 400


def test_a_prepare_cancelled_before_its_commit_is_rolled_back_and_flushed(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = _cancelled_at(env, "prepare-cdi-written")  # while the CDI spec is being written
    out = st.prepare([ref])[ref.uid]
    assert "cancelled" in out.error
    assert st.prepared() == {} and env.cdi_files() == []
    assert ref.uid in _cp(env), "PrepareStarted reached the disk before the cancellation"
    assert st.shutdown(grace_s=0.1, cancel_s=0.1)
    assert _cp(env) == {}, "shutdown's final flush persists the rollback"


def test_a_spec_that_cannot_be_removed_keeps_its_claim_reserved(env, monkeypatch):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = _cancelled_at(env, "prepare-cdi-written")

    def refuse(uid: str) -> bool:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(st._cdi, "remove", refuse)
    assert "cancelled" in st.prepare([ref])[ref.uid].error
    assert st.prepared()[ref.uid].state == STARTED, "a CDI spec must never be left without a record"
    assert len(env.cdi_files()) == 1


def test_shutdown_reports_a_call_still_writing_after_the_cancel_window(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    release = threading.Event()

    def stall(step: str) -> None:
        if step == "prepare-started":
            release.wait(GENEROUS_S)

    st = env.state(crash_hook=stall)
    call = threading.Thread(target=st.prepare, args=([ref],))
    call.start()
    wait_until(lambda: ref.uid in _cp(env), "the prepare to record PrepareStarted")
    assert st.shutdown(grace_s=0.1, cancel_s=0.2) is False
    release.set()
    call.join(GENEROUS_S)


def test_a_failed_final_flush_is_logged_and_shutdown_still_completes(env, monkeypatch, caplog):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = _cancelled_at(env, "prepare-cdi-written")
    st.prepare([ref])

    def full(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(st._store, "write", full)
    assert st.shutdown(grace_s=0.1, cancel_s=0.1) is True
    assert "final checkpoint write failed" in caplog.text
    # What stays on disk is the PrepareStarted record: the device stays reserved, nothing is lost.
    assert _cp(env)[ref.uid]["state"] == STARTED


def test_nothing_is_written_after_the_state_directory_is_released(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = env.state()
    st.close()
    out = st.prepare([ref])[ref.uid]
    assert "released" in out.error
    assert not (env.state_dir / "checkpoint.json").exists()


def test_a_call_never_outlasts_max_call_s(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    source = _Waiting(env.claims)
    env.claims, claims = source, env.claims  # type: ignore[assignment]
    st = env.state(max_call_s=1.0)
    env.claims = claims
    t0 = time.monotonic()
    out = st.prepare([ref], timeout_s=None)[ref.uid]  # no gRPC deadline: the cap applies
    assert time.monotonic() - t0 < 1.5 and "deadline passed" in out.error
    t0 = time.monotonic()
    out = st.prepare([ref], timeout_s=0.8)[ref.uid]  # a shorter gRPC deadline wins
    assert time.monotonic() - t0 < 0.8 and "deadline passed" in out.error


def test_a_cancelled_prepare_also_takes_back_its_device_metadata(env):
    from driver.state.metadata import DeviceMetadataWriter

    ref = env.claims.add("c1", [result("gpu-0")])
    holder: list = []

    def hook(step: str) -> None:
        if step == "prepare-cdi-written":
            holder[0]._calls.cancel.set()

    writer = DeviceMetadataWriter(env.state_dir, "fake-dra.example.com")
    st = env.state(crash_hook=hook, metadata=writer)
    holder.append(st)
    assert "cancelled" in st.prepare([ref])[ref.uid].error
    assert env.cdi_files() == [] and not (writer.root / ref.uid).exists()
