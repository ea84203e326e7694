"""Opaque config validation, concurrent prepare/unprepare, corrupt checkpoint recovery."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from driver.personality.fakedra.opaque import API_VERSION
from state.conftest import DRIVER, result


def _opaque(params, requests=None, driver=DRIVER, source="FromClaim"):
    entry = {"source": source, "opaque": {"driver": driver, "parameters": params}}
    if requests is not None:
        entry["requests"] = requests
    return entry


def _env_of(env, ref) -> dict[str, str]:
    spec = json.loads(next(env.cdi_root.glob(f"*{ref.uid}.json")).read_text())
    return dict(e.split("=", 1) for d in spec["devices"] for e in d["containerEdits"]["env"])


def test_class_then_claim_config_applies_last_wins(env):
    cfg = [
        _opaque({"apiVersion": API_VERSION, "kind": "GpuConfig", "sharing": {"strategy": "Exclusive"}}, source="FromClass"),
        _opaque({"apiVersion": API_VERSION, "kind": "GpuConfig", "sharing": {"strategy": "MPS", "mps": {"activeThreadPercentage": 50}}},
                requests=["gpu"]),
        _opaque({"whatever": True}, driver="other.example.com"),  # other drivers' config is not ours to judge
    ]
    ref = env.claims.add("c", [result("gpu-0-mps", "gpu", shareID="00000000-0000-0000-0000-000000000001")], config=cfg)
    out = env.state().prepare([ref])[ref.uid]
    assert out.error == ""
    vars_ = _env_of(env, ref)
    assert vars_["FAKE_DRA_GPU_0_MPS_CONFIG_KIND"] == "GpuConfig"
    assert json.loads(vars_["FAKE_DRA_GPU_0_MPS_CONFIG"]) == {"strategy": "MPS", "activeThreadPercentage": 50}


def test_vf_config_and_subrequest_matching(env):
    cfg = [_opaque({"apiVersion": API_VERSION, "kind": "VfConfig", "vlan": 100, "mtu": 9000, "trust": True},
                   requests=["net"])]
    ref = env.claims.add("c", [result("nic-0-vf-3", "net/fast")], config=cfg)
    assert env.state().prepare([ref])[ref.uid].error == ""
    assert json.loads(_env_of(env, ref)["FAKE_DRA_NIC_0_VF_3_CONFIG"]) == {"vlan": 100, "mtu": 9000, "trust": True}


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"apiVersion": API_VERSION, "kind": "TpuConfig"}, "unknown kind 'TpuConfig'"),
        ({"apiVersion": "v9", "kind": "GpuConfig"}, "apiVersion: expected"),
        ({"apiVersion": API_VERSION, "kind": "GpuConfig", "sharng": {}}, "unknown field 'sharng'"),
        ({"apiVersion": API_VERSION, "kind": "GpuConfig", "sharing": {"strategy": "Fast"}}, "sharing.strategy: 'Fast'"),
        ({"apiVersion": API_VERSION, "kind": "GpuConfig",
          "sharing": {"strategy": "MPS", "mps": {"activeThreadPercentage": 500}}}, "activeThreadPercentage: must be"),
        ({"apiVersion": API_VERSION, "kind": "GpuConfig",
          "sharing": {"strategy": "Exclusive", "timeSlicing": {"interval": "Long"}}}, "only valid with strategy TimeSlicing"),
        ({"apiVersion": API_VERSION, "kind": "VfConfig"}, "VfConfig cannot configure device 'gpu-1' of type 'gpu'"),
        ("not-an-object", "must be an object"),
        (None, "must be an object"),
    ],
)
def test_malformed_opaque_config_is_a_per_claim_error(env, params, fragment):
    ref = env.claims.add("c", [result("gpu-1", "gpu")], config=[_opaque(params)])
    good = env.claims.add("good", [result("gpu-0-mig-1g5gb-0", "gpu")])
    out = env.state().prepare([ref, good])
    assert fragment in out[ref.uid].error and "config[0]" in out[ref.uid].error
    assert out[good.uid].error == ""
    assert not any(ref.uid in f for f in env.cdi_files())


def test_vf_config_out_of_range(env):
    ref = env.claims.add("c", [result("nic-0-vf-0", "net")],
                         config=[_opaque({"apiVersion": API_VERSION, "kind": "VfConfig", "vlan": 5000})])
    assert "vlan: must be an integer in [0, 4094]" in env.state().prepare([ref])[ref.uid].error


def test_concurrent_prepare_and_unprepare_of_the_same_claim_stay_consistent(env):
    st = env.state()
    ref = env.claims.add("c", [result("gpu-1-mig-1g5gb-3")])
    errors: list[str] = []

    def prep():
        for _ in range(30):
            r = st.prepare([ref])[ref.uid]
            if r.error:
                errors.append(r.error)

    def unprep():
        for _ in range(30):
            e = st.unprepare([ref])[ref.uid]
            if e:
                errors.append(e)

    threads = [threading.Thread(target=f) for f in (prep, unprep, prep, unprep)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # An unprepare overrules a prepare of the same claim still in flight (the kubelet never sends
    # both at once, but when it cancels a prepare and unprepares, the unprepare must win).
    assert [e for e in errors if "unprepared while this prepare was still in flight" not in e] == []
    prepared = ref.uid in st.prepared()
    assert prepared == any(ref.uid in f for f in env.cdi_files()), "checkpoint and CDI specs disagree"
    # Whatever the interleaving, a final prepare and unprepare both succeed.
    assert st.prepare([ref])[ref.uid].error == ""
    assert st.unprepare([ref]) == {ref.uid: ""} and env.cdi_files() == []


@pytest.mark.parametrize("garbage", [b"{not json", b"", b'{"kind": "FakeDraCheckpoint", "version": 99, "claims": {}}',
                                     b'{"kind": "FakeDraCheckpoint", "version": 1, "driver": "fake-dra.example.com", '
                                     b'"claims": {"u1": {"state": "Bogus"}}}'])
def test_corrupt_checkpoint_is_set_aside_and_state_rebuilt_from_cdi(env, caplog, garbage):
    ref = env.claims.add("c", [result("gpu-0")])
    env.state().prepare([ref])
    (env.state_dir / "checkpoint.json").write_bytes(garbage)
    with caplog.at_level(logging.ERROR, logger="fake-dra.state"):
        st = env.state()
    assert any(("is corrupt" in r.getMessage() or "written by a newer release (version 99" in r.getMessage())
               and "kept as checkpoint.json.corrupt-" in r.getMessage() for r in caplog.records)
    assert len(list(env.state_dir.glob("checkpoint.json.corrupt-*"))) == 1
    assert list(st.prepared()) == [ref.uid], "state must be rebuilt from the CDI specs on disk"
    # Rebuilt entries still guard the counter set and unprepare cleanly.
    mig = env.claims.add("mig", [result("gpu-0-mig-1g5gb-0")])
    assert "gpu-0-counters" in st.prepare([mig])[mig.uid].error
    assert st.prepare([ref])[ref.uid].error == ""
    assert st.unprepare([ref]) == {ref.uid: ""} and env.cdi_files() == []


def test_checkpoint_of_another_driver_is_not_trusted(env, caplog):
    env.state_dir.mkdir(parents=True)
    (env.state_dir / "checkpoint.json").write_text(json.dumps(
        {"kind": "FakeDraCheckpoint", "version": 1, "driver": "other.example.com", "claims": {}}))
    with caplog.at_level(logging.ERROR):
        st = env.state()
    assert st.prepared() == {}
    assert "written for driver 'other.example.com'" in caplog.text
