"""--metrics-addr: parsed before any work, and a port that cannot be bound is one clear error."""

from __future__ import annotations

import socket
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from driver.errors import InputError
from driver.metrics import parse_addr, serve_metrics


@pytest.mark.parametrize("addr,expected", [
    ("127.0.0.1:9090", ("127.0.0.1", 9090)),
    (":0", ("0.0.0.0", 0)),
    ("[::1]:8080", ("::1", 8080)),
])
def test_parse_addr(addr, expected):
    assert parse_addr(addr) == expected


@pytest.mark.parametrize("addr", ["9090", "host:", "host:http", "host:65536"])
def test_a_malformed_addr_names_the_flag(addr):
    with pytest.raises(InputError, match="--metrics-addr: expected HOST:PORT"):
        parse_addr(addr)


def test_a_port_in_use_is_an_input_error_without_errno_noise():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(InputError) as err:
            serve_metrics(CollectorRegistry(), f"127.0.0.1:{port}")
    message = str(err.value)
    assert message.startswith(f"--metrics-addr 127.0.0.1:{port}: cannot listen there: ")
    assert "Errno" not in message


def test_serves_the_registry():
    registry = CollectorRegistry()
    Counter("fake_dra_test_total", "a test counter", registry=registry).inc()
    server = serve_metrics(registry, "127.0.0.1:0")
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=5).read().decode()
    finally:
        server.shutdown()
    assert "fake_dra_test_total 1.0" in body
