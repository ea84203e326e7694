"""driver.kube.claims against a local stand-in API server (no cluster): raw reads, retries, errors."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from driver.errors import NotFoundError
from driver.kube.claims import ApiUnavailableError, KubeClaimSource
from driver.kube.retry import MIN_ATTEMPT_S

CLAIM = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c1", "namespace": "default", "uid": "u-1"},
    "status": {"allocation": {"devices": {"results": [{
        "request": "r", "driver": "fake-dra.example.com", "pool": "n1", "device": "nic-0-vf-0",
        # An alpha field the typed client would drop: must survive the raw read.
        "consumedCounters": [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "10G"}}}],
    }]}}},
}


class _Api:
    def __init__(self, failures: int, status: int = 503) -> None:
        self.failures, self.status, self.calls = failures, status, 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                api.calls += 1
                if self.path != "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1":
                    return self._send(404, {"kind": "Status", "code": 404})
                if api.calls <= api.failures:
                    return self._send(api.status, {"kind": "Status", "code": api.status})
                return self._send(200, CLAIM)

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def source(self, **kw) -> KubeClaimSource:
        cfg = client.Configuration(host=f"http://127.0.0.1:{self.server.server_port}")
        return KubeClaimSource(client.ApiClient(cfg), sleep=lambda s: None, **kw)


@pytest.fixture
def api():
    servers = []

    def make(*a, **kw):
        servers.append(_Api(*a, **kw))
        return servers[-1]
    yield make
    for s in servers:
        s.server.shutdown()


def test_raw_read_keeps_alpha_fields(api):
    claim = api(0).source().get_claim("default", "c1")
    assert claim["status"]["allocation"]["devices"]["results"][0]["consumedCounters"][0]["counterSet"] == "nic-0-counters"


def test_transient_errors_are_retried(api):
    server = api(3, 503)
    assert server.source().get_claim("default", "c1")["metadata"]["uid"] == "u-1"
    assert server.calls == 4


def test_throttling_is_retried(api):
    server = api(2, 429)
    assert server.source().get_claim("default", "c1")["metadata"]["uid"] == "u-1"


def test_not_found_is_not_retried(api):
    server = api(0)
    with pytest.raises(NotFoundError, match="resourceclaim default/missing not found"):
        server.source().get_claim("default", "missing")
    assert server.calls == 1


def test_forbidden_is_not_retried(api):
    server = api(100, 403)
    with pytest.raises(ApiUnavailableError, match="API error 403"):
        server.source().get_claim("default", "c1")
    assert server.calls == 1


def test_gives_up_at_the_deadline(api):
    server = api(10**6, 503)
    with pytest.raises(ApiUnavailableError, match=r"unavailable after \d+ attempts"):
        server.source(deadline_s=0.3).get_claim("default", "c1")
    assert server.calls > 1


def test_unreachable_api_server_is_retried_then_reported():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = client.Configuration(host=f"http://127.0.0.1:{port}")
    src = KubeClaimSource(client.ApiClient(cfg), deadline_s=0.3, sleep=lambda s: None)
    with pytest.raises(ApiUnavailableError, match="unavailable after"):
        src.get_claim("default", "c1")


def test_retries_use_the_whole_deadline_and_no_more(api):
    import time

    server = api(10**6, 503)
    cfg = client.Configuration(host=f"http://127.0.0.1:{server.server.server_port}")
    src = KubeClaimSource(client.ApiClient(cfg), deadline_s=0.8)  # real sleeps with backoff
    t0 = time.monotonic()
    with pytest.raises(ApiUnavailableError):
        src.get_claim("default", "c1")
    # The last attempt starts only with at least MIN_ATTEMPT_S left and ends by the deadline.
    assert 0.8 - MIN_ATTEMPT_S <= time.monotonic() - t0 < 2.0
    assert 3 <= server.calls <= 10, "backoff must space the attempts out"
