"""What a workload is told it got (CDI env, device metadata) is what it was granted: a VF allocated
by a scheduler without KEP-5941 (no amount recorded) gets the static share the driver published
with that gate off, not the whole link its hardware-truth view allows on request."""

from __future__ import annotations

import json

from driver.features import Features
from driver.slices import render_pool
from driver.model.deviceattrs import granted
from driver.state.pool import unrequested_grants
from state.conftest import result


def _env(env, uid: str) -> list[str]:
    spec = json.loads(next(env.cdi_root.glob(f"*{uid}.json")).read_text())
    return spec["devices"][0]["containerEdits"]["env"]


def test_a_vf_without_a_recorded_amount_is_told_its_static_share(env):
    st = env.state()
    ref = env.claims.add("vf", [result("nic-0-vf-0")])
    assert st.prepare([ref])[ref.uid].error == ""
    # The demo PF: 100G over 8 VFs; the gate-off slice publishes 12500M per VF, the policy default.
    assert "FAKE_DRA_NIC_0_VF_0_BANDWIDTH=12500M" in _env(env, ref.uid)


def test_a_recorded_amount_wins(env):
    st = env.state()
    ref = env.claims.add("vf", [result("nic-0-vf-1", consumedCounters=[
        {"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "40G"}}}])])
    assert st.prepare([ref])[ref.uid].error == ""
    assert "FAKE_DRA_NIC_0_VF_1_BANDWIDTH=40G" in _env(env, ref.uid)


def test_the_default_grant_is_the_static_share_of_the_gate_off_render(demo_pool, demo_sysfs):
    from driver.discovery import discover
    from driver.hardware import load_catalog

    grants = unrequested_grants(demo_pool.slices)  # valueFrom render (every gate on)
    static = render_pool(discover(demo_sysfs, load_catalog()), Features(), node_name="n1",
                         driver_name="fake-dra.example.com").devices()
    for name, amounts in grants.items():
        for capacity, amount in amounts.items():
            if name.startswith("nic-"):
                assert static[name]["capacity"][capacity]["value"] == amount, name
    assert grants["nic-0-vf-3"] == {"bandwidth": "12500M"}


def test_granted_prefers_share_then_counter_then_default_then_capacity():
    device = {"capacity": {"bandwidth": {"value": "100G"}}}
    assert granted({"consumedCapacity": {"bandwidth": "1G"}}, device, "bandwidth", {"bandwidth": "5G"}) == "1G"
    drawn = {"consumedCounters": [{"counterSet": "c", "counters": {"bandwidth": {"value": "2G"}}}]}
    assert granted(drawn, device, "bandwidth", {"bandwidth": "5G"}) == "2G"
    assert granted({}, device, "bandwidth", {"bandwidth": "5G"}) == "5G"
    assert granted({}, device, "bandwidth") == "100G"
    assert granted({}, device, "memory") is None
