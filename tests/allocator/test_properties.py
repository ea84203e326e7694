"""Property tests: on small random pools the allocator agrees with an exhaustive brute-force oracle.

The oracle below is written independently of driver.allocator: it enumerates every way to pick
devices for the claim's requests and checks selectors, devices in use, counters per counter set,
compatibility groups (all-no-groups, or a common group among all devices on a counter set) and
matchAttribute / distinctAttribute constraints. For every generated instance:

* allocator succeeds  <=> some assignment is valid (feasibility agrees),
* for a firstAvailable first request, the chosen subrequest is the first one that is part of any
  valid assignment (the search order), and
* any allocation the allocator returns is itself valid (no counter exceeded, no incompatible
  groups co-allocated, constraints hold, no device used twice).
"""

from __future__ import annotations

from itertools import combinations, product

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.allocator import Allocator
from driver.errors import AllocationError
from driver.features import Features

DRIVER = "p.example.com"
GROUPS = ["g1", "g2", "g3"]


@st.composite
def instances(draw):
    n_sets = draw(st.integers(1, 2))
    totals = {f"cs{i}": {"u": draw(st.integers(1, 4)), "v": draw(st.integers(1, 3))} for i in range(n_sets)}
    devices = []
    for d in range(draw(st.integers(2, 6))):
        consumes = {}
        for cs in draw(st.lists(st.sampled_from(sorted(totals)), max_size=2, unique=True)):
            consumes[cs] = {
                "u": draw(st.integers(0, 3)),
                "v": draw(st.integers(0, 2)),
                "groups": sorted(draw(st.sets(st.sampled_from(GROUPS), max_size=2))),
            }
        attr = draw(st.one_of(st.none(), st.integers(0, 1)))
        devices.append({"name": f"d{d}", "consumes": consumes, "a": attr, "kind": draw(st.sampled_from(["x", "y"]))})
    claims = []
    for c in range(draw(st.integers(1, 3))):
        requests = []
        for r in range(draw(st.integers(1, 2))):
            alternatives = [{"count": draw(st.integers(1, 2)), "kind": draw(st.sampled_from([None, "x", "y"])), "sub": None}]
            if draw(st.booleans()):  # a firstAvailable request with two subrequests
                alternatives = [{"count": draw(st.integers(1, 3)), "kind": draw(st.sampled_from([None, "x", "y"])), "sub": f"s{i}"}
                                for i in range(2)]
            requests.append({"name": f"r{r}", "alternatives": alternatives})
        constraint = draw(st.sampled_from([None, "matchAttribute", "distinctAttribute"]))
        claims.append({"name": f"c{c}", "requests": requests, "constraint": constraint})
    return totals, devices, claims


def to_objects(totals, devices):
    counters = {
        "metadata": {"name": "s-counters"},
        "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                 "sharedCounters": [{"name": cs, "counters": {k: {"value": str(v)} for k, v in c.items()}} for cs, c in totals.items()]},
    }
    devs = []
    for d in devices:
        attrs = {"kind": {"string": d["kind"]}}
        if d["a"] is not None:
            attrs["a"] = {"int": d["a"]}
        entry = {"name": d["name"], "attributes": attrs}
        if d["consumes"]:
            entry["consumesCounters"] = [
                {"counterSet": cs, "compatibilityGroups": c["groups"], "counters": {"u": {"value": str(c["u"])}, "v": {"value": str(c["v"])}}}
                for cs, c in d["consumes"].items()
            ]
        devs.append(entry)
    dev_slice = {"metadata": {"name": "s-devices"}, "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2}, "nodeName": "n", "devices": devs}}
    cls = {"kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}
    return [counters, dev_slice], [cls]


def claim_object(claim):
    requests = []
    for r in claim["requests"]:
        subs = []
        for alt in r["alternatives"]:
            exact = {"deviceClassName": "c", "count": alt["count"]}
            if alt["kind"]:
                exact["selectors"] = [{"cel": {"expression": f"device.attributes['{DRIVER}'].kind == '{alt['kind']}'"}}]
            subs.append({"name": alt["sub"], **exact} if alt["sub"] else exact)
        if r["alternatives"][0]["sub"]:
            requests.append({"name": r["name"], "firstAvailable": subs})
        else:
            requests.append({"name": r["name"], "exactly": subs[0]})
    devices = {"requests": requests}
    if claim["constraint"]:
        devices["constraints"] = [{claim["constraint"]: f"{DRIVER}/a"}]
    return {"kind": "ResourceClaim", "metadata": {"name": claim["name"], "namespace": "t"}, "spec": {"devices": devices}}


# ---- the independent oracle ------------------------------------------------------------------
def valid(chosen_by_request, alts, claim, devices, totals, in_use):
    """Is this choice (one alternative and a device set per request) a valid allocation?"""
    by_name = {d["name"]: d for d in devices}
    flat = [n for names in chosen_by_request for n in names]
    if len(set(flat)) != len(flat) or set(flat) & set(in_use):
        return False
    for alt, names in zip(alts, chosen_by_request):
        if len(names) != alt["count"] or (alt["kind"] and any(by_name[n]["kind"] != alt["kind"] for n in names)):
            return False
    everything = [by_name[n] for n in list(in_use) + flat]
    for cs, limits in totals.items():
        users = [d for d in everything if cs in d["consumes"]]
        for counter, limit in limits.items():
            if sum(d["consumes"][cs][counter] for d in users) > limit:
                return False
        group_sets = [set(d["consumes"][cs]["groups"]) for d in users]
        if group_sets and not (all(not g for g in group_sets) or (all(group_sets) and set.intersection(*group_sets))):
            return False
    if claim["constraint"]:
        values = [by_name[n]["a"] for n in flat]
        if any(v is None for v in values):
            return False
        if claim["constraint"] == "matchAttribute" and len(set(values)) > 1:
            return False
        if claim["constraint"] == "distinctAttribute" and len(set(values)) != len(values):
            return False
    return True


def oracle_first_alternative(claim, devices, totals, in_use):
    """Index of request 0's first alternative that is part of some valid allocation, or None."""
    names = [d["name"] for d in devices]
    for first in range(len(claim["requests"][0]["alternatives"])):
        choices = [[r["alternatives"][first]] if i == 0 else r["alternatives"] for i, r in enumerate(claim["requests"])]
        for alts in product(*choices):
            options = [list(combinations(names, alt["count"])) for alt in alts]
            if any(valid(choice, alts, claim, devices, totals, in_use) for choice in product(*options)):
                return first
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_allocator_agrees_with_brute_force_oracle(instance):
    totals, devices, claims = instance
    slices, classes = to_objects(totals, devices)
    alloc = Allocator(slices=slices, classes=classes, node="n")
    in_use: list[str] = []
    for claim in claims:
        first = oracle_first_alternative(claim, devices, totals, in_use)
        try:
            (allocation,) = alloc.allocate([claim_object(claim)])
        except AllocationError as exc:
            assert first is None, f"allocator failed but a valid assignment exists: {exc}"
            continue
        assert first is not None, f"allocator found {allocation} but the oracle says infeasible"
        results = allocation["devices"]["results"]
        alts, chosen = [], []
        for r in claim["requests"]:
            mine = [x for x in results if x["request"].split("/")[0] == r["name"]]
            sub = mine[0]["request"].partition("/")[2] if mine else None
            alts.append(next(a for a in r["alternatives"] if a["sub"] == (sub or None)))
            chosen.append([x["device"] for x in mine])
        # firstAvailable: the search takes the first subrequest that is part of any solution.
        assert claim["requests"][0]["alternatives"].index(alts[0]) == first
        assert valid(chosen, alts, claim, devices, totals, in_use), f"invalid allocation {chosen}"
        in_use.extend(n for names in chosen for n in names)


def _vf_objects(n_vfs, total, step):
    policy = {"default": "1", "validRange": {"min": "1", "step": str(step)}} if step else None
    counter = {"value": str(total)}
    if policy:
        counter["requestPolicy"] = policy
    counters = {"metadata": {"name": "c"}, "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "pf", "counters": {"bw": counter}}]}}
    vfs = [{"name": f"vf{i}", "consumesCounters": [{"counterSet": "pf", "counters": {"bw": {"valueFrom": {"capacityName": "bw"}}}}]}
           for i in range(n_vfs)]
    devs = {"metadata": {"name": "d"}, "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
            "nodeName": "n", "devices": vfs}}
    cls = {"kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {}}
    return [counters, devs], [cls]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 12), st.sampled_from([None, 1, 2, 3]), st.lists(st.integers(1, 7), min_size=1, max_size=6))
def test_value_from_never_exceeds_the_shared_counter(n_vfs, total, step, asks):
    slices, classes = _vf_objects(n_vfs, total, step)
    alloc = Allocator(slices=slices, classes=classes, node="n", features=Features.all_on())
    used, vfs_used = 0, 0
    for i, ask in enumerate(asks):
        consumed = ask if not step else 1 + -(-(ask - 1) // step) * step  # round up from min 1 by step
        claim = {"metadata": {"name": f"c{i}"}, "spec": {"devices": {"requests": [
            {"name": "r", "exactly": {"deviceClassName": "c", "capacity": {"requests": {"bw": str(ask)}}}}]}}}
        fits = vfs_used < n_vfs and used + consumed <= total
        try:
            (allocation,) = alloc.allocate([claim])
        except AllocationError:
            assert not fits
            continue
        assert fits
        recorded = allocation["devices"]["results"][0]["consumedCounters"]
        assert recorded == [{"counterSet": "pf", "counters": {"bw": {"value": str(consumed)}}}]
        used += consumed
        vfs_used += 1
    assert used <= total


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10), st.lists(st.one_of(st.none(), st.integers(1, 6)), min_size=1, max_size=6))
def test_shared_device_capacity_never_exceeded(capacity, asks):
    device = {"name": "nic", "allowMultipleAllocations": True, "capacity": {"bw": {"value": str(capacity)}}}
    slices = [{"metadata": {"name": "s"}, "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
               "allNodes": True, "devices": [device]}}]
    alloc = Allocator(slices=slices, classes=[{"metadata": {"name": "c"}, "spec": {}}], node="n")
    used = 0
    share_ids = set()
    allocated = 0
    for i, ask in enumerate(asks):
        exact = {"deviceClassName": "c"}
        if ask is not None:
            exact["capacity"] = {"requests": {"bw": str(ask)}}
        consumed = capacity if ask is None else ask  # no policy: omitted means everything
        claim = {"metadata": {"name": f"c{i}"}, "spec": {"devices": {"requests": [{"name": "r", "exactly": exact}]}}}
        try:
            (allocation,) = alloc.allocate([claim])
        except AllocationError:
            assert used + consumed > capacity
            continue
        result = allocation["devices"]["results"][0]
        assert result["consumedCapacity"] == {"bw": str(consumed)}
        share_ids.add(result["shareID"])
        allocated += 1
        used += consumed
    assert used <= capacity
    assert len(share_ids) == allocated  # every share gets its own shareID
