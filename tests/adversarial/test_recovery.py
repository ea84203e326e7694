"""Recovery of a lost checkpoint at every crash point (issue 18 item 1).

Before: a corrupt `checkpoint.json` was renamed aside before the rebuilt one was saved. When that
save failed (a full disk: the rename needs no blocks) or the process died in between, the next
start found no checkpoint, started empty, never rebuilt from the CDI specs, and prepared a new claim
for a device acknowledged claims still held. The same when `checkpoint.json` was deleted while CDI
specs remained, and on a rollback to an older release (a newer version was "corrupt"). Each case
here ends with the same check: the acknowledged claim is still held (PrepareCompleted, with its
spec and metadata) and a claim for its device is refused.
"""

from __future__ import annotations

import errno
import json
import signal

import pytest

from adversarial.claims import allocated_claim, ref
from driver.errors import InputError
from plugin.harness import Plugin
from state.conftest import env  # noqa: F401 (the in-process fixture of tests/state)
from waiting import GENEROUS_S

pytestmark = pytest.mark.slow


def _held_claim(plugin: Plugin) -> tuple[str, str, str]:
    """Start, prepare x on gpu-0 (acknowledged), stop with SIGKILL (nothing flushed on the way out)."""
    kubelet = plugin.start()
    x = allocated_claim("x", ["gpu-0"])
    plugin.store.create("resourceclaims", x)
    assert kubelet.prepare([ref(x)])[ref(x)[2]].error == ""
    assert plugin.stop(signal.SIGKILL) == -signal.SIGKILL
    return ref(x)


def _still_held(plugin: Plugin, x: tuple[str, str, str]) -> None:
    kubelet = plugin.start()
    claims = plugin.checkpoint()["claims"]
    assert claims[x[2]]["state"] == "PrepareCompleted", "the acknowledged prepare was lost"
    assert x[2] in plugin.cdi_uids() and x[2] in plugin.metadata_uids()
    y = allocated_claim("y", ["gpu-0"])  # a scheduler that believes gpu-0 free
    plugin.store.create("resourceclaims", y)
    assert "gpu-0" in kubelet.prepare([ref(y)])[ref(y)[2]].error, "gpu-0 was handed out twice"
    assert kubelet.prepare([x])[x[2]].error == "", "the idempotent answer for x still works"
    assert kubelet.unprepare([x]) == {x[2]: ""}
    assert kubelet.prepare([ref(y)])[ref(y)[2]].error == "", "freed by x's unprepare"
    assert plugin.stop() == 0


@pytest.mark.parametrize("step", ["recover-read", "recover-saved"])
@pytest.mark.parametrize("damage", ["corrupt", "deleted", "newer-version"])
def test_a_kill_at_each_recovery_step_loses_nothing(make_plugin, step, damage):
    plugin = make_plugin()
    x = _held_claim(plugin)
    cp = plugin.state / "checkpoint.json"
    if damage == "corrupt":
        cp.write_text('{"kind": "FakeDraCheckpoint", "claims": ')
    elif damage == "deleted":
        cp.unlink()
    else:  # a rollback: a later release wrote a format this one does not read
        newer = json.loads(cp.read_text())
        newer["version"] = 2
        cp.write_text(json.dumps(newer))
    before = cp.read_bytes() if cp.exists() else None
    proc = plugin.spawn(env={"FAKE_DRA_TEST_MODE": "1", "FAKE_DRA_CRASH_AT": step})
    assert proc.wait(GENEROUS_S) == -signal.SIGKILL, plugin.log_text()
    plugin.proc = None
    if step == "recover-read":  # nothing written yet: the damaged file (or its absence) is untouched
        assert (cp.read_bytes() if cp.exists() else None) == before
    _still_held(plugin, x)
    copies = list(plugin.state.glob("checkpoint.json.corrupt-*"))
    assert len(copies) == (0 if damage == "deleted" else 1), "one copy, however many starts it took"
    if damage != "deleted":
        assert copies[0].read_bytes() == before
    if damage == "newer-version":
        assert "written by a newer release (version 2; this build reads 1)" in plugin.log_text()


def test_a_full_disk_while_saving_the_rebuilt_checkpoint_loses_nothing(env, monkeypatch):
    # In-process: the save of the rebuilt checkpoint fails with ENOSPC (keeping the corrupt file
    # aside is a hard link, which needs no blocks). A start-up error; the next start recovers.
    from driver.state.checkpoint import CheckpointStore
    from state.conftest import result

    x = env.claims.add("x", [result("gpu-0")])
    assert env.state().prepare([x])[x.uid].error == ""
    cp = env.state_dir / "checkpoint.json"
    cp.write_text("{corrupt")
    real_write = CheckpointStore.write

    def full(self, data, durable=False):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
    monkeypatch.setattr(CheckpointStore, "write", full)
    with pytest.raises(InputError, match="No space left on device"):
        env.state()
    assert cp.read_text() == "{corrupt", "the corrupt file stays until a rebuilt one replaces it"
    monkeypatch.setattr(CheckpointStore, "write", real_write)
    st = env.state()
    assert st.prepared()[x.uid].state == "PrepareCompleted"
    y = env.claims.add("y", [result("gpu-0")])
    assert "gpu-0" in st.prepare([y])[y.uid].error
    assert len(list(env.state_dir.glob("checkpoint.json.corrupt-*"))) == 1


def test_device_metadata_is_evidence_when_the_checkpoint_and_the_spec_are_gone(make_plugin):
    # Only the metadata a running container bind-mounts is left: the claim stays reserved
    # (PrepareStarted) until the kubelet prepares it again or unprepares it.
    plugin = make_plugin()
    x = _held_claim(plugin)
    (plugin.state / "checkpoint.json").unlink()
    for spec in plugin.cdi.glob("*.json"):
        spec.unlink()
    kubelet = plugin.start()
    entry = plugin.checkpoint()["claims"][x[2]]
    assert entry["state"] == "PrepareStarted" and [d["device"] for d in entry["devices"]] == ["gpu-0"]
    assert x[2] in plugin.metadata_uids(), "the evidence was pruned"
    y = allocated_claim("y", ["gpu-0"])
    plugin.store.create("resourceclaims", y)
    assert "gpu-0" in kubelet.prepare([ref(y)])[ref(y)[2]].error
    assert kubelet.prepare([x])[x[2]].error == "" and x[2] in plugin.cdi_uids(), "x is prepared again"
    assert plugin.checkpoint()["claims"][x[2]]["state"] == "PrepareCompleted"
    assert kubelet.unprepare([x]) == {x[2]: ""} and plugin.metadata_uids() == set()
    assert plugin.stop() == 0


def test_specs_of_an_earlier_boot_are_not_evidence(make_plugin):
    # A persistent CDI root keeps specs across a reboot; with the checkpoint lost as well, they
    # must not come back as claims of this boot (their annotation records the boot).
    plugin = make_plugin()
    x = _held_claim(plugin)
    (plugin.state / "checkpoint.json").write_text("{corrupt")
    plugin.boot_id_file.write_text("boot-2\n")
    kubelet = plugin.start()
    assert plugin.checkpoint()["claims"] == {} and plugin.cdi_uids() == set() and plugin.metadata_uids() == set()
    y = allocated_claim("y", ["gpu-0"])
    plugin.store.create("resourceclaims", y)
    assert kubelet.prepare([ref(y)])[ref(y)[2]].error == ""
    assert plugin.stop() == 0
