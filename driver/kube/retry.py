"""The one retry policy of every request this project sends to kube-apiserver.

Why one: the `kubernetes` client retries by itself through urllib3 (three more tries of a
connection error or a read that timed out, and a 413/429/503 answer with Retry-After slept in
full, however long). Under our own retries that multiplied the attempts by four, stretched a hung
API server's failure to minutes and let `Retry-After: 3600` stall a command for an hour. So
urllib3's retries are off in every client we build (rawapi.py, `retries=False`) and this module
alone decides, for every caller:

- which failures are worth another attempt: no answer at all (connection refused or reset, a
  read that timed out: status 0), 408, 429, 500, 502, 503, 504. Any other answer is final;
- how long to wait: capped exponential backoff with jitter, and at least what a Retry-After header
  asks, but never more than `max_retry_after_s` (client-go's rest client waits out Retry-After;
  k8s.io/client-go rest/with_retry.go `checkWait`, capped here because a server may ask for an hour).
  A Retry-After longer than what is left of the call's time ends the call at once: the server has
  said it will not answer in time;
- how long in all: at most `attempts` attempts (None: as many as fit) within the caller's time:
  `budget_s` from the first attempt, shortened by the caller's `Deadline` (a kubelet call's gRPC
  deadline, a shutdown's cancellation). Every attempt's timeout is what is left of it, a wait that
  would end past it is not started, and an attempt is not started with less than
  `MIN_ATTEMPT_S` left: the call ends by its deadline, not one request timeout after it.

Two parameter sets exist (docs/robustness.md, "One retry policy"): BULK for the fleet's writers
(8 attempts, 0.2 s doubling to 30 s, within 120 s) and CLAIM_READ for the kubelet plugin's claim
reads (as many attempts as fit in --api-deadline and the kubelet's call, 0.1 s doubling to 5 s).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from driver.deadline import Deadline
from driver.errors import CallAborted
from driver.kube.rawapi import KubeApiError

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({0, 408, 429, 500, 502, 503, 504})
MIN_ATTEMPT_S = 0.1  # an attempt with less time than this left cannot get an answer anyway


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int | None  # None: as many as fit in the budget
    first_backoff_s: float
    max_backoff_s: float
    max_retry_after_s: float
    request_timeout_s: float  # one attempt, never more than what is left of the budget
    budget_s: float  # from the first attempt to the last answer


BULK = RetryPolicy(attempts=8, first_backoff_s=0.2, max_backoff_s=30.0, max_retry_after_s=30.0,
                   request_timeout_s=30.0, budget_s=120.0)
CLAIM_READ = RetryPolicy(attempts=None, first_backoff_s=0.1, max_backoff_s=5.0, max_retry_after_s=5.0,
                         request_timeout_s=10.0, budget_s=30.0)


class RetriesExhausted(KubeApiError):
    """The last failure, after the policy gave up (attempts used, or no time left)."""

    def __init__(self, message: str, status: int, attempts: int, elapsed_s: float) -> None:
        super().__init__(message, status)
        self.attempts = attempts
        self.elapsed_s = elapsed_s


def call_with_retries(attempt: Callable[[float, float], T], policy: RetryPolicy, what: str, *,
                      deadline: Deadline | None = None, sleep: Callable[[float], None] = time.sleep,
                      clock: Callable[[], float] = time.monotonic,
                      on_retry: Callable[[int, KubeApiError, float], None] | None = None) -> T:
    """`attempt(timeout_s, until)` -> the answer, raising KubeApiError; retried under `policy`.

    `until` is the time.monotonic() by which the attempt must have read its answer. Raises the
    final KubeApiError itself when it is not retryable, RetriesExhausted when the policy gives up,
    and driver.errors.CallAborted when the caller's call ended (cancelled, or its deadline came
    before an answer did)."""
    start = clock()
    until = start + policy.budget_s
    by_call = deadline is not None and deadline.remaining() < policy.budget_s  # the caller's end comes first
    if deadline is not None:
        until = min(until, start + deadline.remaining())
    delay = policy.first_backoff_s
    count = 0
    last: KubeApiError | None = None
    while True:
        if deadline is not None:
            deadline.check(what)
        left = until - clock()
        if left < MIN_ATTEMPT_S:
            if by_call:  # as Deadline.check words it: the kubelet's retry starts afresh
                raise CallAborted(f"{what}: the call's deadline passed before it could finish; retry")
            raise _exhausted(what, last, count, clock() - start, "its time ran out")
        count += 1
        try:
            return attempt(min(policy.request_timeout_s, left), until)
        except KubeApiError as exc:
            if exc.status not in RETRYABLE_STATUS:
                raise
            last = exc
        if policy.attempts is not None and count >= policy.attempts:
            raise _exhausted(what, last, count, clock() - start, "")
        left = until - clock()
        if last.retry_after is not None and last.retry_after > left:
            raise _exhausted(what, last, count, clock() - start,
                             f"it asked to retry after {last.retry_after:g} s, later than this call can wait")
        pause = min(policy.max_backoff_s, delay * (0.5 + random.random() / 2))
        if last.retry_after is not None:
            pause = max(pause, min(last.retry_after, policy.max_retry_after_s))
        pause = min(pause, max(0.0, left - MIN_ATTEMPT_S))  # one last attempt with what is left
        if on_retry is not None:
            on_retry(count, last, pause)
        if deadline is not None:
            deadline.wait(pause)  # a shutdown or the caller going away ends the wait at once
        else:
            sleep(pause)
        delay = min(delay * 2, policy.max_backoff_s)


def _exhausted(what: str, last: KubeApiError | None, count: int, elapsed: float, why: str) -> RetriesExhausted:
    problem = str(last) if last is not None else f"{what}: no time left to send it"
    return RetriesExhausted(f"{problem} (gave up after {count} attempt{'s' if count != 1 else ''} in "
                            f"{elapsed:.1f} s{': ' + why if why else ''})", last.status if last is not None else 0,
                            count, elapsed)
