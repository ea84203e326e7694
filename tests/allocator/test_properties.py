"""Property tests: on small random pools the allocator agrees with an exhaustive brute-force oracle.

The oracle below is written independently of driver.allocator: it enumerates every way to pick
devices for a pod's claims (one or two claims searched together, as kube-scheduler does) and
checks selectors, devices in use, counters per counter set, compatibility groups (all-no-groups,
or a common group among all devices on a counter set) and matchAttribute / distinctAttribute
constraints over list-typed attributes (DRAListTypeAttributes: a scalar is a one-element set;
matchAttribute needs an element common to all devices, distinctAttribute pairwise disjoint sets).
For every generated pod:

* allocator succeeds  <=> some joint assignment is valid (feasibility agrees),
* for a firstAvailable first request of the first claim, the chosen subrequest is the first one
  that is part of any valid assignment (the search order), and
* any allocation the allocator returns is itself valid (no counter exceeded, no incompatible
  groups co-allocated, constraints hold, no device used twice, also not across the pod's claims).
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
        # The constrained attribute: absent, a scalar, or a list (list-typed attributes).
        attr = draw(st.one_of(st.none(), st.integers(0, 2), st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True)))
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
    # Consecutive claims form pods of one or two claims, each pod allocated in one search.
    pods, i = [], 0
    while i < len(claims):
        size = draw(st.integers(1, 2))
        pods.append(claims[i:i + size])
        i += size
    return totals, devices, pods


def to_objects(totals, devices):
    counters = {
        "metadata": {"name": "s-counters"},
        "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                 "sharedCounters": [{"name": cs, "counters": {k: {"value": str(v)} for k, v in c.items()}} for cs, c in totals.items()]},
    }
    devs = []
    for d in devices:
        attrs = {"kind": {"string": d["kind"]}}
        if isinstance(d["a"], list):
            attrs["a"] = {"ints": d["a"]}
        elif d["a"] is not None:
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
def as_set(value):
    return None if value is None else frozenset(value if isinstance(value, list) else [value])


def claim_valid(chosen_by_request, alts, claim, by_name):
    """The claim's own rules: counts, selectors, one device once, its constraint."""
    flat = [n for names in chosen_by_request for n in names]
    if len(set(flat)) != len(flat):
        return False
    for alt, names in zip(alts, chosen_by_request):
        if len(names) != alt["count"] or (alt["kind"] and any(by_name[n]["kind"] != alt["kind"] for n in names)):
            return False
    if claim["constraint"]:
        sets = [as_set(by_name[n]["a"]) for n in flat]
        if any(s is None for s in sets):
            return False
        if claim["constraint"] == "matchAttribute" and sets and not frozenset.intersection(*sets):
            return False
        if claim["constraint"] == "distinctAttribute" and any(not a.isdisjoint(b) for a, b in combinations(sets, 2)):
            return False
    return True


def resources_valid(names, devices, totals):
    """Counters and compatibility groups for everything placed on the node (no device twice)."""
    if len(set(names)) != len(names):
        return False
    by_name = {d["name"]: d for d in devices}
    everything = [by_name[n] for n in names]
    for cs, limits in totals.items():
        users = [d for d in everything if cs in d["consumes"]]
        for counter, limit in limits.items():
            if sum(d["consumes"][cs][counter] for d in users) > limit:
                return False
        group_sets = [set(d["consumes"][cs]["groups"]) for d in users]
        if group_sets and not (all(not g for g in group_sets) or (all(group_sets) and set.intersection(*group_sets))):
            return False
    return True


def claim_choices(claim, devices, first_alternative=None):
    """Every (alternatives, devices per request) of one claim, the first request optionally pinned."""
    names = [d["name"] for d in devices]
    by_name = {d["name"]: d for d in devices}
    choices = [[r["alternatives"][first_alternative]] if i == 0 and first_alternative is not None else r["alternatives"]
               for i, r in enumerate(claim["requests"])]
    for alts in product(*choices):
        for chosen in product(*[list(combinations(names, alt["count"])) for alt in alts]):
            if claim_valid(chosen, alts, claim, by_name):
                yield alts, chosen


def pod_feasible(pod, devices, totals, in_use, first_alternative=None) -> bool:
    def solve(ci, placed):
        if ci == len(pod):
            return True
        pin = first_alternative if ci == 0 else None
        for _, chosen in claim_choices(pod[ci], devices, pin):
            flat = [n for names in chosen for n in names]
            if resources_valid(placed + flat, devices, totals) and solve(ci + 1, placed + flat):
                return True
        return False

    return solve(0, list(in_use))


def oracle_first_alternative(pod, devices, totals, in_use):
    """Index of the first claim's first request's first alternative in some valid pod assignment, or None."""
    for first in range(len(pod[0]["requests"][0]["alternatives"])):
        if pod_feasible(pod, devices, totals, in_use, first):
            return first
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_allocator_agrees_with_brute_force_oracle(instance):
    totals, devices, pods = instance
    slices, classes = to_objects(totals, devices)
    alloc = Allocator(slices=slices, classes=classes, node="n")
    by_name = {d["name"]: d for d in devices}
    in_use: list[str] = []
    for pod in pods:
        first = oracle_first_alternative(pod, devices, totals, in_use)
        try:
            allocations = alloc.allocate([claim_object(claim) for claim in pod])
        except AllocationError as exc:
            assert first is None, f"allocator failed but a valid assignment exists: {exc}"
            continue
        assert first is not None, f"allocator found {allocations} but the oracle says infeasible"
        placed = []
        for ci, (claim, allocation) in enumerate(zip(pod, allocations)):
            results = allocation["devices"]["results"]
            alts, chosen = [], []
            for r in claim["requests"]:
                mine = [x for x in results if x["request"].split("/")[0] == r["name"]]
                sub = mine[0]["request"].partition("/")[2] if mine else None
                alts.append(next(a for a in r["alternatives"] if a["sub"] == (sub or None)))
                chosen.append([x["device"] for x in mine])
            if ci == 0:
                # firstAvailable: the search takes the first subrequest that is part of any solution.
                assert claim["requests"][0]["alternatives"].index(alts[0]) == first
            assert claim_valid(chosen, alts, claim, by_name), f"invalid allocation {chosen} for {claim['name']}"
            placed.extend(n for names in chosen for n in names)
        assert resources_valid(in_use + placed, devices, totals), f"pod over-commits: {placed} next to {in_use}"
        in_use.extend(placed)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_scalar_attributes_mean_the_same_with_the_list_gate_off(instance):
    # DRAListTypeAttributes changes nothing for scalar attributes: same allocations, same failures.
    totals, devices, pods = instance
    for d in devices:
        if isinstance(d["a"], list):
            d["a"] = d["a"][0]
    slices, classes = to_objects(totals, devices)
    outcomes = []
    for features in (Features(list_type_attributes=True), Features(list_type_attributes=False)):
        alloc = Allocator(slices=slices, classes=classes, node="n", features=features)
        seen = []
        for pod in pods:
            try:
                allocations = alloc.allocate([claim_object(claim) for claim in pod])
                seen.append([[(r["request"], r["device"]) for r in a["devices"]["results"]] for a in allocations])
            except AllocationError:
                seen.append(None)
        outcomes.append(seen)
    assert outcomes[0] == outcomes[1]


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
