"""AllocatorCache: what survives between scheduling cycles never changes what is allocated."""

from __future__ import annotations

import copy

import pytest

from driver.allocator import Allocator, split_objects
from driver.allocator.cache import AllocatorCache
from driver.errors import AllocationError
from driver.features import Features

from .casefile import expand_claim, load_fixture

MIG = "mig.fake-dra.example.com"


def objects():
    return split_objects(load_fixture("a100-2gpu"))


def mig_claim(name, selectors=()):
    return expand_claim({"name": name, "requests": [{"name": "m", "class": MIG, "selectors": list(selectors)}]}, [])


def cycles(objs, cache, n=10, classes=None):
    """One new Allocator per claim, fed the claims allocated so far (a scheduling cycle each)."""
    allocated, devices = [], []
    for i in range(n):
        alloc = Allocator(slices=objs.slices, classes=classes or objs.classes, node="node-1", allocated=allocated, cache=cache)
        (allocation,) = alloc.allocate([mig_claim(f"c{i}")])
        devices.append(allocation["devices"]["results"][0]["device"])
        allocated.append({**mig_claim(f"c{i}"), "status": {"allocation": allocation}})
    return devices


def test_cached_cycles_allocate_what_uncached_ones_do():
    objs = objects()
    cache = AllocatorCache()
    plain = cycles(objs, None)
    assert cycles(objs, cache) == plain
    assert cycles(objs, cache) == plain  # warm
    assert cache.view(Features()).slices.parsed == len(objs.slices)  # each slice parsed once


def test_a_new_generation_is_parsed_again():
    objs = objects()
    cache = AllocatorCache()
    cycles(objs, cache, n=1)
    changed = copy.deepcopy(objs.slices)
    for s in changed:  # the driver republishes: every MIG device of gpu-0 is gone
        s["spec"]["pool"]["generation"] += 1
        if s["spec"].get("devices"):
            s["spec"]["devices"] = [d for d in s["spec"]["devices"] if not d["name"].startswith("gpu-0-mig")]
    objs.slices = changed
    assert cycles(objs, cache, n=1) == ["gpu-1-mig-1g5gb-0"]


def test_in_place_edit_with_a_generation_bump_is_seen():
    objs = objects()
    cache = AllocatorCache()
    assert cycles(objs, cache, n=1) == ["gpu-0-mig-1g5gb-0"]
    for s in objs.slices:
        s["spec"]["pool"]["generation"] += 1
        if s["spec"].get("devices"):
            s["spec"]["devices"] = [d for d in s["spec"]["devices"] if d["name"] != "gpu-0-mig-1g5gb-0"]
    assert cycles(objs, cache, n=1) == ["gpu-0-mig-1g5gb-1"]


def test_an_edited_class_is_evaluated_again():
    objs = objects()
    cache = AllocatorCache()
    assert cycles(objs, cache, n=1) == ["gpu-0-mig-1g5gb-0"]
    narrowed = copy.deepcopy(objs.classes)
    for c in narrowed:
        if c["metadata"]["name"] == MIG:
            c["spec"]["selectors"].append({"cel": {"expression": "device.attributes['fake-dra.example.com'].profile == '2g.10gb'"}})
    assert cycles(objs, cache, n=1, classes=narrowed) == ["gpu-0-mig-2g10gb-0"]


def test_selector_errors_are_raised_in_every_cycle_not_cached():
    objs = objects()
    cache = AllocatorCache()
    broken = mig_claim("bad", ["device.attributes['fake-dra.example.com'].nosuch == 'x'"])
    for _ in range(2):
        alloc = Allocator(slices=objs.slices, classes=objs.classes, node="node-1", cache=cache)
        with pytest.raises(AllocationError, match="claim default/bad: selector #0 on device .*: CEL runtime error: no such key"):
            alloc.allocate([broken])


def test_the_cache_is_bounded():
    objs = objects()
    cache = AllocatorCache(max_views=1)
    cycles(objs, cache, n=2)
    off = Features(compatibility_groups=False)
    Allocator(slices=objs.slices, classes=objs.classes, node="node-1", features=off, cache=cache)
    assert list(cache._views) == [off]  # the least recently used gates were forgotten
    assert cycles(objs, cache, n=3) == cycles(objs, None, n=3)


def test_a_claim_left_out_holds_nothing_in_the_next_cycle():
    objs = objects()
    cache = AllocatorCache()
    first = cycles(objs, cache, n=1)
    assert cycles(objs, cache, n=1) == first  # the first cycle's claim is not in `allocated` any more
