"""Raw JSON requests through the kubernetes client, so alpha fields are never dropped.

The typed models of the `kubernetes` Python client reject unknown fields on create and silently drop
them on read (docs/architecture.md §6, row "Raw JSON for every Kubernetes request") — fatal for
compatibility groups or valueFrom. Every request here goes through ApiClient.param_serialize +
call_api with a dict body and an unparsed response, re-using the client only for what it is good at:
kubeconfig / in-cluster auth, TLS and connection pooling. HTTP errors are mapped once to the
project's error types.

Every client built here has the `kubernetes` client's own urllib3 retries switched off
(`Configuration.retries = False`), and a client handed in from elsewhere is rebuilt so: retries are
driver.kube.retry's alone (one policy, bounded by the caller's deadline). One request is one
attempt, bounded by its timeout: `Timeout(total=...)` for the connection and the headers, and the
body is read in chunks each allowed only what is left until `until`, so a server that trickles its
answer cannot hold a call past its deadline.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client import rest as k8s_rest
from kubernetes.config.config_exception import ConfigException

from driver.errors import ConfigError, ConflictError, FakeDraError, NotFoundError

log = logging.getLogger("fake-dra.kube")


class KubeApiError(FakeDraError):
    """A Kubernetes API request failed; `status` is the HTTP status (0: no answer); `retry_after`
    the seconds a 429/503 answer's Retry-After header asked for, if any."""

    def __init__(self, message: str, status: int = 0, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class KubeConflict(ConflictError):
    status = 409


class KubeNotFound(NotFoundError):
    status = 404


def without_client_retries(api_client: k8s.ApiClient) -> k8s.ApiClient:
    """The same client with urllib3's retries off (its connection pool is rebuilt if they were on)."""
    cfg = api_client.configuration
    if cfg.retries is not False:
        cfg.retries = False
        api_client.rest_client = k8s_rest.RESTClientObject(cfg)
    return api_client


def _configuration() -> k8s.Configuration:
    cfg = k8s.Configuration()
    cfg.retries = False  # driver.kube.retry decides, nobody below it
    return cfg


def load_api_client(kubeconfig: str | None = None, *, context: str | None = None) -> k8s.ApiClient:
    """ApiClient from a kubeconfig file, or the in-cluster service account when none is given."""
    cfg = _configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)
    except (ConfigException, OSError, TypeError, ValueError, KeyError, yaml.YAMLError) as exc:
        where = f"--kubeconfig {kubeconfig}" if kubeconfig else "in-cluster config"
        raise ConfigError(f"{where}: cannot load Kubernetes client configuration: {exc}") from None
    return k8s.ApiClient(cfg)


def api_client_for_host(host: str) -> k8s.ApiClient:
    """ApiClient for a plain URL without auth (tests against the stand-in server, `kubectl proxy`)."""
    cfg = _configuration()
    cfg.host = host.rstrip("/")
    return k8s.ApiClient(cfg)


class RawApi:
    """`request(method, path, query, body) -> dict` over an ApiClient; counts requests. One call is
    one attempt of at most `timeout_s` (or the call's own `timeout_s`, and its answer read by
    `until`, a time.monotonic() value); retries are driver.kube.retry's."""

    def __init__(self, api_client: k8s.ApiClient, timeout_s: float = 30.0) -> None:
        self.api_client = without_client_retries(api_client)
        self.timeout_s = timeout_s
        self.requests = 0

    def request_text(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] | None = None,
        body: Mapping[str, Any] | None = None,
        accept: str = "application/json",
        content_type: str = "application/json",
        *,
        timeout_s: float | None = None,
        until: float | None = None,
    ) -> str:
        """`content_type` selects the patch flavour for PATCH (e.g. application/apply-patch+yaml)."""
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        payload: Any = None
        if body is not None:
            # Non-JSON media types (apply patches are YAML, of which JSON is a subset) go pre-encoded:
            # older clients only serialise dict bodies for JSON content types.
            payload = dict(body) if content_type == "application/json" else json.dumps(body)
        req = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=list(query or []), header_params=headers,
            body=payload, auth_settings=["BearerToken"],
        )
        self.requests += 1
        what = f"{method} {path}"
        timeout = self.timeout_s if timeout_s is None else timeout_s
        until = time.monotonic() + timeout if until is None else until
        try:
            resp = self.api_client.call_api(*req, _request_timeout=timeout)
            data = _read_by(resp.response, until, what)
        except k8s.ApiException as exc:  # raised for transport failures
            raise KubeApiError(f"{what}: {exc.reason or exc}", exc.status or 0) from None
        except (OSError, urllib3.exceptions.HTTPError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise KubeApiError(f"{what}: {self.api_client.configuration.host}: {reason}") from None
        text = data.decode("utf-8", "replace")
        if 200 <= resp.status < 300:
            return text
        message = _status_message(text) or resp.reason or "error"
        if resp.status == 404:
            raise KubeNotFound(f"{what}: not found: {message}")
        if resp.status == 409:
            raise KubeConflict(f"{what}: conflict: {message}")
        raise KubeApiError(f"{what}: HTTP {resp.status}: {message}", resp.status, _retry_after(resp))

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] | None = None,
        body: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        *,
        timeout_s: float | None = None,
        until: float | None = None,
    ) -> dict[str, Any]:
        text = self.request_text(method, path, query, body, content_type=content_type, timeout_s=timeout_s, until=until)
        if not text:
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            raise KubeApiError(f"{method} {path}: response is not JSON: {text[:200]!r}") from None
        if not isinstance(data, dict):
            raise KubeApiError(f"{method} {path}: expected a JSON object, got {type(data).__name__}")
        return data


_CHUNK = 1 << 16


def _read_by(resp: Any, until: float, what: str) -> bytes:
    """The body of a urllib3 response read in chunks, each allowed only what is left until `until`:
    a server that trickles its answer byte by byte still cannot keep the caller past it."""
    chunks = []
    read = getattr(resp, "read1", None) or resp.read  # read1: urllib3 2
    try:
        while True:
            left = until - time.monotonic()
            if left <= 0:
                raise KubeApiError(f"{what}: the answer did not arrive in time (read timed out)")
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            if sock is not None:
                sock.settimeout(left)
            chunk = read(_CHUNK)  # what one recv brings: the time check runs between them
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:
        resp.close()  # half read: the connection must not go back to the pool
        raise
    finally:
        resp.release_conn()
    return b"".join(chunks)


def _retry_after(resp: Any) -> float | None:
    """Retry-After in seconds (the apiserver sends whole seconds; an HTTP date is not used by it)."""
    try:
        value = resp.getheader("Retry-After")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _status_message(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text[:200]
    if isinstance(data, dict):
        return str(data.get("message") or data.get("reason") or "")
    return ""
