"""driver.kube.claims: a complete API answer that is not a usable ResourceClaim is that claim's
InputError at once (not retried for the whole deadline, never an exception that fails the call)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from driver.errors import InputError
from driver.kube.claims import KubeClaimSource

GOOD = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "default", "uid": "u-1"}}


@pytest.fixture
def serve():
    servers = []

    def make(body: bytes) -> tuple[KubeClaimSource, list[int]]:
        calls = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                calls[0] += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        cfg = client.Configuration(host=f"http://127.0.0.1:{server.server_port}")
        return KubeClaimSource(client.ApiClient(cfg), deadline_s=5, sleep=lambda s: None), calls
    yield make
    for s in servers:
        s.shutdown()


def _json(**override) -> bytes:
    return json.dumps({**GOOD, **override}).encode()


@pytest.mark.parametrize("body, fragment", [
    (_json(kind="Pod"), "kind is 'Pod', not ResourceClaim"),
    (_json(metadata=[1]), "metadata: expected an object, got [1]"),
    (_json(status=[1]), "status: expected an object, got [1]"),
    (_json(metadata={"name": "c1", "namespace": "other", "uid": "u-1"}), "metadata.namespace is 'other'"),
    (_json(status={"allocation": {"devices": {"results": [7]}}}), "status.allocation.devices.results[0]: expected an object"),
    (b"[1, 2]", "expected an object, got list"),
    (b"{not json", "the API answer is not valid JSON"),
    (b"\xff\xfe", "the API answer is not valid JSON"),
    (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "the API answer nests too deeply"),
    (b'{"metadata": {"generation": ' + b"9" * 5000 + b"}}", "the API answer is not valid JSON"),
])
def test_unusable_answers_are_the_claims_error_without_retrying(serve, body, fragment):
    src, calls = serve(body)
    start = time.monotonic()
    with pytest.raises(InputError) as err:
        src.get_claim("default", "c1")
    assert str(err.value).startswith(("claim default/c1: ", "resourceclaim default/c1: ")) and fragment in str(err.value)
    assert len(str(err.value)) < 600
    assert calls == [1] and time.monotonic() - start < 2


def test_a_good_answer_passes(serve):
    src, _ = serve(_json())
    assert src.get_claim("default", "c1")["metadata"]["uid"] == "u-1"
