"""Checks compare observations with expectations, and fail when they differ (never vacuously pass)."""

from __future__ import annotations

from fractions import Fraction

from driver.e2e.observe import Observation, check_step
from driver.e2e.scenario import Step

MIG_A = {"name": "gpu-0-mig-1g5gb-0", "type": "mig", "profile": "1g.5gb", "parentUUID": "GPU-A"}
MIG_B = {"name": "gpu-0-mig-1g5gb-1", "type": "mig", "profile": "1g.5gb", "parentUUID": "GPU-A"}
VGPU = {"name": "gpu-1-vgpu-a100-4c-0", "type": "vgpu", "profile": "A100-4C", "parentUUID": "GPU-B"}


def _checks(expect: dict, obs: Observation, claims: dict | None = None) -> dict[str, bool]:
    step = Step(1, "pod", {"name": "p"}, expect)
    return {c.what: c.ok for c in check_step(step, obs, claims or {})}


def test_scheduled_and_reason() -> None:
    obs = Observation(scheduled=False, reason="request gpu: groups incompatible on counter set gpu-1-counters")
    assert _checks({"scheduled": False, "unschedulable": ["groups", "gpu-1-counters"]}, obs) == {
        "scheduled": True, "unschedulable": True}
    assert _checks({"scheduled": True, "unschedulable": "counters exhausted"}, obs) == {
        "scheduled": False, "unschedulable": False}
    # Not observed at all is a failure, not a pass.
    assert _checks({"scheduled": False}, Observation()) == {"scheduled": False}


def test_devices() -> None:
    obs = Observation(devices=[MIG_A, MIG_B])
    assert _checks({"devices": {"count": 2, "type": "mig", "same_parent": True}}, obs)["devices"]
    assert not _checks({"devices": {"count": 1}}, obs)["devices"]
    assert not _checks({"devices": {"distinct_parents": True}}, obs)["devices"]
    assert not _checks({"devices": {"type": "vgpu"}}, obs)["devices"]
    assert _checks({"devices": {"same_parent_as": "other"}}, obs, {"other": [MIG_A]})["devices"]
    assert not _checks({"devices": {"same_parent_as": "other"}}, obs, {"other": [VGPU]})["devices"]
    assert not _checks({"devices": {"type": "mig"}}, Observation(devices=[]))["devices"]


def test_prepare_env_and_cdi() -> None:
    obs = Observation(prepared=True, cdi_devices=["k8s.x/device=u-gpu-0"],
                      env={"FAKE_DRA_GPU_0_TYPE": "mig", "FAKE_DRA_GPU_0_PROFILE": "1g.5gb"})
    got = check_step(Step(1, "pod", {"name": "p"}, {"prepared": True, "cdi_devices": 1,
                                                       "env": {"FAKE_DRA_*_TYPE": "mig", "FAKE_DRA_*_UUID": "*"}}), obs, {})
    assert [c.ok for c in got] == [True, True, True, False]  # UUID var is missing
    failed = Observation(prepared=False, prepare_error="claim x: groups incompatible on gpu-1-counters")
    assert _checks({"prepared": False, "prepare_error": ["compatib", "gpu-1"]}, failed) == {
        "prepared": True, "prepare error": True}
    assert _checks({"prepare_error": "compatib"}, Observation(prepared=True)) == {"prepare error": False}


def test_health_released_counters() -> None:
    obs = Observation(health={"gpu-0": "UNHEALTHY"}, released=True,
                      counters={"nic-0-counters": {"bandwidth": Fraction(60 * 10**9)}})
    got = _checks({"health": {"gpu-0": "unhealthy"}, "released": True,
                   "counters": {"nic-0": {"bandwidth": "60G"}}}, obs)
    assert got == {"health": True, "released": True, "counter left": True}
    assert _checks({"counters": {"nic-0": {"bandwidth": "50G"}}}, obs) == {"counter left": False}
    assert _checks({"health": {"gpu-1": "HEALTHY"}}, obs) == {"health": False}
    assert _checks({"released": False}, Observation()) == {"released": False}


def test_prediction_is_compared_on_every_pod_step() -> None:
    agree = Observation(scheduled=True, predicted=(True, ""))
    assert _checks({}, agree) == {"allocator prediction": True}
    disagree = Observation(scheduled=False, reason="0/3 nodes available", predicted=(True, ""))
    assert _checks({}, disagree) == {"allocator prediction": False}


def test_unobservable_expectations_are_reported_not_faked() -> None:
    obs = Observation(prepared=True, unobservable=frozenset({"prepare_calls_same"}))
    got = check_step(Step(1, "pod", {"name": "p"}, {"prepared": True, "prepare_calls_same": True}), obs, {})
    assert [(c.what, c.observed, c.ok) for c in got] == [
        ("prepare_calls_same", "not observable on this backend", True), ("prepared", "yes", True)]
