"""One retry policy for every request to kube-apiserver (issue 29, MED 6), against a scripted
server that counts the attempts really sent: no hidden urllib3 retries, Retry-After capped, the
documented number of attempts, and every call bounded by its caller's deadline.

No test waits a fixed time: sleeps between attempts are recorded instead of slept, and the calls
that must end by a deadline are given a short one and checked to have sent one request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from kubernetes import client

from driver.deadline import Deadline
from driver.errors import CallAborted
from driver.kube.claims import ApiUnavailableError, KubeClaimSource
from driver.kube.claimstatus import KubeClaimStatus
from driver.kube.rawapi import KubeApiError, RawApi, api_client_for_host, load_api_client
from driver.kube.retry import BULK, CLAIM_READ, RetriesExhausted
from driver.kube.throttle import ThrottledApi
from driver.state.types import ClaimRef
from kube.scripted_api import HANG, Answer, ScriptedApi, Trickle

GENEROUS_S = 30.0  # how long a bounded call may take on a loaded machine before the test calls it hung


@pytest.fixture
def scripted():
    servers: list[ScriptedApi] = []

    def make(*script):
        servers.append(ScriptedApi(*script))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def finishes(fn, bound_s: float = GENEROUS_S):
    """Run `fn` in a thread; its result or exception, or AssertionError if it is still running
    after `bound_s` (a hidden Retry-After sleep of an hour would otherwise hang the suite)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound_s)
    assert not thread.is_alive(), f"still running after {bound_s} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_every_client_we_build_has_urllib3_retries_off(tmp_path, scripted):
    server = scripted()
    assert api_client_for_host(server.url).configuration.retries is False
    assert load_api_client(server.kubeconfig(tmp_path / "kc")).configuration.retries is False
    handed_in = client.ApiClient(client.Configuration(host=server.url))
    assert handed_in.configuration.retries is None  # the kubernetes client's default: urllib3 retries 3 times
    assert RawApi(handed_in).api_client.configuration.retries is False


def test_one_request_is_one_attempt(scripted):
    # Before: urllib3 retried a GET's 503 + Retry-After itself (sleeping it), 4 requests per attempt.
    server = scripted(Answer(503, retry_after=1))
    api = RawApi(client.ApiClient(client.Configuration(host=server.url)))
    with pytest.raises(KubeApiError) as err:
        finishes(lambda: api.request("GET", "/api/v1/nodes"))
    assert err.value.status == 503 and err.value.retry_after == 1.0
    assert server.count() == 1


def test_bulk_writers_make_the_documented_eight_attempts(scripted):
    server = scripted(Answer(500))
    pauses: list[float] = []
    api = ThrottledApi(RawApi(api_client_for_host(server.url)), qps=1000, burst=1000, sleep=pauses.append)
    with pytest.raises(KubeApiError, match=r"GET /api/v1/nodes: HTTP 500: .*\(gave up after 8 attempts in [0-9.]+ s\)$"):
        finishes(lambda: api.request("GET", "/api/v1/nodes"))
    assert server.count() == 8 and len(pauses) == 7 and api.retries == 7


def test_retry_after_is_capped(scripted):
    server = scripted(Answer(429, retry_after=90), Answer(200, {"kind": "NodeList", "items": []}))
    pauses: list[float] = []
    api = ThrottledApi(RawApi(api_client_for_host(server.url)), qps=1000, burst=1000, sleep=pauses.append)
    assert finishes(lambda: api.request("GET", "/api/v1/nodes"))["kind"] == "NodeList"
    assert pauses == [BULK.max_retry_after_s] and server.count() == 2


def test_a_retry_after_of_an_hour_ends_a_bulk_request_at_once(scripted):
    # Before: urllib3 slept a GET's Retry-After: 3600 in full (fleet apply stalled past 240 s).
    server = scripted(Answer(429, retry_after=3600), Answer(200))
    pauses: list[float] = []
    api = ThrottledApi(RawApi(api_client_for_host(server.url)), qps=1000, burst=1000, sleep=pauses.append)
    with pytest.raises(KubeApiError, match="HTTP 429: .*asked to retry after 3600 s, later than this call can wait"):
        finishes(lambda: api.request("GET", "/api/v1/nodes"))
    assert pauses == [] and server.count() == 1


def test_a_short_retry_after_is_waited_out(scripted):
    server = scripted(Answer(503, retry_after=2), Answer(200))
    pauses: list[float] = []
    api = ThrottledApi(RawApi(api_client_for_host(server.url)), qps=1000, burst=1000, sleep=pauses.append)
    finishes(lambda: api.request("GET", "/api/v1/nodes"))
    assert pauses[0] >= 2.0 and server.count() == 2


def test_final_answers_are_not_retried(scripted):
    server = scripted(Answer(403))
    api = ThrottledApi(RawApi(api_client_for_host(server.url)), qps=1000, burst=1000, sleep=lambda s: None)
    with pytest.raises(KubeApiError, match="HTTP 403") as err:
        api.request("DELETE", "/api/v1/nodes/a")
    assert err.value.status == 403 and server.count() == 1


def test_a_hung_server_fails_a_bulk_request_within_its_budget(scripted):
    # Before: 8 attempts x 4 urllib3 tries x 30 s: a hung API server took ~16 minutes to fail.
    server = scripted(HANG)
    policy = replace(BULK, budget_s=1.5, request_timeout_s=0.5)
    api = ThrottledApi(RawApi(api_client_for_host(server.url)), qps=1000, burst=1000, policy=policy, sleep=lambda s: None)
    t0 = time.monotonic()
    with pytest.raises(KubeApiError, match="gave up after"):
        finishes(lambda: api.request("GET", "/api/v1/nodes"))
    assert time.monotonic() - t0 < policy.budget_s + GENEROUS_S
    assert 1 <= server.count() <= 3  # each attempt got its own timeout, none was retried underneath


def claim_source(server, deadline_s: float = 30.0) -> KubeClaimSource:
    return KubeClaimSource(client.ApiClient(client.Configuration(host=server.url)), deadline_s=deadline_s)


def test_a_hung_claim_read_ends_with_the_kubelets_call(scripted):
    # Before: the read's timeout was at least 0.5 s past the deadline and urllib3 read it 3 more times.
    server = scripted(HANG)
    call = Deadline.within(1.0)
    with pytest.raises(CallAborted, match="deadline passed"):
        finishes(lambda: claim_source(server).get_claim("default", "c", deadline=call))
    assert time.monotonic() < call.at + GENEROUS_S
    assert server.count() == 1


def test_a_retry_after_beyond_the_call_gives_up_at_once(scripted):
    server = scripted(Answer(503, retry_after=3600))
    call = Deadline.within(20.0)
    with pytest.raises(ApiUnavailableError, match="asked to retry after 3600 s, later than this call can wait"):
        finishes(lambda: claim_source(server).get_claim("default", "c", deadline=call))
    assert server.count() == 1 and not call.expired


def test_claim_reads_honour_a_short_retry_after(scripted):
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default", "uid": "u"}, "spec": {}}
    server = scripted(Answer(429, retry_after=1), Answer(200, claim))
    pauses: list[float] = []
    source = KubeClaimSource(client.ApiClient(client.Configuration(host=server.url)), sleep=pauses.append)
    assert source.get_claim("default", "c")["metadata"]["uid"] == "u"
    assert pauses and pauses[0] >= 1.0 and server.count() == 2


def test_a_shutdown_ends_the_wait_between_claim_reads(scripted):
    server = scripted(Answer(503, retry_after=4))
    call = Deadline.within(25.0)
    threading.Timer(0.2, call.cancel.set).start()  # the plugin's shutdown cancels its running calls
    with pytest.raises(CallAborted, match="shutting down"):
        finishes(lambda: claim_source(server).get_claim("default", "c", deadline=call))
    assert server.count() == 1


def test_a_trickling_answer_cannot_hold_a_request_past_its_time(scripted):
    server = scripted(Trickle(every_s=0.05))
    api = RawApi(api_client_for_host(server.url))
    until = time.monotonic() + 1.0
    with pytest.raises(KubeApiError, match="did not arrive in time|timed out") as err:
        finishes(lambda: api.request("GET", "/api/v1/nodes", timeout_s=1.0, until=until))
    assert err.value.status == 0  # no answer: retryable, like a hung read
    assert time.monotonic() < until + GENEROUS_S


def test_a_status_write_is_one_bounded_attempt(scripted):
    server = scripted(HANG)
    sink = KubeClaimStatus(RawApi(api_client_for_host(server.url), timeout_s=0.5))
    with pytest.raises(KubeApiError) as err:
        finishes(lambda: sink.apply_device_status(ClaimRef("default", "c", "u"), "d.example.com", []))
    assert err.value.status == 0 and server.count() == 1


def test_the_policy_never_sleeps_past_its_budget():
    # Pure: an attempt that keeps failing, a clock that only the sleeps move.
    now = [0.0]
    calls: list[float] = []

    def attempt(timeout_s: float, until: float):
        calls.append(timeout_s)
        raise KubeApiError("GET /x: HTTP 503: busy", 503, retry_after=10.0)

    from driver.kube.retry import call_with_retries

    policy = replace(CLAIM_READ, budget_s=12.0, max_retry_after_s=5.0)
    with pytest.raises(RetriesExhausted) as err:
        call_with_retries(attempt, policy, "read", sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    assert now[0] <= policy.budget_s
    assert all(t <= policy.request_timeout_s for t in calls) and len(calls) == err.value.attempts
    assert "gave up after" in str(err.value)
