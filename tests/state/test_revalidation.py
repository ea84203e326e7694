"""Preparation-time revalidation (KEP-5963 driver responsibility 3) against already-prepared devices.

The scheduler may have co-allocated devices it should not have (gate off, version skew, a bug):
the plugin refuses the claim, names the devices and counter set, and leaves nothing behind.
"""

from __future__ import annotations

import json

from state.conftest import result


def _refused(env, st, ref) -> str:
    out = st.prepare([ref])[ref.uid]
    assert out.error, "expected a revalidation failure"
    assert ref.uid not in st.prepared(), "a refused claim must leave no checkpoint entry"
    assert not any(ref.uid in f for f in env.cdi_files()), "a refused claim must leave no CDI spec"
    return out.error


def test_mig_and_full_gpu_on_one_counter_set_are_refused(env):
    st = env.state()
    mig = env.claims.add("mig", [result("gpu-0-mig-1g5gb-0")])
    full = env.claims.add("full", [result("gpu-0")])
    assert st.prepare([mig])[mig.uid].error == ""
    error = _refused(env, st, full)
    assert "preparation-time revalidation failed" in error
    assert "gpu-0-counters" in error and "gpu-0-mig-1g5gb-0" in error and "gpu-0" in error


def test_mig_and_vgpu_groups_are_refused(env):
    st = env.state()
    vgpu = env.claims.add("vgpu", [result("gpu-1-vgpu-a100x-10c-0")])
    mig = env.claims.add("mig", [result("gpu-1-mig-1g5gb-0")])
    assert st.prepare([vgpu])[vgpu.uid].error == ""
    error = _refused(env, st, mig)
    assert "groups incompatible on counter set gpu-1-counters" in error


def test_overlapping_mig_placements_exhaust_counters(env):
    st = env.state()
    big = env.claims.add("big", [result("gpu-0-mig-4g20gb-0")])  # memory slices 0-3
    overlap = env.claims.add("overlap", [result("gpu-0-mig-2g10gb-2")])  # slices 2-3
    ok = env.claims.add("ok", [result("gpu-0-mig-3g20gb-4")])  # slices 4-7
    assert st.prepare([big])[big.uid].error == ""
    error = _refused(env, st, overlap)
    assert "counters exhausted on counter set gpu-0-counters" in error
    assert st.prepare([ok])[ok.uid].error == ""


def test_exclusive_device_prepared_twice_is_refused(env):
    st = env.state()
    a = env.claims.add("a", [result("gpu-1-mig-1g5gb-0")])
    b = env.claims.add("b", [result("gpu-1-mig-1g5gb-0")])
    assert st.prepare([a])[a.uid].error == ""
    error = _refused(env, st, b)
    assert "allocated more than once" in error and "gpu-1-mig-1g5gb-0" in error


def test_vf_bandwidth_value_from_is_checked(env):
    st = env.state()

    def vf(name, device, amount):
        return env.claims.add(name, [result(device, consumedCounters=[
            {"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": amount}}}])])

    first = vf("a", "nic-0-vf-0", "60G")
    second = vf("b", "nic-0-vf-1", "60G")
    third = vf("c", "nic-0-vf-2", "40G")
    out = st.prepare([first])[first.uid]
    assert out.error == ""
    spec = json.loads(next(env.cdi_root.glob(f"*{first.uid}.json")).read_text())
    assert "FAKE_DRA_NIC_0_VF_0_BANDWIDTH=60G" in spec["devices"][0]["containerEdits"]["env"]
    error = _refused(env, st, second)
    assert "counters exhausted on counter set nic-0-counters" in error and "bandwidth" in error
    assert st.prepare([third])[third.uid].error == ""


def test_revalidation_counts_claims_prepared_by_a_previous_process(env):
    a = env.claims.add("a", [result("gpu-0-mig-1g5gb-0")])
    assert env.state().prepare([a])[a.uid].error == ""
    full = env.claims.add("full", [result("gpu-0")])
    error = _refused(env, env.state(), full)  # restarted plugin
    assert "gpu-0-counters" in error


def test_conflict_within_one_request(env):
    st = env.state()
    a = env.claims.add("a", [result("gpu-0")])
    b = env.claims.add("b", [result("gpu-0-mig-1g5gb-0")])
    out = st.prepare([a, b])
    assert out[a.uid].error == "" and "gpu-0-counters" in out[b.uid].error


def test_unprepare_frees_the_counter_set(env):
    st = env.state()
    a = env.claims.add("a", [result("gpu-0")])
    b = env.claims.add("b", [result("gpu-0-mig-1g5gb-0")])
    st.prepare([a])
    assert st.prepare([b])[b.uid].error
    st.unprepare([a])
    assert st.prepare([b])[b.uid].error == ""


def test_time_shared_device_may_be_prepared_many_times(env):
    st = env.state()
    refs = [env.claims.add(f"ts{i}", [result("gpu-0-timeslicing", shareID=f"00000000-0000-0000-0000-{i:012d}")]) for i in range(5)]
    out = st.prepare(refs)
    assert all(not r.error for r in out.values())


def test_admin_access_does_not_conflict(env):
    st = env.state()
    a = env.claims.add("a", [result("gpu-1")])
    admin = env.claims.add("admin", [result("gpu-1", adminAccess=True)])
    st.prepare([a])
    assert st.prepare([admin])[admin.uid].error == ""


def test_a_claim_whose_commit_failed_does_not_stay_reserved(env, monkeypatch):
    st = env.state()
    a = env.claims.add("a", [result("gpu-0")])

    def boom(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(st._store, "write", boom)
    assert "writing checkpoint" in st.prepare([a])[a.uid].error
    monkeypatch.undo()
    b = env.claims.add("b", [result("gpu-0-mig-1g5gb-0")])
    assert st.prepare([b])[b.uid].error == "", "the failed claim must not keep gpu-0 reserved"


def test_list_typed_attribute_values_reach_the_workload_comma_joined():
    from driver.personality.fakedra.env import device_env
    from driver.state.types import ClaimRef

    ref = ClaimRef(namespace="default", name="c", uid="u-1")
    device = {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "numaNode": {"ints": [0, 1]}}}
    env = device_env(ref, {"device": "gpu-0", "request": "r"}, device, None, "fake-dra.example.com")
    assert env["FAKE_DRA_GPU_0_NUMA_NODE"] == "0,1" and env["FAKE_DRA_GPU_0_TYPE"] == "gpu"


def test_a_device_held_only_through_admin_access_is_free_for_others(env):
    # kube-scheduler does not count adminAccess results as allocated (dynamicresources
    # foreachAllocatedDevice), so it may give the same device to a normal claim afterwards.
    st = env.state()
    admin = env.claims.add("admin", [result("gpu-1-mig-1g5gb-0", adminAccess=True)])
    a = env.claims.add("a", [result("gpu-1-mig-1g5gb-0")])
    assert st.prepare([admin])[admin.uid].error == ""
    assert st.prepare([a])[a.uid].error == ""


def test_admin_access_holds_no_compatibility_groups(env):
    # Nor do its groups bind the counter set: a vGPU claim beside a MIG device held only for
    # monitoring is what the scheduler allocates, so preparation accepts it.
    st = env.state()
    admin = env.claims.add("admin", [result("gpu-1-mig-1g5gb-0", adminAccess=True)])
    vgpu = env.claims.add("vgpu", [result("gpu-1-vgpu-a100x-10c-0")])
    assert st.prepare([admin])[admin.uid].error == ""
    assert st.prepare([vgpu])[vgpu.uid].error == ""


def test_admin_access_is_remembered_across_a_plugin_restart(env):
    admin = env.claims.add("admin", [result("gpu-1-mig-1g5gb-0", adminAccess=True)])
    assert env.state().prepare([admin])[admin.uid].error == ""
    recorded = json.loads((env.state_dir / "checkpoint.json").read_text())["claims"][admin.uid]["devices"]
    assert [d.get("adminAccess") for d in recorded] == [True]
    vgpu = env.claims.add("vgpu", [result("gpu-1-vgpu-a100x-10c-0")])
    assert env.state().prepare([vgpu])[vgpu.uid].error == ""  # restarted plugin, checkpoint reloaded


def test_a_normal_claim_still_blocks_groups_after_an_admin_claim_of_it(env):
    st = env.state()
    mig = env.claims.add("mig", [result("gpu-1-mig-1g5gb-0")])
    admin = env.claims.add("admin", [result("gpu-1-mig-1g5gb-0", adminAccess=True)])
    vgpu = env.claims.add("vgpu", [result("gpu-1-vgpu-a100x-10c-0")])
    assert st.prepare([mig])[mig.uid].error == ""
    assert st.prepare([admin])[admin.uid].error == ""
    assert "groups incompatible on counter set gpu-1-counters" in _refused(env, st, vgpu)
