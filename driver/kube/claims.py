"""ResourceClaim reader for the kubelet plugin, against the API server, with retries.

Why raw reads: the typed client drops fields it does not know (alpha fields such as
`consumedCounters` in allocation results), so the claim is fetched as JSON. Why retries: an API
server blip must not fail a prepare the kubelet would only retry later; transient failures
(connection errors, 429, 5xx) are retried with capped exponential backoff and jitter until a
deadline safely inside the kubelet's 45 s call timeout (default 30 s). 404 is NotFoundError at once.
A call's own Deadline (driver.deadline) bounds the retries further: they never outlast the kubelet
call that asked, and a plugin shutdown cancels the wait between two attempts at once.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from driver.deadline import Deadline
from driver.errors import FakeDraError, InputError, NotFoundError
from driver.model.claimshape import check_claim_shape

log = logging.getLogger("fake-dra.kube")
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class ApiUnavailableError(FakeDraError):
    """The API server could not be reached (or kept failing) within the retry deadline."""


class KubeClaimSource:
    def __init__(self, api_client: client.ApiClient, *, deadline_s: float = 30.0, request_timeout_s: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep, api_version: str = "v1") -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.deadline_s = deadline_s
        self.request_timeout_s = request_timeout_s
        self.api_version = api_version
        self._sleep = sleep

    def get_claim(self, namespace: str, name: str, deadline: Deadline | None = None) -> dict[str, Any]:
        start = time.monotonic()
        limit = self.deadline_s if deadline is None else min(self.deadline_s, deadline.remaining())
        delay = 0.1
        attempt = 0
        while True:
            attempt += 1
            if deadline is not None:
                deadline.check(f"reading resourceclaim {namespace}/{name}")
            try:
                remaining = limit - (time.monotonic() - start)
                resp = self.api.get_namespaced_custom_object(
                    "resource.k8s.io", self.api_version, namespace, "resourceclaims", name,
                    _preload_content=False, _request_timeout=max(0.5, min(self.request_timeout_s, remaining)),
                )
                body = resp.data
            except ApiException as exc:
                if exc.status == 404:
                    raise NotFoundError(f"resourceclaim {namespace}/{name} not found") from None
                if exc.status not in RETRYABLE_STATUS:
                    raise ApiUnavailableError(
                        f"reading resourceclaim {namespace}/{name}: API error {exc.status} {exc.reason}"
                    ) from None
                problem = f"HTTP {exc.status} {exc.reason}"
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                return _decode(body, namespace, name)
            elapsed = time.monotonic() - start
            if deadline is not None:
                deadline.check(f"reading resourceclaim {namespace}/{name} ({problem})")
            if elapsed >= limit:
                raise ApiUnavailableError(
                    f"reading resourceclaim {namespace}/{name}: API server unavailable after {attempt} attempts "
                    f"in {elapsed:.1f}s ({problem})"
                )
            pause = min(delay * (0.5 + random.random() / 2), limit - elapsed)  # last try at the deadline
            log.warning("claim read failed, retrying", extra={"claim": f"{namespace}/{name}", "attempt": attempt,
                                                              "problem": problem, "retry_in_s": round(pause, 2)})
            if deadline is None:
                self._sleep(pause)
            else:
                deadline.wait(pause)  # a shutdown's cancellation ends the wait at once
            delay = min(delay * 2, 5.0)


def _decode(body: bytes, namespace: str, name: str) -> dict[str, Any]:
    """A complete answer that is not a ResourceClaim is that claim's error (retrying would not help):
    invalid JSON, nesting deeper than the parser's recursion limit, integers too long to convert,
    or the wrong kind or shape."""
    try:
        obj = json.loads(body)
    except RecursionError:
        raise InputError(f"resourceclaim {namespace}/{name}: the API answer nests too deeply") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise InputError(f"resourceclaim {namespace}/{name}: the API answer is not valid JSON: {str(exc)[:200]}") from None
    return check_claim_shape(obj, namespace, name)
