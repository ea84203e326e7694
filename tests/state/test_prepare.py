"""Prepare/unprepare semantics of driver.state.prepare.DeviceState (no gRPC, real files)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from driver.state.checkpoint import COMPLETED
from driver.state.types import ClaimRef
from state.conftest import DRIVER, result
from waiting import GENEROUS_S


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_prepare_writes_cdi_and_checkpoint(env):
    ref = env.claims.add("c1", [result("gpu-0-mig-1g5gb-0", "gpu")])
    st = env.state()
    out = st.prepare([ref])
    assert out[ref.uid].error == ""
    (dev,) = out[ref.uid].devices
    assert (dev.pool, dev.device, dev.request_names) == ("n1", "gpu-0-mig-1g5gb-0", ("gpu",))
    assert dev.cdi_device_ids == (f"k8s.{DRIVER}/device={ref.uid}-gpu-0-mig-1g5gb-0",)

    spec_path = env.cdi_root / f"k8s.{DRIVER}_device_{ref.uid}.json"
    spec = json.loads(spec_path.read_text())
    assert spec["cdiVersion"] == "0.6.0" and spec["kind"] == f"k8s.{DRIVER}/device"
    assert [d["name"] for d in spec["devices"]] == [f"{ref.uid}-gpu-0-mig-1g5gb-0"]
    env_vars = dict(e.split("=", 1) for e in spec["devices"][0]["containerEdits"]["env"])
    assert env_vars["FAKE_DRA_GPU_0_MIG_1G5GB_0_TYPE"] == "mig"
    assert env_vars["FAKE_DRA_GPU_0_MIG_1G5GB_0_PROFILE"] == "1g.5gb"
    assert env_vars["FAKE_DRA_GPU_0_MIG_1G5GB_0_PCI_BUS_ID"] == "0000:07:00.0"
    assert env_vars["FAKE_DRA_GPU_0_MIG_1G5GB_0_PARENT_UUID"].startswith("GPU-")
    assert env_vars["FAKE_DRA_GPU_0_MIG_1G5GB_0_UUID"].startswith("MIG-")
    assert env_vars["FAKE_DRA_GPU_0_MIG_1G5GB_0_CLAIM"] == "default/c1"

    cp = json.loads((env.state_dir / "checkpoint.json").read_text())
    assert cp["kind"] == "FakeDraCheckpoint" and cp["version"] == 1 and cp["bootID"] == "boot-1"
    assert cp["claims"][ref.uid]["state"] == COMPLETED
    assert cp["claims"][ref.uid]["devices"][0]["device"] == "gpu-0-mig-1g5gb-0"
    # Files: CDI readable by the runtime, checkpoint private.
    assert _mode(spec_path) == 0o644
    assert _mode(env.state_dir / "checkpoint.json") == 0o600
    assert _mode(env.state_dir) == 0o700
    assert _mode(env.state_dir / "lock") == 0o600


def test_prepare_is_idempotent_and_recreates_a_lost_cdi_spec(env):
    ref = env.claims.add("c1", [result("gpu-0", "gpu")])
    st = env.state()
    first = st.prepare([ref])[ref.uid]
    (spec,) = env.cdi_root.glob("*.json")
    spec.unlink()
    second = st.prepare([ref])[ref.uid]
    assert second == first
    assert spec.exists(), "a missing CDI spec must be recreated on an idempotent prepare"


def test_prepare_after_restart_answers_from_checkpoint(env):
    ref = env.claims.add("c1", [result("gpu-0", "gpu")])
    first = env.state().prepare([ref])[ref.uid]
    again = env.state().prepare([ref])[ref.uid]  # new process, same dirs
    assert again == first


def test_changed_boot_id_re_prepares(env):
    ref = env.claims.add("c1", [result("gpu-0", "gpu")])
    env.state().prepare([ref])
    env.boot_id = "boot-2"
    for p in env.cdi_root.glob("*.json"):
        p.unlink()  # /var/run is a tmpfs: gone after a reboot
    out = env.state().prepare([ref])[ref.uid]
    assert out.error == ""
    cp = json.loads((env.state_dir / "checkpoint.json").read_text())
    assert cp["claims"][ref.uid]["bootID"] == "boot-2"
    assert len(env.cdi_files()) == 1


def test_unprepare_removes_everything_and_is_idempotent(env):
    ref = env.claims.add("c1", [result("gpu-0", "gpu")])
    st = env.state()
    st.prepare([ref])
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert env.cdi_files() == []
    assert st.prepared() == {}
    assert st.unprepare([ref]) == {ref.uid: ""}


def test_unprepare_works_after_claim_deleted_and_after_restart(env):
    ref = env.claims.add("c1", [result("gpu-0", "gpu")])
    env.state().prepare([ref])
    del env.claims.claims[("default", "c1")]
    reads = env.claims.reads
    st = env.state()
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert env.claims.reads == reads, "unprepare must not need the claim object"
    assert env.cdi_files() == [] and st.prepared() == {}


def test_unprepare_unknown_uid_succeeds(env):
    st = env.state()
    assert st.unprepare([ClaimRef("default", "never", "0000-1111")]) == {"0000-1111": ""}


def test_unknown_claim(env):
    st = env.state()
    out = st.prepare([ClaimRef("default", "missing", "abc-1")])
    assert out["abc-1"].error == "claim default/missing not found"


def test_uid_mismatch(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    out = env.state().prepare([ClaimRef("default", "c1", "some-other-uid")])
    assert "UID mismatch" in out["some-other-uid"].error and ref.uid in out["some-other-uid"].error


def test_unallocated_claim(env):
    ref = env.claims.add("c1", None)
    assert env.state().prepare([ref])[ref.uid].error == "claim default/c1 is not allocated"


def test_results_for_other_drivers_only_prepare_nothing(env):
    ref = env.claims.add("c1", [{"request": "r", "driver": "other.example.com", "pool": "n1", "device": "x"}])
    st = env.state()
    out = st.prepare([ref])[ref.uid]
    assert out.error == "" and out.devices == ()
    # CDI runtimes reject a spec without devices ("invalid spec, no devices": container-device-interface
    # pkg/cdi/spec.go), so there is none, and nothing is recorded that a rebuild from specs would lose.
    assert env.cdi_files() == [] and st.prepared() == {}
    assert st.prepare([ref])[ref.uid] == out, "the retry answers the same"
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert env.cdi_files() == [] and st.prepared() == {}


def test_device_not_in_inventory(env):
    ref = env.claims.add("c1", [result("gpu-7")])
    out = env.state().prepare([ref])[ref.uid]
    assert out.error == "claim default/c1: device gpu-7 of pool n1 is not in the current inventory"
    assert env.cdi_files() == []


def test_claims_naming_unknown_devices_rediscover_once_per_call(env):
    """Rediscovery runs under the global lock: once per claim, 300 such claims held every other
    prepare for 5 s (measured against a live plugin); a device hot-added meanwhile is still found."""
    from driver.state.pool import PoolCache

    renders = []

    def render():
        renders.append(1)
        return env.pool
    cache = PoolCache(render)
    cache.get()  # filled, as the health loop does at start
    st = env.state(pool_cache=cache)
    refs = [env.claims.add(f"ghost{i}", [result(f"ghost-{i}")]) for i in range(50)]
    before = len(renders)
    out = st.prepare(refs)
    assert all("not in the current inventory" in out[r.uid].error for r in refs)
    assert len(renders) - before == 1
    good = env.claims.add("good", [result("gpu-1")])
    assert st.prepare([good])[good.uid].error == ""


def test_device_of_another_pool(env):
    ref = env.claims.add("c1", [{**result("gpu-0"), "pool": "n2"}])
    out = env.state().prepare([ref])[ref.uid]
    assert "is in pool 'n2', not this node's pool 'n1'" in out.error


def test_duplicate_claims_in_one_request(env):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = env.state()
    out = st.prepare([ref, ref, ref])
    assert list(out) == [ref.uid] and out[ref.uid].error == ""
    clash = st.prepare([ref, ClaimRef("default", "c2", ref.uid)])
    assert "listed twice with different names" in clash[ref.uid].error


@pytest.mark.parametrize(
    "ref, fragment",
    [
        (ClaimRef("../../etc", "c", "u-1"), "invalid claim namespace"),
        (ClaimRef("default", "a/b", "u-1"), "invalid claim name"),
        (ClaimRef("default", "c", "../../x"), "invalid claim UID"),
        (ClaimRef("default", "c", "a" * 65), "invalid claim UID"),
        (ClaimRef("default", "x" * 300, "u-1"), "invalid claim name"),
        (ClaimRef("default", "a.-b", "u-1"), "invalid claim name"),  # each dotted part is a label
        (ClaimRef("default", "c", "u-1\n"), "invalid claim UID"),  # no trailing newline into a file name
    ],
)
def test_hostile_names_are_rejected_before_any_file_is_touched(env, ref, fragment):
    st = env.state()
    out = st.prepare([ref])
    assert fragment in out[ref.uid].error
    assert env.claims.reads == 0
    assert env.cdi_files() == []


def test_hostile_device_name_in_allocation(env):
    ref = env.claims.add("c1", [result("../../../etc/passwd")])
    out = env.state().prepare([ref])[ref.uid]
    assert "results[0].device" in out.error and "DNS label" in out.error
    assert env.cdi_files() == []


def test_unprepare_hostile_uid(env):
    out = env.state().unprepare([ClaimRef("default", "c", "../x")])
    assert "invalid claim UID" in out["../x"]


def test_one_bad_claim_does_not_fail_the_others(env):
    good = env.claims.add("good", [result("gpu-1")])
    bad = env.claims.add("bad", [result("gpu-9")])
    out = env.state().prepare([good, ClaimRef("default", "gone", "g-1"), bad])
    assert out[good.uid].error == "" and out["g-1"].error and out[bad.uid].error
    assert len(env.cdi_files()) == 1


def test_thousands_of_claims_in_one_request(env):
    # gpu-0-timeslicing allows multiple allocations: 2000 claims can share it.
    refs = [env.claims.add(f"c{i}", [result("gpu-0-timeslicing", shareID=f"00000000-0000-0000-0000-{i:012d}")]) for i in range(2000)]
    refs += [ClaimRef("default", f"missing-{i}", f"m-{i}") for i in range(500)]
    st = env.state()
    out = st.prepare(refs)
    assert len(out) == 2500
    assert sum(1 for r in out.values() if not r.error) == 2000
    assert len(env.cdi_files()) == 2000
    assert st.unprepare(refs) == {r.uid: "" for r in refs}
    assert env.cdi_files() == []


def test_checkpoint_write_failure_leaves_nothing_behind(env, monkeypatch):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = env.state()

    def boom(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(st._store, "write", boom)
    out = st.prepare([ref])[ref.uid]
    assert "writing checkpoint" in out.error and "No space left" in out.error
    assert st.prepared() == {} and env.cdi_files() == []


def test_fsync_failure_fails_the_claim_and_the_retry_completes_it(env, monkeypatch):
    ref = env.claims.add("c1", [result("gpu-0")])
    st = env.state()

    real_write = st._store.write

    def boom(data, durable=False):
        if durable:  # the fsync of the final record fails
            raise OSError(5, "Input/output error")
        real_write(data)

    monkeypatch.setattr(st._store, "write", boom)
    monkeypatch.setattr(st._store, "sync", lambda: boom(b"", durable=True))
    assert "writing checkpoint: [Errno 5] Input/output error" in st.prepare([ref])[ref.uid].error
    # While the disk fails, nothing is acknowledged as durable, unprepares included.
    assert "writing checkpoint" in st.unprepare([ClaimRef("default", "x", "other-uid")])["other-uid"]
    monkeypatch.undo()
    out = st.prepare([ref])[ref.uid]
    assert out.error == "" and out.devices[0].device == "gpu-0"
    cp = json.loads((env.state_dir / "checkpoint.json").read_text())
    assert cp["claims"][ref.uid]["state"] == COMPLETED


def test_second_process_waits_for_the_state_directory(env):
    import threading

    first = env.state()
    started = threading.Event()
    done = threading.Event()

    def second():
        started.set()
        from driver.state.cdi import CdiWriter
        from driver.state.checkpoint import CheckpointStore
        from driver.state.pool import PoolCache
        from driver.state.prepare import DeviceState
        st = DeviceState(driver_name=DRIVER, claims=env.claims, pool=PoolCache(lambda: env.pool),
                         cdi=CdiWriter(env.cdi_root, DRIVER),
                         checkpoint=CheckpointStore(env.state_dir, driver_name=DRIVER, node_name="n1", boot_id="b"))
        done.set()
        st.close()

    t = threading.Thread(target=second)
    t.start()
    started.wait()
    assert not done.wait(0.3), "a second owner must wait while the first holds the state directory"
    first.close()
    assert done.wait(GENEROUS_S)
    t.join()


def test_entries_of_a_previous_boot_reserve_nothing(env):
    old = env.claims.add("old", [result("gpu-0")])
    env.state().prepare([old])
    env.boot_id = "boot-2"  # node rebooted; the CDI root here is persistent (not a tmpfs)
    st = env.state()
    assert st.prepared() == {} and env.cdi_files() == []
    mig = env.claims.add("mig", [result("gpu-0-mig-1g5gb-0")])
    assert st.prepare([mig])[mig.uid].error == "", "a claim of the previous boot must not block gpu-0"
    assert st.unprepare([old]) == {old.uid: ""}


@pytest.mark.parametrize("allocation, fragment", [
    ("not-a-map", "status.allocation: expected an object"),
    ({"devices": {"results": [{"driver": DRIVER, "pool": "n1"}]}}, "results[0].device"),
    ({"devices": {"results": [{"driver": DRIVER, "pool": "n1", "device": "gpu-0", "request": "r",
                               "consumedCounters": [{"counterSet": "gpu-0-counters",
                                                     "counters": {"memory": {"value": "lots"}}}]}]}}, "lots"),
])
def test_malformed_allocation_is_a_per_claim_error(env, allocation, fragment):
    ref = env.claims.add("bad", [])
    env.claims.claims[("default", "bad")]["status"] = {"allocation": allocation}
    good = env.claims.add("good", [result("gpu-1")])
    out = env.state().prepare([ref, good])
    assert out[ref.uid].error.startswith("claim default/bad") and fragment in out[ref.uid].error
    assert out[good.uid].error == ""


def test_failed_atomic_write_leaves_no_temp_file(tmp_path, monkeypatch):
    from driver import fsutil as files

    def boom(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files.os, "fsync", boom)
    with pytest.raises(OSError):
        files.atomic_write(tmp_path / "f.json", b"{}", 0o600)
    assert list(tmp_path.iterdir()) == []
