"""Remaining counters and the partition picture, from slices and allocated claims only."""

from __future__ import annotations

from fractions import Fraction

import pytest

from driver.e2e import partition_map
from driver.errors import InputError

D = "fake-dra.example.com"


def _s(v: str) -> dict:
    return {"string": v}


SLICES = [
    {"spec": {"driver": D, "sharedCounters": [
        {"name": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}, "memory-slice-0": {"value": "1"},
                                                "memory-slice-1": {"value": "1"}}},
        {"name": "nic-0-counters", "counters": {"bandwidth": {"value": "100G"}}},
    ]}},
    {"spec": {"driver": D, "devices": [
        {"name": "gpu-0", "attributes": {"type": _s("gpu"), "uuid": _s("GPU-0"), "index": {"int": 0}},
         "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]},
        {"name": "gpu-0-mig-1g5gb-1", "attributes": {"type": _s("mig"), "parentUUID": _s("GPU-0"), "profile": _s("1g.5gb"),
                                                    "memorySliceStart": {"int": 1}, "memorySlices": {"int": 1}},
         "consumesCounters": [{"counterSet": "gpu-0-counters",
                               "counters": {"memory": {"value": "5Gi"}, "memory-slice-1": {"value": "1"}}}]},
        {"name": "nic-0-vf-0", "attributes": {"type": _s("vf"), "pfInterface": _s("ens1")},
         "consumesCounters": [{"counterSet": "nic-0-counters",
                               "counters": {"bandwidth": {"valueFrom": {"capacityName": f"{D}/bandwidth"}}}}]},
    ]}},
]


def _claim(name: str, device: str, consumed: list | None = None) -> dict:
    result = {"request": "r", "driver": D, "pool": "n", "device": device}
    if consumed:
        result["consumedCounters"] = consumed
    return {"metadata": {"namespace": "ns", "name": name}, "status": {"allocation": {"devices": {"results": [result]}}}}


CLAIMS = [
    _claim("mig", "gpu-0-mig-1g5gb-1"),
    _claim("vf", "nic-0-vf-0", [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "40G"}}}]),
    {"metadata": {"name": "other"}, "status": {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "other.example.com", "pool": "n", "device": "gpu-0"}]}}}},
]


def test_remaining_counters_static_and_recorded() -> None:
    left = partition_map.remaining_counters(SLICES, partition_map.holders(CLAIMS, D))
    assert left["gpu-0-counters"]["memory"] == Fraction(35 * 2**30)
    assert left["gpu-0-counters"]["memory-slice-1"] == 0 and left["gpu-0-counters"]["memory-slice-0"] == 1
    assert left["nic-0-counters"]["bandwidth"] == Fraction(60 * 10**9)


def test_render_marks_holders() -> None:
    text = partition_map.render(SLICES, CLAIMS, D)
    assert "MIG slices     [. A]" in text
    assert "bandwidth left 60G" in text and "B:nic-0-vf-0 40G" in text
    assert "A = ns/mig" in text and "other" not in text, "other drivers' devices are not ours to draw"


def test_bad_recorded_consumption_names_the_claim() -> None:
    bad = _claim("vf", "nic-0-vf-0", [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "lots"}}}])
    with pytest.raises(InputError, match=r"claim ns/vf result nic-0-vf-0.*bandwidth"):
        partition_map.holders([bad], D)
