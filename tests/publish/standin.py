"""STAND-IN for kube-apiserver — NOT a real Kubernetes API server.

A small threaded HTTP server that answers the handful of REST calls the publisher makes, with the
behaviour that matters for reconcile and gate detection, so tests run without a cluster:
- resourceslices: list (fieldSelector spec.driver / spec.nodeName, labelSelector k=v, limit/continue),
  get, create (409 AlreadyExists), update (409 on stale resourceVersion), delete (uid/resourceVersion
  preconditions), `dryRun=All`; a store-wide resourceVersion and metadata.generation;
- per-gate field stripping like kube-apiserver's dropDisabledFields (kept when the old object
  already used the feature), and the validation rules the tests rely on (422);
- nodes (list with labelSelector k=v, get, create 409 AlreadyExists, update 409 on stale resourceVersion
  keeping the stored status as the real PUT does, delete with a uid precondition), resourceclaims (list, get, and server-side apply of the status subresource for
  status.devices: a list keyed by driver/pool/device/shareID, entries owned per field manager,
  `metadata.uid` as precondition (409), entries must name allocated devices (422), `forbid_status`
  answers 403 as RBAC would without the resourceclaims/driver permission), /metrics with
  `kubernetes_feature_enabled` for the configured *scheduler* gates (stands in for kube-scheduler's
  endpoint);
- fault injection: `inject_conflicts(n)` makes the next n writes lose a race with "someone else";
  `inject_failures([(status, retry_after), ...], method=None)` answers the next requests (of that
  method) with those statuses (429 Too Many Requests with a Retry-After header, 5xx), as an
  overloaded apiserver does.
Watch is not implemented (the publisher does not watch). Written independently of driver.publish so
a bug there cannot hide in a shared helper.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

GATES = ("DRAPartitionableDevices", "DRADeviceCompatibilityGroups", "DRAConsumableCapacity", "DRASharedConsumableCapacity")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
_CLAIM_PATH = re.compile(r"/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)(?:/(status))?")


def _status_key(entry: dict[str, Any]) -> tuple:
    """status.devices is a list map keyed by driver, pool, device and shareID."""
    return (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID") or None)


def _uses(spec: dict[str, Any]) -> set[str]:
    used = set()
    if spec.get("sharedCounters") or spec.get("perDeviceNodeSelection"):
        used.add("DRAPartitionableDevices")
    for sc in spec.get("sharedCounters") or []:
        if any("requestPolicy" in c for c in (sc.get("counters") or {}).values()):
            used.add("DRASharedConsumableCapacity")
    for d in spec.get("devices") or []:
        if d.get("consumesCounters"):
            used.add("DRAPartitionableDevices")
        if "allowMultipleAllocations" in d or any("requestPolicy" in c for c in (d.get("capacity") or {}).values()):
            used.add("DRAConsumableCapacity")
        for e in d.get("consumesCounters") or []:
            if e.get("compatibilityGroups"):
                used.add("DRADeviceCompatibilityGroups")
            if any("valueFrom" in c for c in (e.get("counters") or {}).values()):
                used.add("DRASharedConsumableCapacity")
    return used


def strip(spec: dict[str, Any], off: set[str]) -> None:
    if "DRAPartitionableDevices" in off:
        spec.pop("sharedCounters", None)
        spec.pop("perDeviceNodeSelection", None)
    for sc in spec.get("sharedCounters") or []:
        for c in (sc.get("counters") or {}).values():
            if "DRASharedConsumableCapacity" in off:
                c.pop("requestPolicy", None)
    for d in spec.get("devices") or []:
        if "DRAPartitionableDevices" in off:
            d.pop("consumesCounters", None)
        if "DRAConsumableCapacity" in off:
            d.pop("allowMultipleAllocations", None)
            for c in (d.get("capacity") or {}).values():
                c.pop("requestPolicy", None)
        for e in d.get("consumesCounters") or []:
            if "DRADeviceCompatibilityGroups" in off:
                e.pop("compatibilityGroups", None)
            for c in (e.get("counters") or {}).values():
                if "DRASharedConsumableCapacity" in off:
                    c.pop("valueFrom", None)


def validate(obj: dict[str, Any]) -> str | None:
    name = (obj.get("metadata") or {}).get("name", "")
    if not _NAME.match(name) or len(name) > 253:
        return f"metadata.name: Invalid value: {name!r}"
    spec = obj.get("spec") or {}
    if not spec.get("driver") or not (spec.get("pool") or {}).get("name"):
        return "spec.driver/spec.pool.name: Required value"
    if sum(1 for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(k)) != 1:
        return "spec: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection is required"
    devices = spec.get("devices") or []
    if devices and spec.get("sharedCounters"):
        return "spec: devices and sharedCounters may not both be set"
    limit = 64 if any(d.get("consumesCounters") for d in devices) else 128
    if len(devices) > limit:
        return f"spec.devices: Too many: {len(devices)}: must have at most {limit} items"
    for d in devices:
        for e in d.get("consumesCounters") or []:
            if len(e.get("compatibilityGroups") or []) > 2:
                return f"spec.devices[{d['name']}].consumesCounters.compatibilityGroups: Too many"
            for cname, c in (e.get("counters") or {}).items():
                if ("value" in c) == ("valueFrom" in c):
                    return f"spec.devices[{d['name']}].consumesCounters.counters[{cname}]: exactly one of value, valueFrom required"
    return None


class StandInState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rv = 100
        self.slices: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.claims: list[dict[str, Any]] = []
        self.forbid_status = False  # 403 on resourceclaims/status writes
        # (namespace, name) -> field manager -> keys of status.devices entries it owns
        self.status_owners: dict[tuple[str, str], dict[str, set[tuple]]] = {}
        self.content_types: list[str | None] = []  # Content-Type header of each request, in order
        self.apiserver_gates = {g: True for g in GATES}
        self.scheduler_gates: dict[str, bool] | None = {g: True for g in GATES}
        self.requests: list[tuple[str, str, str]] = []
        self.authorization: list[str | None] = []  # Authorization header of each request, in order
        self.conflicts_left = 0
        self.failures: list[tuple[int, int | None]] = []  # (status, Retry-After seconds) for the next requests
        self.failures_method: str | None = None  # only requests of this method fail
        self.git_version = "v1.37.0"  # what GET /version answers (the release decides which gates exist)

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def add_node(self, name: str) -> str:
        uid = str(uuid.uuid4())
        self.nodes[name] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
        return uid

    def writes(self) -> list[tuple[str, str, str]]:
        return [r for r in self.requests if r[0] in ("POST", "PUT", "DELETE", "PATCH") and "dryRun" not in r[2]]

    def external_edit(self, name: str, mutate) -> None:
        """Someone else changes a stored slice (bumps resourceVersion)."""
        with self.lock:
            obj = self.slices[name]
            mutate(obj)
            obj["metadata"]["resourceVersion"] = self.next_rv()


class _Handler(BaseHTTPRequestHandler):
    state: StandInState

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, code: int, body: Any, ctype: str = "application/json", retry_after: int | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                          "message": message, "code": code})

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}") if n else {}

    def _route(self, method: str) -> None:
        url = urlparse(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        st = self.state
        st.requests.append((method, url.path, url.query))
        st.authorization.append(self.headers.get("Authorization"))
        st.content_types.append(self.headers.get("Content-Type"))
        with st.lock:
            if st.failures and st.failures_method in (None, method):
                code, retry_after = st.failures.pop(0)
                reason = "TooManyRequests" if code == 429 else "InternalError"
                return self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                                         "message": f"stand-in: injected {code}", "code": code}, retry_after=retry_after)
            if url.path == "/api/v1/nodes" or url.path.startswith("/api/v1/nodes/"):
                return self._node(method, url.path, q)
            if url.path == "/version" and method == "GET":
                major, minor = st.git_version.lstrip("v").split(".")[:2]
                return self._send(200, {"major": major, "minor": minor, "gitVersion": st.git_version})
            if url.path == "/metrics" and method == "GET":
                if st.scheduler_gates is None:
                    return self._status(503, "ServiceUnavailable", "metrics disabled")
                lines = ["# TYPE kubernetes_feature_enabled gauge"] + [
                    f'kubernetes_feature_enabled{{name="{g}",stage="ALPHA"}} {int(v)}' for g, v in st.scheduler_gates.items()]
                return self._send(200, "\n".join(lines) + "\n", "text/plain")
            if url.path == "/apis/resource.k8s.io/v1/resourceclaims" and method == "GET":
                return self._send(200, {"kind": "ResourceClaimList", "items": st.claims, "metadata": {}})
            claim_path = _CLAIM_PATH.fullmatch(url.path)
            if claim_path:
                return self._claim(method, claim_path.group(1), claim_path.group(2), claim_path.group(3), q)
            if url.path == SLICES:
                if method == "GET":
                    return self._list(q)
                if method == "POST":
                    return self._create(self._body(), q.get("dryRun") == "All")
            if url.path.startswith(SLICES + "/"):
                name = url.path.rsplit("/", 1)[1]
                if method == "GET":
                    obj = st.slices.get(name)
                    return self._send(200, obj) if obj else self._status(404, "NotFound", f"{name} not found")
                if method == "PUT":
                    return self._update(name, self._body())
                if method == "DELETE":
                    return self._delete(name, self._body())
            self._status(404, "NotFound", f"stand-in does not serve {method} {url.path}")

    def _node(self, method: str, path: str, q: dict[str, str]) -> None:
        st = self.state
        name = path.rsplit("/", 1)[1] if path.startswith("/api/v1/nodes/") else None
        if name is None and method == "GET":
            items = sorted(st.nodes.values(), key=lambda o: o["metadata"]["name"])
            for term in filter(None, q.get("labelSelector", "").split(",")):
                key, _, val = term.partition("=")
                items = [o for o in items if (o["metadata"].get("labels") or {}).get(key) == val]
            return self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": str(st.rv)},
                                    "items": copy.deepcopy(items)})
        if name is None and method == "POST":
            obj = self._body()
            meta = obj.setdefault("metadata", {})
            if not _NAME.match(meta.get("name") or ""):
                return self._status(422, "Invalid", f"Node {meta.get('name')!r} is invalid: metadata.name: Invalid value")
            if meta["name"] in st.nodes:
                return self._status(409, "AlreadyExists", f"nodes {meta['name']!r} already exists")
            meta.update(uid=str(uuid.uuid4()), resourceVersion=st.next_rv(), creationTimestamp="2026-01-01T00:00:00Z")
            st.nodes[meta["name"]] = obj
            return self._send(201, obj)
        old = st.nodes.get(name or "")
        if old is None:
            return self._status(404, "NotFound", f"nodes {name!r} not found")
        if method == "GET":
            return self._send(200, old)
        if method == "PUT":
            obj = self._body()
            if obj["metadata"].get("resourceVersion") != old["metadata"].get("resourceVersion"):
                return self._status(409, "Conflict", f"Operation cannot be fulfilled on nodes {name!r}: the object has been modified")
            obj["metadata"]["uid"] = old["metadata"]["uid"]
            obj["metadata"]["resourceVersion"] = st.next_rv()
            if "status" in old:  # PUT on the main resource never changes status (a subresource)
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)
            st.nodes[name] = obj
            return self._send(200, obj)
        if method == "DELETE":
            pre = (self._body().get("preconditions") or {})
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                return self._status(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}")
            del st.nodes[name]
            return self._send(200, {"kind": "Status", "status": "Success"})
        return self._status(405, "MethodNotAllowed", f"stand-in does not serve {method} on nodes")

    def _claim(self, method: str, ns: str, name: str, sub: str | None, q: dict[str, str]) -> None:
        st = self.state
        claim = next((c for c in st.claims if c["metadata"].get("namespace") == ns and c["metadata"]["name"] == name), None)
        if method == "GET" and sub is None:
            return self._send(200, claim) if claim else self._status(404, "NotFound", f"resourceclaims {name!r} not found")
        if method != "PATCH" or sub != "status":
            return self._status(405, "MethodNotAllowed", f"stand-in does not serve {method} on resourceclaims")
        if self.headers.get("Content-Type") != "application/apply-patch+yaml":
            return self._status(415, "UnsupportedMediaType", "stand-in only serves apply patches here")
        manager = q.get("fieldManager")
        if not manager:
            return self._status(400, "BadRequest", "fieldManager: Required value: is required for apply patch")
        if st.forbid_status:
            return self._status(403, "Forbidden", f'resourceclaims.resource.k8s.io "{name}" is forbidden: '
                                "changing status.devices requires extra permission")
        if claim is None:
            return self._status(404, "NotFound", f"resourceclaims {name!r} not found")
        body = self._body()
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != claim["metadata"].get("uid"):
            return self._status(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, "
                                f"UID in object meta: {claim['metadata'].get('uid')}")
        applied = (body.get("status") or {}).get("devices") or []
        allocated = {_status_key(r) for r in ((claim.get("status") or {}).get("allocation") or {})
                     .get("devices", {}).get("results") or []}
        for i, entry in enumerate(applied):
            if _status_key(entry) not in allocated:
                return self._status(422, "Invalid", f"status.devices[{i}]: Invalid value: device not allocated")
        owners = st.status_owners.setdefault((ns, name), {})
        mine = {_status_key(e) for e in applied}
        dropped = owners.get(manager, set()) - mine
        others = set().union(*(keys for m, keys in owners.items() if m != manager))
        if q.get("force") != "true" and mine & others:
            return self._status(409, "Conflict", "Apply failed with conflicts: fields owned by another manager")
        for m in owners:  # force: the applier takes over the fields it applies
            owners[m] -= mine
        owners[manager] = mine
        status = claim.setdefault("status", {})
        kept = [e for e in status.get("devices") or []
                if _status_key(e) not in mine and not (_status_key(e) in dropped and _status_key(e) not in others)]
        devices = kept + [copy.deepcopy(e) for e in applied]
        if devices:
            status["devices"] = devices
        else:
            status.pop("devices", None)
        claim["metadata"]["resourceVersion"] = st.next_rv()
        self._send(200, claim)

    def _list(self, q: dict[str, str]) -> None:
        items = sorted(self.state.slices.values(), key=lambda o: o["metadata"]["name"])
        for term in filter(None, q.get("fieldSelector", "").split(",")):
            key, _, val = term.partition("=")
            field = {"spec.driver": "driver", "spec.nodeName": "nodeName"}.get(key)
            if field is None:
                return self._status(400, "BadRequest", f"field label not supported: {key}")
            items = [o for o in items if o["spec"].get(field) == val]
        for term in filter(None, q.get("labelSelector", "").split(",")):
            key, _, val = term.partition("=")
            items = [o for o in items if (o["metadata"].get("labels") or {}).get(key) == val]
        start = int(q.get("continue") or 0)
        limit = int(q.get("limit") or 0) or len(items)
        page = items[start:start + limit]
        meta = {"resourceVersion": str(self.state.rv)}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        self._send(200, {"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1",
                         "metadata": meta, "items": copy.deepcopy(page)})

    def _inject_conflict(self, name: str | None) -> bool:
        st = self.state
        if st.conflicts_left <= 0:
            return False
        st.conflicts_left -= 1
        if name and name in st.slices:  # "someone else" wrote the object meanwhile
            st.slices[name]["metadata"]["resourceVersion"] = st.next_rv()
        self._status(409, "Conflict", f"Operation cannot be fulfilled on resourceslices {name!r}: the object has been modified")
        return True

    def _prepare(self, obj: dict[str, Any], old: dict[str, Any] | None) -> str | None:
        off = {g for g, on in self.state.apiserver_gates.items() if not on}
        if "DRAPartitionableDevices" in off:
            off |= {"DRADeviceCompatibilityGroups", "DRASharedConsumableCapacity"}
        strip(obj.setdefault("spec", {}), off - (_uses(old["spec"]) if old else set()))
        return validate(obj)

    def _create(self, obj: dict[str, Any], dry_run: bool) -> None:
        st = self.state
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not dry_run and self._inject_conflict(None):
            return
        err = self._prepare(obj, None)
        if err:
            return self._status(422, "Invalid", f"ResourceSlice {meta.get('name')!r} is invalid: {err}")
        if meta["name"] in st.slices and not dry_run:
            return self._status(409, "AlreadyExists", f"resourceslices {meta['name']!r} already exists")
        meta.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp="2026-01-01T00:00:00Z")
        if dry_run:
            return self._send(201, obj)
        meta["resourceVersion"] = st.next_rv()
        st.slices[meta["name"]] = obj
        self._send(201, obj)

    def _update(self, name: str, obj: dict[str, Any]) -> None:
        st = self.state
        old = st.slices.get(name)
        if old is None:
            return self._status(404, "NotFound", f"resourceslices {name!r} not found")
        if self._inject_conflict(name):
            return
        if obj["metadata"].get("resourceVersion") != old["metadata"]["resourceVersion"]:
            return self._status(409, "Conflict", f"Operation cannot be fulfilled on resourceslices {name!r}: the object has been modified")
        err = self._prepare(obj, old)
        if err:
            return self._status(422, "Invalid", f"ResourceSlice {name!r} is invalid: {err}")
        meta = obj["metadata"]
        meta["uid"] = old["metadata"]["uid"]
        meta["generation"] = old["metadata"]["generation"] + (obj["spec"] != old["spec"])
        meta["resourceVersion"] = st.next_rv()
        st.slices[name] = obj
        self._send(200, obj)

    def _delete(self, name: str, opts: dict[str, Any]) -> None:
        st = self.state
        old = st.slices.get(name)
        if old is None:
            return self._status(404, "NotFound", f"resourceslices {name!r} not found")
        if self._inject_conflict(name):
            return
        pre = opts.get("preconditions") or {}
        for key in ("uid", "resourceVersion"):
            if pre.get(key) and pre[key] != old["metadata"][key]:
                return self._status(409, "Conflict", f"Precondition failed: {key} in precondition: {pre[key]}")
        del st.slices[name]
        self._send(200, {"kind": "Status", "status": "Success"})

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def do_PATCH(self) -> None:
        self._route("PATCH")


class StandInServer:
    """`with StandInServer() as srv:` -> srv.url, srv.state."""

    def __init__(self) -> None:
        self.state = StandInState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> StandInServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def inject_failures(self, failures: list[tuple[int, int | None]], method: str | None = None) -> None:
        with self.state.lock:
            self.state.failures = list(failures)
            self.state.failures_method = method

    def inject_conflicts(self, n: int) -> None:
        with self.state.lock:
            self.state.conflicts_left = n
