"""Waiting in tests: for a condition, never for a fixed time, with one generous bound.

A fresh clone's suite failed at load 8 because tests waited 2 s or 10 s for a log line. Every wait
here polls its condition and gives up only after GENEROUS_S (120 s, or FAKE_DRA_TEST_WAIT_S): a
passing test is as fast as the machine allows, and only a test that would fail anyway waits long.
Bounds that are part of what a test checks (a gRPC deadline, --wait-for-lock 1) are not these.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
GENEROUS_S = float(os.environ.get("FAKE_DRA_TEST_WAIT_S") or 120.0)
POLL_S = 0.02


def wait_until(condition: Callable[[], T], what: str, timeout: float = GENEROUS_S, poll: float = POLL_S) -> T:
    """The first truthy value of `condition()`; AssertionError naming `what` after `timeout` s."""
    give_up = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > give_up:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(poll)


def wait_for_text(read: Callable[[], str], needle: str, timeout: float = GENEROUS_S) -> str:
    """The text `read()` returns once it contains `needle` (a log, say); on timeout the
    AssertionError shows the end of the last text read."""
    seen = [""]

    def found() -> bool:
        seen[0] = read()
        return needle in seen[0]

    try:
        wait_until(found, f"{needle!r}", timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last read:\n{seen[0][-3000:]}") from None
    return seen[0]
