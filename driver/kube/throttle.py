"""Client-side rate limiting and retries for bulk writers (a fleet of 1,000 nodes is ~7,000 writes).

A publisher of one node makes a few requests a minute; a fleet publisher makes thousands in a row,
so it behaves like client-go's clients do: a token bucket (`--qps` requests per second on average,
`--burst` at once; client-go's rest.Config QPS/Burst), and transient failures retried under the
project's one retry policy (driver.kube.retry, `BULK`: 8 attempts within 120 s, capped backoff
and Retry-After): connection errors and timeouts, 408, 429, 500, 502, 503, 504. Conflicts (409)
are not retried here: the caller re-reads and decides (driver.publish.reconcile re-lists; the fleet
re-reads a Node). Any other 4xx fails at once, with the object named:
`create resourceslice 00000-gpu.example.com-a100-0001: HTTP 422: ...`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from driver.errors import InputError
from driver.kube.rawapi import KubeApiError, RawApi
from driver.kube.retry import BULK, RETRYABLE_STATUS, RetryPolicy, call_with_retries

log = logging.getLogger("fake-dra.kube")

__all__ = ["RETRYABLE_STATUS", "ThrottledApi", "TokenBucket"]
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
    """RawApi's `request` behind a token bucket and the BULK retry policy (same signature, same errors)."""

    def __init__(self, api: RawApi, *, qps: float, burst: int, policy: RetryPolicy = BULK, attempts: int | None = None,
                 max_backoff_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.bucket = TokenBucket(qps, burst, clock=clock, sleep=sleep)
        if attempts is not None:
            policy = replace(policy, attempts=attempts)
        if max_backoff_s is not None:
            policy = replace(policy, max_backoff_s=max_backoff_s, max_retry_after_s=max_backoff_s)
        self.policy = replace(policy, request_timeout_s=min(policy.request_timeout_s, api.timeout_s))
        self.sleep = sleep
        self.clock = clock
        self.retries = 0

    @property
    def requests(self) -> int:
        return self.api.requests

    def request(self, method: str, path: str, query: Sequence[tuple[str, str]] | None = None,
                body: Mapping[str, Any] | None = None, content_type: str = "application/json") -> dict[str, Any]:
        what = _what(method, path, body)

        def attempt(timeout_s: float, until: float) -> dict[str, Any]:
            self.bucket.take()
            return self.api.request(method, path, query, body, content_type=content_type, timeout_s=timeout_s, until=until)

        def retrying(attempt_no: int, exc: KubeApiError, pause: float) -> None:
            self.retries += 1
            log.warning("API request failed, retrying", extra={"request": what, "attempt": attempt_no,
                        "problem": str(exc), "retry_in_s": round(pause, 2)})

        try:
            return call_with_retries(attempt, self.policy, what, sleep=self.sleep, clock=self.clock, on_retry=retrying)
        except KubeApiError as exc:  # (404 and 409 are NotFoundError / ConflictError: the caller's)
            raise KubeApiError(f"{what}: {exc}", exc.status) from None

    def request_text(self, *args: Any, **kw: Any) -> str:
        self.bucket.take()
        return self.api.request_text(*args, **kw)
