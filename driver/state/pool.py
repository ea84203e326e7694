"""A cached view of the current rendered pool (discovery + rendering are too slow per call).

Why: prepare must check devices against the *current* inventory, but rediscovering sysfs on every
call would dominate prepare latency. The health loop refreshes the cache when it is older than
max_age, and prepare forces a refresh once when it meets a device it does not know.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from driver.state.types import PoolView


def unrequested_grants(slices: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Device -> {capacity name: amount} that a claim gets from a request-driven (KEP-5941 valueFrom)
    counter when its allocation records no amount: the counter's requestPolicy default, else the
    whole counter (KEP-5941's rule for an omitted request). This is also the static share the
    driver publishes when DRASharedConsumableCapacity is off, so the workload is told the same
    figure whichever way the scheduler allocated."""
    counters: dict[str, Mapping[str, Any]] = {}
    for spec in slices:
        for cset in spec.get("sharedCounters") or ():
            counters[cset.get("name")] = cset.get("counters") or {}
    out: dict[str, dict[str, str]] = {}
    for spec in slices:
        for dev in spec.get("devices") or ():
            for entry in dev.get("consumesCounters") or ():
                for cname, c in (entry.get("counters") or {}).items():
                    source = (c.get("valueFrom") or {}).get("capacityName") if isinstance(c, Mapping) else None
                    total = counters.get(entry.get("counterSet"), {}).get(cname)
                    if not source or not isinstance(total, Mapping):
                        continue
                    amount = (total.get("requestPolicy") or {}).get("default", total.get("value"))
                    if amount is not None:
                        out.setdefault(dev["name"], {})[str(source).rsplit("/", 1)[-1]] = str(amount)
    return out


class PoolCache:
    def __init__(self, render: Callable[[], PoolView], max_age_s: float = 30.0) -> None:
        self._render = render
        self._max_age = max_age_s
        self._lock = threading.Lock()
        self._pool: PoolView | None = None
        self._devices: dict[str, dict[str, Any]] = {}
        self._grants: dict[str, dict[str, str]] = {}
        self._at = 0.0

    def refresh(self) -> PoolView:
        pool = self._render()  # outside the lock: discovery may take a while
        devices = pool.devices()
        grants = unrequested_grants(pool.slices)
        with self._lock:
            self._pool, self._devices, self._grants, self._at = pool, devices, grants, time.monotonic()
        return pool

    def unrequested(self, device: str) -> Mapping[str, str]:
        """`unrequested_grants` of one device of the cached pool ({} when it has none)."""
        with self._lock:
            return self._grants.get(device, {})

    def get(self, refresh_if_stale: bool = True) -> tuple[PoolView, dict[str, dict[str, Any]]]:
        """The cached pool; re-rendered when older than max_age unless `refresh_if_stale` is False
        (prepare passes False: it refreshes only on an unknown device, so the ~50 ms rediscovery
        runs in the health loop, not in a kubelet call)."""
        with self._lock:
            pool, devices, at = self._pool, self._devices, self._at
        if pool is None or (refresh_if_stale and time.monotonic() - at > self._max_age):
            pool = self.refresh()
            with self._lock:
                devices = self._devices
        return pool, devices
