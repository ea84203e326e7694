"""driver.allocator.usage: what the allocated claims hold in the pools, by the allocator's accounting."""

from __future__ import annotations

import time
from fractions import Fraction

from driver.allocator import allocate_claims
from driver.allocator.usage import counters_left, usage_of
from driver.features import Features, parse_features

D = "d.example.com"


def _slices(pool: str = "p", node: str = "n1", generation: int = 1) -> list[dict]:
    meta = {"name": pool, "generation": generation, "resourceSliceCount": 2}
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{pool}-c"},
         "spec": {"driver": D, "pool": meta, "nodeName": node, "sharedCounters": [
             {"name": "cs", "counters": {"u": {"value": "8"}, "bw": {"value": "100G"}}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{pool}-d"},
         "spec": {"driver": D, "pool": meta, "nodeName": node, "devices": [
             {"name": "big", "attributes": {"id": {"string": "big"}},
              "consumesCounters": [{"counterSet": "cs", "counters": {"u": {"value": "6"}}}]},
             {"name": "big2", "attributes": {"id": {"string": "big"}},
              "consumesCounters": [{"counterSet": "cs", "counters": {"u": {"value": "6"}}}]},
             {"name": "shared", "allowMultipleAllocations": True,
              "capacity": {"slots": {"value": "4"}},
              "consumesCounters": [{"counterSet": "cs", "counters": {"u": {"value": "1"}}}]},
             {"name": "vf", "consumesCounters": [{"counterSet": "cs", "counters": {
                 "bw": {"valueFrom": {"capacityName": f"{D}/bw"}}}}]},
             {"name": "free"},
         ]}},
    ]


def _claim(name: str, *results: dict, ns: str = "default") -> dict:
    full = [{"request": "r", "driver": D, "pool": "p", **r} for r in results]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": []}}, "status": {"allocation": {"devices": {"results": full}}}}


def test_static_once_per_device_recorded_per_result_admin_free() -> None:
    claims = [
        _claim("a", {"device": "shared", "shareID": "s1", "consumedCapacity": {"slots": "1"}}),
        _claim("b", {"device": "shared", "shareID": "s2", "consumedCapacity": {"slots": "2"}}),
        _claim("c", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": {"value": "30G"}}}]}),
        _claim("d", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": "20G"}}]}),
        _claim("admin", {"device": "big", "adminAccess": True}),
    ]
    usage = usage_of(_slices(), claims)
    pool = usage.pools[(D, "p")]
    counters = pool.counters()["cs"]
    assert counters["u"].used == 1 and counters["u"].left == 7, "the shared device's static 1 is charged once"
    assert counters["bw"].used == 50 * 10**9 and counters["bw"].text == "100G"
    assert [h.claim for h in pool.holds["shared"]] == ["default/a", "default/b"]
    assert pool.capacity_used("shared") == {"slots": Fraction(3)}
    assert pool.holds["big"][0].admin, "admin access holds the device but charges nothing"
    assert pool.node == "n1" and [p.label for p in usage.for_node("n1")] == [f"{D}/p"]
    assert [h.device[2] for h in usage.holds_of("default/c")] == ["vf"]


def test_gates_as_the_scheduler_applies_them() -> None:
    claims = [_claim("c", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": "30G"}}]}),
              _claim("b", {"device": "big"})]
    off = usage_of(_slices(), claims, Features())  # DRASharedConsumableCapacity off: valueFrom counts zero
    assert off.pools[(D, "p")].counters()["cs"]["bw"].used == 0
    assert off.pools[(D, "p")].counters()["cs"]["u"].used == 6
    none = usage_of(_slices(), claims, parse_features("DRAPartitionableDevices=false"))
    assert none.pools[(D, "p")].used == {}


def test_agrees_with_the_allocator() -> None:
    # What the view says is left is what the allocator can still give: 8 - 6 leaves 2 for 'u'.
    claims = [_claim("b", {"device": "big"})]
    left = counters_left(usage_of(_slices(), claims), D)
    assert left["cs"]["u"] == 2
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {}}
    out = allocate_claims([cls, *_slices(), *claims, _claim_pending("again", "big")], node="n1")
    assert not out.ok and "big2: u needs 6, 2 left" in out.results[0].reason, out.results[0].reason


def _claim_pending(name: str, device: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "c", "selectors": [{"cel": {"expression": f"'id' in device.attributes['{D}'] && device.attributes['{D}'].id == '{device}'"}}]}}]}}}


def test_newest_generation_and_unpublished_devices() -> None:
    slices = _slices() + [dict(s, metadata={"name": s["metadata"]["name"] + "-2"},
                               spec={**s["spec"], "pool": {**s["spec"]["pool"], "generation": 2}})
                          for s in _slices()]
    slices[-1]["spec"] = {**slices[-1]["spec"], "devices": [{"name": "big"}]}  # gen 2: big consumes nothing
    usage = usage_of(slices, [_claim("b", {"device": "big"}), _claim("g", {"device": "gone"})])
    pool = usage.pools[(D, "p")]
    assert pool.generation == 2 and pool.counters()["cs"]["u"].used == 0
    assert [h.claim for h in usage.unpublished] == ["default/g"]


def test_bad_records_are_problems_not_crashes() -> None:
    bad = _claim("bad", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": "-1"}}]})
    no_device = {"metadata": {"name": "nd"}, "status": {"allocation": {"devices": {"results": [{"driver": D}]}}}}
    usage = usage_of(_slices(), [bad, no_device, _claim("ok", {"device": "big"})])
    assert len(usage.problems) == 2 and "default/bad" in usage.problems[0] and "negative" in usage.problems[0]
    assert "results[0].pool: required" in usage.problems[1]
    assert usage.pools[(D, "p")].counters()["cs"]["u"].used == 6


def test_one_thousand_nodes_in_one_pass() -> None:
    # Not a timing assertion: the bound is generous; the benchmark prints the figure.
    slices, claims = [], []
    for i in range(1000):
        slices += _slices(pool=f"p{i}", node=f"n{i}")
        claims.append({**_claim(f"c{i}", {"device": "big"}), "status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": D, "pool": f"p{i}", "device": "big"}]}}}})
    started = time.monotonic()
    usage = usage_of(slices, claims)
    assert len(usage.pools) == 1000 and all(p.counters()["cs"]["u"].left == 2 for p in usage.pools.values())
    assert time.monotonic() - started < 30
