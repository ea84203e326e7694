"""The partition picture, from slices and allocated claims only (accounting: driver.allocator.usage)."""

from __future__ import annotations

from driver.allocator.usage import usage_of
from driver.e2e import partition_map

D = "fake-dra.example.com"
POOL = {"name": "n", "generation": 1, "resourceSliceCount": 2}


def _s(v: str) -> dict:
    return {"string": v}


SLICES = [
    {"metadata": {"name": "counters"}, "spec": {"driver": D, "pool": POOL, "nodeName": "n", "sharedCounters": [
        {"name": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}, "memory-slice-0": {"value": "1"},
                                                "memory-slice-1": {"value": "1"}}},
        {"name": "nic-0-counters", "counters": {"bandwidth": {"value": "100G"}}},
    ]}},
    {"metadata": {"name": "devices"}, "spec": {"driver": D, "pool": POOL, "nodeName": "n", "devices": [
        {"name": "gpu-0", "attributes": {"type": _s("gpu"), "uuid": _s("GPU-0"), "index": {"int": 0}},
         "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]},
        {"name": "gpu-0-mig-1g5gb-1", "attributes": {"type": _s("mig"), "parentUUID": _s("GPU-0"), "profile": _s("1g.5gb"),
                                                    "memorySliceStart": {"int": 1}, "memorySlices": {"int": 1}},
         "consumesCounters": [{"counterSet": "gpu-0-counters",
                               "counters": {"memory": {"value": "5Gi"}, "memory-slice-1": {"value": "1"}}}]},
        {"name": "nic-0-vf-0", "attributes": {"type": _s("vf"), "pfInterface": _s("ens1")},
         "consumesCounters": [{"counterSet": "nic-0-counters",
                               "counters": {"bandwidth": {"valueFrom": {"capacityName": f"{D}/bandwidth"}}}}]},
        {"name": "nic-0-vf-1", "attributes": {"type": _s("vf"), "pfInterface": _s("ens1")},
         "consumesCounters": [{"counterSet": "nic-0-counters",
                               "counters": {"bandwidth": {"valueFrom": {"capacityName": f"{D}/bandwidth"}}}}]},
    ]}},
]


def _claim(name: str, device: str, consumed: list | None = None, driver: str = D) -> dict:
    result = {"request": "r", "driver": driver, "pool": "n", "device": device}
    if consumed:
        result["consumedCounters"] = consumed
    return {"metadata": {"namespace": "ns", "name": name}, "status": {"allocation": {"devices": {"results": [result]}}}}


CLAIMS = [
    _claim("mig", "gpu-0-mig-1g5gb-1"),
    _claim("vf", "nic-0-vf-0", [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "40G"}}}]),
    _claim("other", "gpu-0", driver="other.example.com"),
]


def test_render_marks_holders_and_counters_left() -> None:
    text = partition_map.render(SLICES, CLAIMS, D)
    assert "MIG slices     [. A]  1g.5gb@1" in text
    assert "counters left  memory slices 1/2, memory 35Gi/40Gi" in text
    assert "NIC ens1  1/2 VFs in use, bandwidth left 60G of 100G  (B:nic-0-vf-0 40G)" in text
    assert "claims: A = ns/mig; B = ns/vf" in text and "other" not in text, "other drivers' devices are not ours"


def test_a_bad_record_is_reported_not_fatal() -> None:
    bad = _claim("vf", "nic-0-vf-0", [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "lots"}}}])
    usage = usage_of(SLICES, [bad])
    assert any("ns/vf" in p and "bandwidth" in p for p in usage.problems), usage.problems
    text = partition_map.render_usage(usage, usage.for_node("n"))
    assert "records that could not be read:" in text and "ns/vf" in text


def test_lines_wrap_at_the_width_without_cutting_names() -> None:
    many = [_claim(f"vf-claim-{i}", f"nic-0-vf-{i}", [{"counterSet": "nic-0-counters",
                                                       "counters": {"bandwidth": {"value": "1G"}}}]) for i in range(2)]
    text = partition_map.render(SLICES, many, D, width=40)
    assert all(len(line) <= 40 for line in text.splitlines() if " " in line.strip())
    assert "nic-0-vf-1" in text.split()[-12:] or "nic-0-vf-1" in text


def test_other_drivers_and_unpublished_devices_are_listed_not_drawn() -> None:
    other = {"metadata": {"name": "o"}, "spec": {"driver": "other.example.com", "nodeName": "n",
             "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
             "sharedCounters": [{"name": "cs", "counters": {"u": {"value": "4"}}}]}}
    other_devices = {"metadata": {"name": "od"}, "spec": {"driver": "other.example.com", "nodeName": "n",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "acc-0", "consumesCounters": [{"counterSet": "cs", "counters": {"u": {"value": "3"}}}]}]}}
    claims = [{"metadata": {"namespace": "ns", "name": "acc"}, "status": {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "other.example.com", "pool": "p", "device": "acc-0"}]}}}},
              _claim("gone", "gpu-0-mig-7g40gb-0")]
    usage = usage_of([*SLICES, other, other_devices], claims)
    text = partition_map.render_usage(usage, usage.for_node("n"))
    assert "node n: pool other.example.com/p, generation 1, 1 devices" in text
    assert "device acc-0  held by A:ns/acc" in text and "counter set cs: left u 1/4" in text
    assert "claims holding devices no pool publishes any more: ns/gone" in text
