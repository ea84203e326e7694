"""A cached view of the current rendered pool (discovery + rendering are too slow per call).

Why: prepare must check devices against the *current* inventory, but rediscovering sysfs on every
call would dominate prepare latency. The health loop refreshes the cache when it is older than
max_age, and prepare forces a refresh once when it meets a device it does not know.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from driver.state.types import PoolView


def attr(device: dict[str, Any], name: str, driver_name: str | None = None) -> Any:
    """Value of a device attribute (unqualified or qualified by the driver name), or None."""
    attrs = device.get("attributes") or {}
    raw = attrs.get(name)
    if raw is None and driver_name:
        raw = attrs.get(f"{driver_name}/{name}")
    if isinstance(raw, dict) and raw:
        return next(iter(raw.values()))
    return None


def capacity(device: dict[str, Any], name: str) -> str | None:
    raw = (device.get("capacity") or {}).get(name)
    if isinstance(raw, dict) and "value" in raw:
        return str(raw["value"])
    return None


class PoolCache:
    def __init__(self, render: Callable[[], PoolView], max_age_s: float = 30.0) -> None:
        self._render = render
        self._max_age = max_age_s
        self._lock = threading.Lock()
        self._pool: PoolView | None = None
        self._devices: dict[str, dict[str, Any]] = {}
        self._at = 0.0

    def refresh(self) -> PoolView:
        pool = self._render()  # outside the lock: discovery may take a while
        devices = pool.devices()
        with self._lock:
            self._pool, self._devices, self._at = pool, devices, time.monotonic()
        return pool

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
