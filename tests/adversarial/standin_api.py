"""A stand-in API server for ResourceClaims, so `fake-dra run --kubeconfig` can be driven without a
cluster, including the slow paths a local store never has: a claim whose reads answer 503 until the
test releases it makes the plugin's claim reader retry (as against an API server blip), which is
how a call is kept running across a SIGTERM; a stalled claim's read is answered only once released
(a slow API server), which is how a call is kept reading while the kubelet cancels it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from waiting import GENEROUS_S, wait_until

_CLAIM_PATH = re.compile(r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/?]+)$")


class StandInApi:
    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.held: set[str] = set()  # claim names answered with 503 for now
        self.stalled: dict[str, threading.Event] = {}  # claim names whose answers wait for release
        self.reads: list[tuple[float, str, int]] = []  # (monotonic time, claim name, status)
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                m = _CLAIM_PATH.match(self.path)
                if not m:
                    return self._send(404, {"kind": "Status", "code": 404})
                ns, name = m.groups()
                stall = api.stalled.get(name)
                if stall is not None:  # a slow answer: the request waits until the test releases it
                    with api._lock:
                        api.reads.append((time.monotonic(), name, 0))
                    stall.wait(30)
                with api._lock:
                    claim = api.claims.get((ns, name))
                    status = 503 if name in api.held else (200 if claim else 404)
                    api.reads.append((time.monotonic(), name, status))
                self._send(status, claim if status == 200 else {"kind": "Status", "code": status})

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [{"name": "standin", "user": {}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "standin"}}],
        }))
        return path

    def add(self, claim: dict[str, Any]) -> tuple[str, str, str]:
        meta = claim["metadata"]
        with self._lock:
            self.claims[(meta["namespace"], meta["name"])] = claim
        return meta["namespace"], meta["name"], meta["uid"]

    def hold(self, name: str) -> None:
        with self._lock:
            self.held.add(name)

    def release(self, name: str) -> None:
        with self._lock:
            self.held.discard(name)
            stall = self.stalled.pop(name, None)
        if stall is not None:
            stall.set()

    def stall(self, name: str) -> None:
        """Answer reads of `name` only once released (a slow API server, not an unavailable one)."""
        with self._lock:
            self.stalled[name] = threading.Event()

    def reads_of(self, name: str) -> list[tuple[float, int]]:
        with self._lock:
            return [(t, status) for t, n, status in self.reads if n == name]

    def wait_read(self, name: str, timeout: float = GENEROUS_S) -> None:
        wait_until(lambda: self.reads_of(name), f"the plugin to read claim {name}", timeout)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
