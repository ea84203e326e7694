"""Serves a Prometheus registry over HTTP for `fake-dra run` and `fake-dra publish` (one exporter)."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, start_http_server

from driver.errors import InputError

log = logging.getLogger("fake-dra.metrics")


def serve_metrics(registry: CollectorRegistry, addr: str) -> object:
    """Start the exporter on HOST:PORT (port 0 picks one); returns the server (call .shutdown() to stop)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--metrics-addr: expected HOST:PORT, got {addr!r}")
    try:
        server, _thread = start_http_server(int(port), addr=host.strip("[]") or "0.0.0.0", registry=registry)
    except OSError as exc:
        raise InputError(f"--metrics-addr {addr}: {exc}") from None
    log.info("serving metrics", extra={"addr": f"{host}:{server.server_port}"})
    return server
