"""Usage (driver.allocator.cluster.usage, `usage_of` in driver.allocator.usage): what the allocated
claims hold in the pools, by the allocator's accounting, read from a ClusterView."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from driver.allocator import allocate_claims
from driver.allocator.cluster import ClusterView
from driver.allocator.usage import Usage, counters_left, usage_of
from driver.errors import InputError
from driver.features import Features, parse_features

D = "d.example.com"
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {}}


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


def _claim_pending(name: str, device: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "c", "selectors": [{"cel": {"expression": f"'id' in device.attributes['{D}'] && device.attributes['{D}'].id == '{device}'"}}]}}]}}}


def _summary(usage: Usage) -> tuple:
    """Everything a report shows, orders that depend on commit history aside."""
    pools = {pid: (p.generation, sorted(p.node_names), p.incomplete, sorted(p.devices),
                   {cs: {n: (c.total, c.used) for n, c in cs_counters.items()} for cs, cs_counters in p.counters().items()},
                   {d: sorted(map(repr, hs)) for d, hs in p.holds.items()}, sorted(map(repr, p.unpublished)))
             for pid, p in usage.pools.items()}
    return pools, sorted(map(repr, usage.unpublished)), usage.problems


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
    assert not pool.incomplete and pool.unpublished == [] and usage.nodes() == ["n1"]


def test_admin_access_is_listed_but_leaves_the_device_to_others() -> None:
    admin = _claim("admin", {"device": "big", "adminAccess": True})
    view = ClusterView([CLASS, *_slices(), admin], features=Features.all_on())
    assert [(h.claim, h.admin) for h in view.holders(D, "p", "big")] == [("default/admin", True)]
    (allocation,) = view.allocator("n1").allocate([_claim_pending("user", "big")], commit=False)
    assert [r["device"] for r in allocation["devices"]["results"]] == ["big"]
    view.set_claim({**_claim_pending("user", "big"), "status": {"allocation": allocation}})
    pool = view.usage().pools[(D, "p")]
    assert [(h.claim, h.admin) for h in pool.holds["big"]] == [("default/admin", True), ("default/user", False)]
    assert pool.counters()["cs"]["u"].used == 6, "charged once, by the non-admin hold"
    view.remove_claim("default/user")
    assert view.usage().pools[(D, "p")].counters()["cs"]["u"].used == 0
    view.remove_claim("default/admin")
    assert view.holders(D, "p", "big") == [] and view.usage().pools[(D, "p")].holds == {}


def test_gates_as_the_scheduler_applies_them() -> None:
    claims = [_claim("c", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": "30G"}}]}),
              _claim("b", {"device": "big"})]
    off = usage_of(_slices(), claims, parse_features("DRASharedConsumableCapacity=false"))
    assert off.pools[(D, "p")].counters()["cs"]["bw"].used == 0, "a scheduler without KEP-5941 counts valueFrom as zero"
    assert off.pools[(D, "p")].counters()["cs"]["u"].used == 6
    assert off.pools[(D, "p")].holds["vf"][0].consumed_counters == ()
    unset = usage_of(_slices(), claims, Features())  # unset: follows the slices, as the allocator does
    assert unset.pools[(D, "p")].counters()["cs"]["bw"].used == 30 * 10**9
    none = usage_of(_slices(), claims, parse_features("DRAPartitionableDevices=false"))
    assert none.pools[(D, "p")].used == {}
    assert none.pools[(D, "p")].counters()["cs"]["u"].left == 8, "totals are still listed, nothing charged"


def test_agrees_with_the_allocator() -> None:
    # What the view says is left is what the allocator can still give: 8 - 6 leaves 2 for 'u'.
    claims = [_claim("b", {"device": "big"})]
    left = counters_left(usage_of(_slices(), claims), D)
    assert left["cs"]["u"] == 2
    out = allocate_claims([CLASS, *_slices(), *claims, _claim_pending("again", "big")], node="n1")
    assert not out.ok and "big2: u needs 6, 2 left" in out.results[0].reason, out.results[0].reason


def test_newest_generation_and_unpublished_devices() -> None:
    slices = _slices() + [dict(s, metadata={"name": s["metadata"]["name"] + "-2"},
                               spec={**s["spec"], "pool": {**s["spec"]["pool"], "generation": 2}})
                          for s in _slices()]
    slices[-1]["spec"] = {**slices[-1]["spec"], "devices": [{"name": "big"}]}  # gen 2: big consumes nothing
    gone = _claim("g", {"device": "gone"}, {"device": "x", "pool": "no-such-pool"})
    usage = usage_of(slices, [_claim("b", {"device": "big"}), gone])
    pool = usage.pools[(D, "p")]
    assert pool.generation == 2 and pool.counters()["cs"]["u"].used == 0
    assert [(h.claim, h.device[1:]) for h in usage.unpublished] == [("default/g", ("p", "gone")),
                                                                     ("default/g", ("no-such-pool", "x"))]
    assert [h.device[2] for h in pool.unpublished] == ["gone"] and "gone" not in pool.holds
    assert [h.device[2] for h in usage.holds_of("default/g")] == ["gone", "x"], "result order"


def test_incomplete_pools_and_pools_spanning_nodes() -> None:
    spanning = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"wide-{n}"},
                 "spec": {"driver": D, "pool": {"name": "wide", "generation": 1, "resourceSliceCount": 3},
                          "nodeName": n, "devices": [{"name": f"dev-{n}"}]}} for n in ("n1", "n2")]
    usage = usage_of([*_slices(), *spanning], [_claim("w", {"pool": "wide", "device": "dev-n2"})])
    wide = usage.pools[(D, "wide")]
    assert wide.incomplete and not usage.pools[(D, "p")].incomplete, "2 of 3 slices published"
    assert wide.node is None and wide.node_names == {"n1", "n2"}
    assert [p.name for p in usage.for_node("n2")] == ["wide"] and [p.name for p in usage.for_node("n1")] == ["p", "wide"]
    assert [h.claim for h in wide.holds["dev-n2"]] == ["default/w"]


def test_bad_records_are_problems_not_crashes() -> None:
    bad = _claim("bad", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": "-1"}}]},
                 {"device": "big2"})
    no_device = {"metadata": {"name": "nd"}, "status": {"allocation": {"devices": {"results": [{"driver": D}]}}}}
    usage = usage_of(_slices(), [bad, no_device, _claim("ok", {"device": "big"})])
    assert len(usage.problems) == 2 and "default/bad" in usage.problems[0] and "negative" in usage.problems[0]
    assert "results[0].pool: required" in usage.problems[1]
    assert usage.pools[(D, "p")].counters()["cs"]["u"].used == 12, "the bad claim's readable result counts"
    with pytest.raises(InputError, match=r"ResourceClaim default/bad: .*results\[0\].*negative"):
        ClusterView(features=Features.all_on()).set_claim(bad)  # an allocator's view refuses it


def test_only_held_devices_are_parsed_and_a_broken_one_is_a_problem() -> None:
    slices = _slices()
    slices[1]["spec"]["devices"] += [{"name": "broken", "capacity": {"x": {}}}, {"name": "unheld", "capacity": {"x": {}}}]
    usage = usage_of(slices, [_claim("a", {"device": "broken"}), _claim("b", {"device": "big"}),
                              _claim("a2", {"device": "broken", "adminAccess": True}), _claim("a3", {"device": "broken"})])
    assert usage.problems == ["ResourceSlice p-d: spec.devices[5].capacity[x].value: required"], "once per device"
    pool = usage.pools[(D, "p")]
    assert [h.claim for h in pool.holds["broken"]] == ["default/a", "default/a2", "default/a3"]
    assert pool.counters()["cs"]["u"].used == 6
    with pytest.raises(InputError, match=r"devices\[6\].capacity\[x\].value: required"):
        pool.device_info("unheld")


def test_a_view_kept_current_reads_like_one_built_afresh() -> None:
    slices = _slices()
    view = ClusterView(slices, features=Features.all_on())
    held: dict[str, dict] = {}
    steps = [("a", {"device": "shared", "shareID": "s1", "consumedCapacity": {"slots": "1"}}),
             ("b", {"device": "big"}),
             ("c", {"device": "vf", "consumedCounters": [{"counterSet": "cs", "counters": {"bw": "30G"}}]}),
             ("d", {"device": "shared", "shareID": "s2", "consumedCapacity": {"slots": "2"}}),
             ("e", {"device": "big", "adminAccess": True})]
    before = view.usage()
    for i, (name, result) in enumerate(steps):
        held[name] = _claim(name, result)
        view.set_claim(held[name])
        if i == 2:
            view.remove_claim("default/a")
            del held["a"]
        assert _summary(view.usage()) == _summary(usage_of(slices, held.values()))
    assert _summary(before) == _summary(usage_of(slices, [])), "a report is a snapshot"
    slices = [{**s, "spec": {**s["spec"], "pool": {**s["spec"]["pool"], "generation": 2}}} for s in slices]
    slices[1]["spec"]["devices"] = [d for d in slices[1]["spec"]["devices"] if d["name"] != "big"]
    view.replace_slices(slices)  # the driver republished without 'big': its holds hold nothing now
    assert _summary(view.usage()) == _summary(usage_of(slices, held.values()))
    assert [h.claim for h in view.usage().unpublished] == ["default/b", "default/e"]
    assert view.usage(pool="p").pools.keys() == {(D, "p")} and view.usage(driver="other").pools == {}
    assert view.usage(driver="other").holds_of("default/b") == [] and view.usage(driver="other").unpublished == []


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
