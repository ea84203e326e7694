"""Answer the local store's pending ResourcePoolStatusRequests (KEP-5677) from the allocator's usage.

In a cluster a controller fills each request's status once; locally `fake-dra schedule` does it
after binding (a one-shot of that controller's loop; the
living control plane's controller loop, issue 26, can call `answer_pending` the same way). The
figures are `driver.allocator.poolstatus.answer_pool_status_request` over `usage_of` the store's
slices and allocated claims, with its DeviceTaintRules marking devices unavailable. A request that
already has a status is complete and left alone (the API makes it immutable).
"""

from __future__ import annotations

import copy
from typing import Any

from driver.allocator.poolstatus import answer_pool_status_request
from driver.allocator.taintrules import TaintRules
from driver.allocator.usage import usage_of
from driver.features import Features
from driver.store.server_defaults import now

RESOURCE = "resourcepoolstatusrequests"


def answer_pending(store: Any, features: Features = Features(), clock: Any = now) -> list[dict[str, Any]]:
    """Fill the status of every ResourcePoolStatusRequest without one; return the updated objects."""
    with store.locked():
        pending = [r for r in store.list(RESOURCE) if not r.get("status")]
        if not pending:
            return []
        claims = [c for c in store.list("resourceclaims", all_namespaces=True)
                  if (c.get("status") or {}).get("allocation")]
        usage = usage_of(store.list("resourceslices"), claims, features.for_scheduler())
        rules = TaintRules()
        if features.device_taints and features.device_taint_rules:
            for rule in store.list("devicetaintrules"):
                rules.set(rule)
        stamp = clock()
        out = []
        for request in pending:
            updated = copy.deepcopy(request)
            updated["status"] = answer_pool_status_request(request, usage, rules, now=stamp)
            out.append(store.update(RESOURCE, updated))
        return out
