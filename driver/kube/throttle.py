"""Client-side rate limiting and retries for bulk writers (a fleet of 1,000 nodes is ~7,000 writes).

A publisher of one node makes a few requests a minute; a fleet publisher makes thousands in a row,
so it behaves like client-go's clients do: a token bucket (`--qps` requests per second on average,
`--burst` at once; client-go's rest.Config QPS/Burst), and transient failures retried with capped
exponential backoff and jitter: connection errors, 408, 429 (waiting at least what Retry-After
asks), 500, 502, 503, 504. Conflicts (409) are not retried here: the caller re-reads and decides
(driver.publish.reconcile re-lists; the fleet re-reads a Node). Any other 4xx fails at once, with
the object named: `create resourceslice 00000-gpu.example.com-a100-0001: HTTP 422: ...`.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from driver.errors import InputError
from driver.kube.rawapi import KubeApiError, RawApi

log = logging.getLogger("fake-dra.kube")

RETRYABLE_STATUS = frozenset({0, 408, 429, 500, 502, 503, 504})
_VERBS = {"POST": "create", "PUT": "update", "DELETE": "delete", "GET": "get", "PATCH": "patch"}


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved up; `take()` waits for one."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if qps <= 0 or burst < 1:
            raise InputError(f"rate limit: --qps must be positive and --burst at least 1 (got {qps}, {burst})")
        self.qps, self.burst = float(qps), int(burst)
        self.clock, self.sleep = clock, sleep
        self._tokens = float(burst)
        self._at = clock()
        self._lock = threading.Lock()
        self.waited_s = 0.0

    def take(self) -> None:
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            self.waited_s += wait
            self.sleep(wait)


def _what(method: str, path: str, body: Mapping[str, Any] | None) -> str:
    """`create resourceslice NAME` from a request: the object a failure is about."""
    parts = [p for p in path.split("/") if p]
    name = (body or {}).get("metadata", {}).get("name") if method == "POST" else None
    if method != "POST" and len(parts) >= 2:
        name, resource = parts[-1], parts[-2]
    else:
        resource = parts[-1] if parts else path
    kind = resource[:-1] if resource.endswith("s") else resource
    return f"{_VERBS.get(method, method)} {kind}{' ' + name if name else ''}"


class ThrottledApi:
    """RawApi's `request` behind a token bucket and retries (same signature, same errors)."""

    def __init__(self, api: RawApi, *, qps: float, burst: int, attempts: int = 8, max_backoff_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.bucket = TokenBucket(qps, burst, clock=clock, sleep=sleep)
        self.attempts = attempts
        self.max_backoff_s = max_backoff_s
        self.sleep = sleep
        self.retries = 0

    @property
    def requests(self) -> int:
        return self.api.requests

    def request(self, method: str, path: str, query: Sequence[tuple[str, str]] | None = None,
                body: Mapping[str, Any] | None = None, content_type: str = "application/json") -> dict[str, Any]:
        delay = 0.2
        for attempt in range(1, self.attempts + 1):
            self.bucket.take()
            try:
                return self.api.request(method, path, query, body, content_type=content_type)
            except KubeApiError as exc:
                if exc.status not in RETRYABLE_STATUS or attempt == self.attempts:
                    raise KubeApiError(f"{_what(method, path, body)}: {exc}", exc.status) from None
                pause = min(self.max_backoff_s, delay * (0.5 + random.random() / 2))
                if exc.retry_after is not None:
                    pause = max(pause, min(exc.retry_after, self.max_backoff_s))
                self.retries += 1
                log.warning("API request failed, retrying", extra={"request": _what(method, path, body),
                            "attempt": attempt, "problem": str(exc), "retry_in_s": round(pause, 2)})
                self.sleep(pause)
                delay = min(delay * 2, self.max_backoff_s)
        raise AssertionError("unreachable")  # the loop returns or raises

    def request_text(self, *args: Any, **kw: Any) -> str:
        self.bucket.take()
        return self.api.request_text(*args, **kw)
