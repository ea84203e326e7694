"""ResourceClaim status.devices for prepared VFs: what DeviceState reports through the sink, when it
does not, how it survives errors, and the local-store path end to end."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from driver.errors import ConflictError, FakeDraError, ForbiddenError, NotFoundError
from driver.state.claimstatus import ClaimStatusReporter, vf_entries
from driver.state.netinfo import sysfs_network_data
from driver.state.sources import StoreClaimSource
from driver.state.types import ClaimRef, PreparedDevice
from driver.store.claimstatus import StoreClaimStatus
from driver.store.objectstore import ObjectStore
from state.conftest import DRIVER, NODE, result

NOW = "2026-05-01T12:00:00Z"


class RecordingSink:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[ClaimRef, str, list[dict[str, Any]]]] = []
        self.error = error

    def apply_device_status(self, ref, driver, entries):
        self.calls.append((ref, driver, entries))
        if self.error is not None:
            raise self.error


def reporter(sink, demo_sysfs, **kw) -> ClaimStatusReporter:
    return ClaimStatusReporter(sink, DRIVER, network_data=sysfs_network_data(demo_sysfs, DRIVER),
                               now=lambda: NOW, **kw)


def mac_of(demo_sysfs, bdf: str, interface: str) -> str:
    return (demo_sysfs / "bus" / "pci" / "devices" / bdf / "net" / interface / "address").read_text().strip()


def test_prepare_reports_each_vf_ready_with_its_network_data(env, demo_sysfs):
    sink = RecordingSink()
    ref = env.claims.add("c", [result("nic-0-vf-0", "net"), result("nic-0-vf-1", "net"), result("gpu-1", "gpu")])
    env.claims.claims[("default", "c")]["metadata"]["generation"] = 3
    st = env.state(claim_status=reporter(sink, demo_sysfs))
    assert st.prepare([ref])[ref.uid].error == ""
    ((got_ref, driver, entries),) = sink.calls
    assert (got_ref, driver) == (ref, DRIVER)
    assert [e["device"] for e in entries] == ["nic-0-vf-0", "nic-0-vf-1"], "VFs only, not the GPU"
    vf0 = entries[0]
    bdf = env.pool.devices()["nic-0-vf-0"]["attributes"]["pciBusID"]["string"]
    assert vf0 == {
        "driver": DRIVER, "pool": NODE, "device": "nic-0-vf-0",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared",
                        "message": "VF prepared for the claim's containers by the kubelet plugin",
                        "lastTransitionTime": NOW, "observedGeneration": 3}],
        "networkData": {"interfaceName": "ens3f0v0", "hardwareAddress": mac_of(demo_sysfs, bdf, "ens3f0v0")},
    }


def test_claims_without_vfs_cost_no_status_request(env, demo_sysfs):
    sink = RecordingSink()
    ref = env.claims.add("c", [result("gpu-0-mig-1g5gb-0", "gpu")])
    st = env.state(claim_status=reporter(sink, demo_sysfs))
    st.prepare([ref])
    st.unprepare([ref])
    assert sink.calls == []


def test_unprepare_clears_the_entries_also_after_a_restart_and_with_the_vf_gone(env, demo_sysfs):
    sink = RecordingSink()
    ref = env.claims.add("c", [result("nic-0-vf-0", "net")])
    env.state(claim_status=reporter(sink, demo_sysfs)).prepare([ref])
    del env.claims.claims[("default", "c")]  # unprepare must not need the claim
    from driver.state.pool import PoolCache

    class Shrunk:  # the VF disappeared from the inventory (sriov_numvfs lowered) meanwhile
        name, slices = env.pool.name, env.pool.slices

        def devices(self):
            return {k: v for k, v in env.pool.devices().items() if k != "nic-0-vf-0"}

    st = env.state(claim_status=reporter(sink, demo_sysfs), pool_cache=PoolCache(lambda: Shrunk()))
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert sink.calls[-1] == (ref, DRIVER, []), "known to be a VF from the type recorded at prepare"


def test_a_retry_that_finds_the_status_already_written_does_not_write_again(env, demo_sysfs):
    sink = RecordingSink()
    ref = env.claims.add("c", [result("nic-0-vf-0", "net")])
    rep = reporter(sink, demo_sysfs)
    claim = env.claims.claims[("default", "c")]
    devs = [PreparedDevice(("net",), NODE, "nic-0-vf-0", ())]
    claim["status"]["devices"] = vf_entries(DRIVER, claim, devs, env.pool.devices(),
                                            sysfs_network_data(demo_sysfs, DRIVER), "2026-01-01T00:00:00Z")
    env.state(claim_status=rep).prepare([ref])
    assert sink.calls == []


def test_still_ready_keeps_its_transition_time_and_a_changed_entry_is_rewritten(env, demo_sysfs):
    claim = {"metadata": {"generation": 1}, "status": {"devices": [
        {"driver": DRIVER, "pool": NODE, "device": "nic-0-vf-0",
         "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        {"driver": "other.example.com", "pool": NODE, "device": "nic-0-vf-0", "conditions": []},
    ]}}
    devs = [PreparedDevice(("net",), NODE, "nic-0-vf-0", (), share_id="share-1"),
            PreparedDevice(("net",), NODE, "nic-0-vf-1", ())]
    entries = vf_entries(DRIVER, claim, devs, env.pool.devices(), None, NOW)
    # vf-0 has a shareID now, so it is another list entry: a new transition.
    assert entries[0]["shareID"] == "share-1" and entries[0]["conditions"][0]["lastTransitionTime"] == NOW
    claim["status"]["devices"][0]["shareID"] = "share-1"
    entries = vf_entries(DRIVER, claim, devs, env.pool.devices(), None, NOW)
    assert entries[0]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert entries[1]["conditions"][0]["lastTransitionTime"] == NOW
    assert "networkData" not in entries[0], "no lookup given: no network data"


def test_forbidden_is_a_warning_once_and_prepare_succeeds(env, demo_sysfs, caplog):
    sink = RecordingSink(ForbiddenError("resourceclaim default/c status: HTTP 403: forbidden"))
    st = env.state(claim_status=reporter(sink, demo_sysfs))
    refs = [env.claims.add(f"c{i}", [result(f"nic-0-vf-{i}", "net")]) for i in range(2)]
    with caplog.at_level(logging.DEBUG, logger="fake-dra.claimstatus"):
        for ref in refs:
            assert st.prepare([ref])[ref.uid].error == ""
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "fake-dra.claimstatus"]
    assert len(warnings) == 1 and "associated-node:patch on resourceclaims/driver" in warnings[0].getMessage()
    assert len(sink.calls) == 2, "still tried for the second claim (RBAC may have been granted meanwhile)"


@pytest.mark.parametrize("error, level", [
    (NotFoundError("gone"), logging.INFO),
    (ConflictError("uid changed"), logging.INFO),
    (FakeDraError("HTTP 500"), logging.WARNING),
    (OSError(28, "No space left on device"), logging.WARNING),
])
def test_other_failures_never_fail_the_claim(env, demo_sysfs, caplog, error, level):
    sink = RecordingSink(error)
    ref = env.claims.add("c", [result("nic-0-vf-0", "net")])
    st = env.state(claim_status=reporter(sink, demo_sysfs))
    with caplog.at_level(logging.INFO, logger="fake-dra.claimstatus"):
        assert st.prepare([ref])[ref.uid].error == ""
        assert st.unprepare([ref]) == {ref.uid: ""}
    assert [r.levelno for r in caplog.records if r.name == "fake-dra.claimstatus"] == [level, level]


def test_status_writes_of_one_call_share_a_time_budget(env, demo_sysfs, caplog):
    sink = RecordingSink()
    ticks = iter(range(100))
    rep = reporter(sink, demo_sysfs, budget_s=1.5, clock=lambda: float(next(ticks)))
    refs = [env.claims.add(f"c{i}", [result(f"nic-0-vf-{i}", "net")]) for i in range(3)]
    with caplog.at_level(logging.WARNING, logger="fake-dra.claimstatus"):
        out = env.state(claim_status=rep).prepare(refs)
    assert all(r.error == "" for r in out.values())
    assert len(sink.calls) == 1, "the clock passed the budget after the first write"
    assert sum("time budget" in r.getMessage() for r in caplog.records) == 2


def test_a_write_is_not_started_without_time_left_in_the_kubelet_call(env, demo_sysfs, caplog):
    # The reporter is called within the prepare's Deadline: a call with less than the sink's request
    # timeout left (or cancelled by a shutdown) skips the informational status write.
    import time

    from driver.deadline import Deadline

    sink = RecordingSink()
    rep = reporter(sink, demo_sysfs, write_reserve_s=5.0)
    ref = ClaimRef("default", "c", "uid-c")
    devices = [PreparedDevice(request_names=("net",), pool=NODE, device="nic-0-vf-0", cdi_device_ids=())]
    claim = {"metadata": {"name": "c", "namespace": "default", "uid": "uid-c"}, "status": {}}
    with caplog.at_level(logging.WARNING, logger="fake-dra.claimstatus"):
        rep.prepared([(ref, claim, devices)], env.pool.devices(), Deadline(time.monotonic() + 2.0))
        cancelled = Deadline(time.monotonic() + 40.0)
        cancelled.cancel.set()
        rep.unprepared([(ref, devices)], env.pool.devices(), cancelled)
    assert sink.calls == []
    assert sum("too close to its deadline" in r.getMessage() for r in caplog.records) == 2
    rep.prepared([(ref, claim, devices)], env.pool.devices(), Deadline(time.monotonic() + 40.0))
    assert len(sink.calls) == 1


def test_local_store_path_end_to_end(env, demo_sysfs):
    """The claim source and the status sink on one real local store, as `fake-dra run --store` wires them."""
    store = ObjectStore(env.root / "store")
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "vf", "namespace": "default"},
             "status": {"allocation": {"devices": {"results": [result("nic-0-vf-5", "net")]}},
                        "devices": [{"driver": "other.example.com", "pool": "p", "device": "d"}]}}
    uid = store.create("resourceclaims", claim)["metadata"]["uid"]
    ref = ClaimRef("default", "vf", uid)
    env.claims = StoreClaimSource(store)  # type: ignore[assignment]
    st = env.state(claim_status=reporter(StoreClaimStatus(store), demo_sysfs))
    assert st.prepare([ref])[uid].error == ""
    devices = store.get("resourceclaims", "default", "vf")["status"]["devices"]
    assert [(d["driver"], d["device"]) for d in devices] == [("other.example.com", "d"), (DRIVER, "nic-0-vf-5")]
    assert devices[1]["conditions"][0]["type"] == "Ready"
    assert devices[1]["networkData"]["interfaceName"] == "ens3f0v5"
    assert st.unprepare([ref]) == {uid: ""}
    devices = store.get("resourceclaims", "default", "vf")["status"]["devices"]
    assert [(d["driver"], d["device"]) for d in devices] == [("other.example.com", "d")]


@pytest.mark.parametrize("devices", [7, "junk", [1, "x", {"driver": DRIVER, "pool": NODE, "device": "nic-0-vf-0",
                                                         "conditions": 5}]])
def test_a_hostile_status_devices_field_does_not_fail_the_prepare(env, demo_sysfs, devices):
    sink = RecordingSink()
    ref = env.claims.add("c", [result("nic-0-vf-0", "net")])
    env.claims.claims[("default", "c")]["status"]["devices"] = devices
    assert env.state(claim_status=reporter(sink, demo_sysfs)).prepare([ref])[ref.uid].error == ""
    ((_, _, entries),) = sink.calls
    assert [e["device"] for e in entries] == ["nic-0-vf-0"] and entries[0]["conditions"][0]["lastTransitionTime"] == NOW


def test_a_failure_computing_one_claims_status_skips_only_that_claim(env, demo_sysfs, caplog):
    sink = RecordingSink()

    def broken(device):
        raise RuntimeError("sysfs went away")

    rep = ClaimStatusReporter(sink, DRIVER, network_data=broken, now=lambda: NOW)
    ref = env.claims.add("c", [result("nic-0-vf-0", "net")])
    with caplog.at_level(logging.WARNING, logger="fake-dra.claimstatus"):
        assert env.state(claim_status=rep).prepare([ref])[ref.uid].error == ""
    assert sink.calls == []
    assert any("cannot compute the claim's device status" in r.getMessage() for r in caplog.records)


def test_a_store_lock_held_by_another_process_costs_the_status_write_not_the_prepare(env, demo_sysfs, caplog):
    """Another process holding the local store's writer lock (a stuck `fake-dra apply`, or a
    hostile one) used to block the status write inside prepare for ever: the kubelet's call
    timed out, and two such calls took every state-gate slot of the plugin."""
    import fcntl
    import time

    store = ObjectStore(env.root / "store")
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "vf", "namespace": "default"},
             "status": {"allocation": {"devices": {"results": [result("nic-0-vf-5", "net")]}}}}
    uid = store.create("resourceclaims", claim)["metadata"]["uid"]
    ref = ClaimRef("default", "vf", uid)
    env.claims = StoreClaimSource(store)  # type: ignore[assignment]
    st = env.state(claim_status=reporter(StoreClaimStatus(store, lock_timeout_s=0.3), demo_sysfs))
    with open(env.root / "store" / ".lock", "a+") as held:  # another open file description: flock conflicts
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        assert st.prepare([ref])[uid].error == ""
        assert time.monotonic() - started < 5
        assert any("has been held by PID" in str(getattr(r, "error", "")) for r in caplog.records)
        assert st.unprepare([ref]) == {uid: ""}
    assert "devices" not in store.get("resourceclaims", "default", "vf")["status"]
