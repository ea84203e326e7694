"""A scripted stand-in for kube-apiserver: each request gets the next scripted answer.

NOT a Kubernetes API server. It records every request it receives (so a test can count the
attempts that really reached the server, hidden client retries included) and answers them from a
script, in order, then with the last entry for ever:
- `Answer(status, body, retry_after)`: an ordinary answer (JSON), with a Retry-After header if set;
- `HANG`: accept the request and never answer (until the server closes);
- `Trickle(every_s)`: send the headers of a 200 and then the body one byte per `every_s`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = None
    retry_after: int | None = None


@dataclass(frozen=True)
class Trickle:
    every_s: float = 0.2


HANG = "hang"


class ScriptedApi:
    def __init__(self, *script: Any) -> None:
        self.script = list(script) or [Answer()]
        self.requests: list[tuple[float, str, str]] = []  # (monotonic time, method, path)
        self.closing = threading.Event()
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with api._lock:
                    api.requests.append((time.monotonic(), self.command, self.path))
                    step = api.script.pop(0) if len(api.script) > 1 else api.script[0]
                if step == HANG:
                    api.closing.wait(120)
                    return
                if isinstance(step, Trickle):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    while not api.closing.wait(step.every_s):
                        try:
                            self.wfile.write(b" ")
                            self.wfile.flush()
                        except OSError:
                            return
                    return
                body = step.body if step.body is not None else (
                    {"kind": "Status", "code": step.status, "message": f"scripted {step.status}"} if step.status >= 400
                    else {"kind": "List", "metadata": {}, "items": []})
                data = json.dumps(body).encode()
                self.send_response(step.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if step.retry_after is not None:
                    self.send_header("Retry-After", str(step.retry_after))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def count(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for _, m, _ in self.requests if method is None or m == method)

    def kubeconfig(self, path) -> str:
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "s",
            "clusters": [{"name": "s", "cluster": {"server": self.url}}], "users": [{"name": "s", "user": {}}],
            "contexts": [{"name": "s", "context": {"cluster": "s", "user": "s"}}]}))
        return str(path)

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
