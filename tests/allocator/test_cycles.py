"""A long-lived Allocator must see exactly what a fresh scheduling cycle sees.

kube-scheduler builds a new allocator every cycle from the slices and the claims allocated so far
(adminAccess results are not "allocated", dynamicresources foreachAllocatedDevice; allocated
devices' compatibility groups are folded in pool order, compatibilityGroupsBaselineForPool).
`Allocator.allocate` keeps state between calls (`fake-dra allocate --sequential`, the Python API),
so after every pod its counters, groups and in-use marks must equal a fresh Allocator's built
from the claims allocated so far: same allocations, same failures, same group state.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.allocator import Allocator
from driver.errors import AllocationError

from .test_properties import claim_object, instances, to_objects


def _with_admin(claim: dict, flags: list[bool]) -> dict:
    claim = copy.deepcopy(claim)
    for req, admin in zip(claim["spec"]["devices"]["requests"], flags):
        if admin and "exactly" in req:
            req["exactly"]["adminAccess"] = True
    return claim


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_long_lived_allocator_equals_fresh_cycles(instance, data):
    totals, devices, pods = instance
    slices, classes = to_objects(totals, devices)
    long_lived = Allocator(slices=slices, classes=classes, node="n")
    allocated: list[dict] = []
    for pod in pods:
        claims = [_with_admin(claim_object(c), data.draw(st.lists(st.booleans(), min_size=2, max_size=2)))
                  for c in pod]
        fresh = Allocator(slices=slices, classes=classes, node="n", allocated=allocated)
        assert fresh.state.groups == long_lived.state.groups
        assert {k: v for k, v in fresh.ledger.used.items() if any(v.values())} == \
               {k: v for k, v in long_lived.ledger.used.items() if any(v.values())}
        assert fresh.state.in_use == long_lived.state.in_use
        outcomes = []
        for alloc in (fresh, long_lived):
            try:
                outcomes.append(alloc.allocate(copy.deepcopy(claims), explain=False))
            except AllocationError:
                outcomes.append(None)
        assert outcomes[0] == outcomes[1]
        if outcomes[1] is not None:
            allocated.extend(dict(c, status={"allocation": a}) for c, a in zip(claims, outcomes[1]))
