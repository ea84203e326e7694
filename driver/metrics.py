"""Serves a Prometheus registry over HTTP for `fake-dra run` and `fake-dra publish` (one exporter)."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, start_http_server

from driver.errors import InputError

log = logging.getLogger("fake-dra.metrics")


def parse_addr(addr: str) -> tuple[str, int]:
    """HOST:PORT -> (host, port); InputError naming --metrics-addr. Commands call it with their other
    flag checks, so a typo is refused before the plugin takes its state directory or sockets."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--metrics-addr: expected HOST:PORT, got {addr!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def serve_metrics(registry: CollectorRegistry, addr: str) -> object:
    """Start the exporter on HOST:PORT (port 0 picks one); returns the server (call .shutdown() to stop)."""
    bind_host, port = parse_addr(addr)
    host = addr.rpartition(":")[0]
    try:
        server, _thread = start_http_server(port, addr=bind_host, registry=registry)
    except OSError as exc:
        raise InputError(f"--metrics-addr {addr}: cannot listen there: {exc.strerror or exc}") from None
    log.info("serving metrics", extra={"addr": f"{host}:{server.server_port}"})
    return server
