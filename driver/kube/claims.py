"""ResourceClaim reader for the kubelet plugin, against the API server, with retries.

Why raw reads: the typed client drops fields it does not know (alpha fields such as
`consumedCounters` in allocation results), so the claim is fetched as JSON (driver.kube.rawapi).
Why retries: an API server blip must not fail a prepare the kubelet would only retry later;
transient failures (no answer, 408, 429, 5xx) are retried under the project's one retry policy
(driver.kube.retry, `CLAIM_READ`: capped backoff and Retry-After, as many attempts as fit) until a
deadline safely inside the kubelet's 45 s call timeout (--api-deadline, default 30 s). 404 is
NotFoundError at once. A call's own Deadline (driver.deadline) bounds the retries further: every
attempt's timeout is what is left of it, so they never outlast the kubelet call that asked, and a
plugin shutdown cancels the wait between two attempts at once.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from kubernetes import client

from driver.deadline import Deadline
from driver.errors import FakeDraError, InputError, NotFoundError
from driver.kube.rawapi import KubeApiError, RawApi
from driver.kube.retry import CLAIM_READ, RETRYABLE_STATUS, RetriesExhausted, call_with_retries
from driver.model.claimshape import check_claim_shape

log = logging.getLogger("fake-dra.kube")

__all__ = ["RETRYABLE_STATUS", "ApiUnavailableError", "KubeClaimSource"]


class ApiUnavailableError(FakeDraError):
    """The API server could not be reached (or kept failing) within the retry deadline."""


class KubeClaimSource:
    def __init__(self, api_client: client.ApiClient, *, deadline_s: float = 30.0, request_timeout_s: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep, api_version: str = "v1") -> None:
        self.api = RawApi(api_client, timeout_s=request_timeout_s)
        self.policy = replace(CLAIM_READ, budget_s=deadline_s, request_timeout_s=request_timeout_s)
        self.deadline_s = deadline_s
        self.api_version = api_version
        self._sleep = sleep

    def get_claim(self, namespace: str, name: str, deadline: Deadline | None = None) -> dict[str, Any]:
        what = f"reading resourceclaim {namespace}/{name}"
        path = (f"/apis/resource.k8s.io/{self.api_version}/namespaces/{quote(namespace, safe='')}"
                f"/resourceclaims/{quote(name, safe='')}")

        def attempt(timeout_s: float, until: float) -> str:
            return self.api.request_text("GET", path, timeout_s=timeout_s, until=until)

        def retrying(attempt_no: int, exc: KubeApiError, pause: float) -> None:
            log.warning("claim read failed, retrying", extra={"claim": f"{namespace}/{name}", "attempt": attempt_no,
                                                              "problem": _problem(exc), "retry_in_s": round(pause, 2)})

        try:
            body = call_with_retries(attempt, self.policy, what, deadline=deadline, sleep=self._sleep, on_retry=retrying)
        except NotFoundError:
            raise NotFoundError(f"resourceclaim {namespace}/{name} not found") from None
        except RetriesExhausted as exc:
            if deadline is not None:
                deadline.check(what)  # the call's own end says so better than "unavailable"
            raise ApiUnavailableError(f"{what}: API server unavailable after {exc.attempts} attempts in "
                                      f"{exc.elapsed_s:.1f}s ({_problem(exc)})") from None
        except KubeApiError as exc:
            raise ApiUnavailableError(f"{what}: API error {exc.status} {_problem(exc)}") from None
        return _decode(body.encode(), namespace, name)


def _problem(exc: KubeApiError) -> str:
    """The failure without the request line RawApi puts in front of it."""
    text = str(exc)
    return text.split(": ", 1)[1] if text.startswith("GET ") and ": " in text else text


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
