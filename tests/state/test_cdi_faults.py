"""A read-only or full CDI root fails the claims that need a spec, and reserves nothing.

The tests run as root, where file modes do not stop writes, so the faults are injected at the
system-call level for paths under the CDI root only: a read-only mount refuses open(O_CREAT),
rename and even unlink of a file that does not exist (EROFS comes before the lookup); a full one
refuses writes (ENOSPC) but lets files be removed.
"""

from __future__ import annotations

import errno
import json
import os

import pytest

from state.conftest import result


@pytest.fixture
def cdi_fault(env, monkeypatch):
    root = str(env.cdi_root)
    real_open, real_replace, real_unlink, real_write, real_close = os.open, os.replace, os.unlink, os.write, os.close
    fds: set[int] = set()
    mode = {"kind": None}

    def under(path) -> bool:
        return os.fspath(path).startswith(root + os.sep)

    def fail(code):
        raise OSError(code, os.strerror(code))

    def fake_open(path, flags, *args, **kw):
        if mode["kind"] == "ro" and under(path) and flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR):
            fail(errno.EROFS)
        fd = real_open(path, flags, *args, **kw)
        if under(path):
            fds.add(fd)
        return fd

    def fake_write(fd, data):
        if mode["kind"] == "full" and fd in fds:
            fail(errno.ENOSPC)
        return real_write(fd, data)

    def fake_replace(src, dst, *args, **kw):
        if mode["kind"] == "ro" and under(dst):
            fail(errno.EROFS)
        return real_replace(src, dst, *args, **kw)

    def fake_unlink(path, *args, **kw):
        if mode["kind"] == "ro" and under(path):
            fail(errno.EROFS)
        return real_unlink(path, *args, **kw)

    def fake_close(fd):
        fds.discard(fd)  # the number is reused by the next open, maybe outside the CDI root
        return real_close(fd)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "close", fake_close)
    monkeypatch.setattr(os, "write", fake_write)
    monkeypatch.setattr(os, "replace", fake_replace)
    monkeypatch.setattr(os, "unlink", fake_unlink)

    def set_mode(kind):
        mode["kind"] = kind
    return set_mode


@pytest.mark.parametrize("kind, message", [("ro", "Read-only file system"), ("full", "No space left on device")])
def test_a_failing_cdi_root_is_a_per_claim_error_and_reserves_nothing(env, cdi_fault, kind, message):
    st = env.state()
    ref = env.claims.add("c1", [result("gpu-0")])
    cdi_fault(kind)
    out = st.prepare([ref])[ref.uid]
    assert out.error.startswith("claim default/c1: writing CDI spec:") and message in out.error
    assert st.prepared() == {}, "a claim whose spec could not be written must not stay PrepareStarted"
    on_disk = json.loads((env.state_dir / "checkpoint.json").read_text())["claims"]
    assert on_disk == {}, "the rollback reaches the checkpoint file too, not only memory (a restart must not reserve)"
    assert env.cdi_files() == [] and [p.name for p in env.cdi_root.iterdir()] == [], "no temp file left behind"
    cdi_fault(None)
    # the devices are free: another claim takes gpu-0's counters, and the first one's retry then fails on them
    mig = env.claims.add("mig", [result("gpu-0-mig-1g5gb-0")])
    assert st.prepare([mig])[mig.uid].error == ""
    assert "gpu-0-counters" in st.prepare([ref])[ref.uid].error


def test_the_other_claims_of_the_call_are_unaffected(env, cdi_fault):
    st = env.state()
    before = env.claims.add("before", [result("gpu-1")])
    assert st.prepare([before])[before.uid].error == ""
    a, b = env.claims.add("a", [result("gpu-0")]), env.claims.add("b", [result("nic-0-vf-0")])
    cdi_fault("ro")
    out = st.prepare([a, before, b])
    assert out[before.uid].error == "", "an already prepared claim is still answered"
    assert "Read-only file system" in out[a.uid].error and "Read-only file system" in out[b.uid].error
    assert set(st.prepared()) == {before.uid}
    # unprepare on a read-only root keeps the record so the kubelet's retry can finish it
    assert "removing CDI spec" in st.unprepare([before])[before.uid]
    assert set(st.prepared()) == {before.uid}
    cdi_fault(None)
    assert st.unprepare([before]) == {before.uid: ""} and st.prepared() == {}
    out = st.prepare([a, b])
    assert out[a.uid].error == "" and out[b.uid].error == ""
    assert len(env.cdi_files()) == 2


def test_a_prepare_started_claim_whose_retry_hits_a_read_only_root(env, cdi_fault):
    """Crash after PrepareStarted + CDI write; the retry meets a read-only root: the claim stays
    as it was (PrepareStarted, to be prepared again), the call still answers."""
    ref = env.claims.add("c1", [result("gpu-0")])

    def crash(step):
        if step == "prepare-cdi-written":
            raise SystemExit("simulated crash")

    with pytest.raises(SystemExit):
        env.state(crash_hook=crash).prepare([ref])
    st = env.state()
    assert st.prepared()[ref.uid].state == "PrepareStarted"
    cdi_fault("ro")
    out = st.prepare([ref])[ref.uid]
    assert "Read-only file system" in out.error
    assert st.prepared()[ref.uid].state == "PrepareStarted"
    cdi_fault(None)
    assert st.prepare([ref])[ref.uid].error == ""
    assert st.prepared()[ref.uid].state == "PrepareCompleted"
