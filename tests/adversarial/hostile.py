"""Hostile kubelet inputs for a running `fake-dra run`, and the invariants every answer must keep.

Why a module of its own: the same inputs drive the CI suite (tests/adversarial/test_hostile_inputs.py)
and the opt-in soak (hack/soak.sh, through the command line below), so both check one thing:
whatever the kubelet sends and whatever lies in the object store, the plugin answers per claim (an
error naming the claim, or a clean answer), keeps serving, and reserves nothing for a refused claim.

Three families of inputs (`catalogue()`, 100+ fixed ones; `fuzz(seed, n)` adds random variants):
- kubelet fields: malformed/huge/empty/unicode UIDs, names and namespaces, duplicated claims in one
  call, wrong namespaces and UIDs, thousands of claims, raw protobuf that does not decode;
- store objects: wrong kind or shape, rows that are not JSON or not text, deep nesting, huge rows;
- allocations malformed in every field, and recorded quantities at and beyond the limits.
Each hostile claim travels with a good claim in the same call, which must still be prepared.

Command line (see HOSTILE.md in this directory), e.g. from the repository root:
    PYTHONPATH=tests python -m adversarial.hostile --registry-dir R --store S --state-dir D --cdi-root C
prints one summary line and exits 1 if an invariant broke.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from driver.errors import InputError, NotFoundError
from driver.plugin.client import KubeletClient
from driver.plugin.protos import DRA
from driver.store import ObjectStore
from storeutil import plant_row  # tests/ is on the path: pytest's and the command line's (PYTHONPATH=tests)

ERROR, OK, EMPTY, ANY = "error", "ok", "empty", "any"
MAX_ERROR_CHARS = 4096  # an error echoing a megabyte of hostile input is a violation
Ref = tuple[str, str, str]


@dataclass(frozen=True)
class Devices:
    """Devices of the node under test the inputs allocate (found in its published slices)."""

    driver: str
    pool: str
    gpu: str  # a full GPU for hostile claims
    good: str  # another device, for the good claim sent along
    mig: str | None = None  # a partition drawing on `gpu`'s counter set
    vf: str | None = None  # a device with a request-driven (valueFrom) counter
    vf_counter_set: str | None = None
    vf_counter: str | None = None


@dataclass
class Input:
    """One hostile call. `claims` is what the kubelet sends; `objects` are store objects written
    first (namespace, name, bytes: JSON of an object, stored through the store's API as `apply`
    would, unless its key is in `raw_keys`: then planted as a raw row, bypassing every check);
    `expect` maps a claim UID to ERROR / OK / EMPTY / ANY, with optional fragments one of which the
    error must contain."""

    name: str
    claims: list[Ref] = field(default_factory=list)
    objects: list[tuple[str, str, bytes]] = field(default_factory=list)
    raw_keys: set[tuple[str, str]] = field(default_factory=set)
    expect: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    call: str = "prepare"  # prepare | unprepare | raw
    raw: bytes = b""
    raw_codes: tuple[str, ...] = ()  # gRPC status codes a raw call may end with ("OK" included if fine)


@dataclass
class Report:
    tried: int = 0
    claims: int = 0
    errors: int = 0
    prepared: int = 0
    violations: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"hostile inputs: {self.tried} tried, {self.claims} claims, {self.errors} per-claim errors, "
                f"{self.prepared} prepared and released, {len(self.violations)} violations")


# -- building inputs ---------------------------------------------------------------------------


def _uid() -> str:
    return str(uuid.uuid4())


def claim_object(name: str, namespace: str, uid: str, results: Any = None, *, allocation: Any = "default",
                 **override: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": namespace, "uid": uid}, "spec": {}}
    if allocation == "default":
        allocation = {"devices": {"results": results if results is not None else []}}
    if allocation is not None:
        obj["status"] = {"allocation": allocation}
    obj.update(override)
    return obj


def _encoded(obj: Any) -> bytes:
    """A claim object as the bytes planted for it (JSON: what the store keeps; _write_objects
    stores a well-formed one through the store's API and plants anything else as a raw row)."""
    return json.dumps(obj).encode()


class Builder:
    """Turns short descriptions into Inputs, each with a good claim alongside."""

    def __init__(self, dev: Devices) -> None:
        self.dev = dev
        self.inputs: list[Input] = []
        self._n = 0

    def _name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}-{self._n}"

    def result(self, device: str | None = None, request: str = "r", **extra: Any) -> dict[str, Any]:
        return {"request": request, "driver": self.dev.driver, "pool": self.dev.pool,
                "device": device or self.dev.gpu, **extra}

    def good(self) -> tuple[Ref, tuple[str, str, bytes]]:
        name, uid = self._name("good"), _uid()
        obj = claim_object(name, "default", uid, [self.result(self.dev.good)])
        return ("default", name, uid), ("default", name, _encoded(obj))

    def add(self, name: str, bad: Ref | Sequence[Ref], *, objects: Iterable[tuple[str, str, bytes]] = (),
            expect: str = ERROR, fragments: Sequence[str] = (), with_good: bool = True, **kw: Any) -> Input:
        bads = [bad] if isinstance(bad, tuple) else list(bad)
        inp = Input(name=name, claims=list(bads), objects=list(objects), **kw)
        for ref in bads:
            inp.expect.setdefault(ref[2], (expect, tuple(fragments)))
        if with_good:
            ref, obj = self.good()
            inp.claims.append(ref)
            inp.objects.append(obj)
            inp.expect[ref[2]] = (OK, ())
        self.inputs.append(inp)
        return inp

    def stored(self, name: str, obj_or_bytes: Any, *, expect: str = ERROR, fragments: Sequence[str] = (),
               claim_name: str | None = None, namespace: str = "default", uid: str | None = None) -> Input:
        """A claim whose store object is `obj_or_bytes` (a dict is stored through the store's API;
        bytes are planted as the raw row; a callable gets (name, namespace, uid) and returns either)."""
        cname, uid = claim_name or self._name("bad"), uid or _uid()
        if callable(obj_or_bytes):
            obj_or_bytes = obj_or_bytes(cname, namespace, uid)
        data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else _encoded(obj_or_bytes)
        inp = self.add(name, (namespace, cname, uid), objects=[(namespace, cname, data)],
                       expect=expect, fragments=fragments)
        if isinstance(obj_or_bytes, bytes):
            inp.raw_keys.add((namespace, cname))
        return inp

    def allocated(self, name: str, results: Any, *, expect: str = ERROR, fragments: Sequence[str] = (),
                  **claim_kw: Any) -> Input:
        return self.stored(name, lambda n, ns, u: claim_object(n, ns, u, results, **claim_kw),
                           expect=expect, fragments=fragments)


def catalogue(dev: Devices) -> list[Input]:
    """The fixed hostile inputs (deterministic; 100+)."""
    b = Builder(dev)
    _kubelet_fields(b)
    _store_objects(b)
    _allocations(b)
    _quantities(b)
    _raw_messages(b)
    return b.inputs


def _kubelet_fields(b: Builder) -> None:
    valid_ns, valid_name = "default", "c"
    uids = {
        "empty": "", "slash": "a/b", "traversal": "../../etc/passwd", "huge": "u" * 100_000,
        "unicode": "ünï-cödé", "nul": "abc\x00def", "newline": "abc\n", "space": "a b", "65-chars": "a" * 65,
        "dot": ".", "leading-dash": "-abc", "emoji": "\U0001f4a3",
    }
    for label, uid in uids.items():
        b.add(f"uid/{label}", (valid_ns, valid_name, uid), fragments=("invalid claim UID",))
    b.add("uid/valid-but-unknown", (valid_ns, "nobody", "a" * 64), fragments=("not found",))
    names = {
        "empty": "", "254-chars": "a" * 254, "upper": "GPU", "unicode": "ｇｐｕ", "traversal": "../x", "slash": "a/b",
        "huge": "n" * 1_000_000, "nul": "a\x00b", "dot": ".", "dotdot": "..", "trailing-dot": "a.", "space": "a b",
    }
    for label, name in names.items():
        b.add(f"name/{label}", (valid_ns, name, _uid()), fragments=("invalid claim name",))
    b.add("name/253-chars-unknown", (valid_ns, ".".join(["a" * 63] * 4)[:253], _uid()),
          fragments=("not found",))
    namespaces = {
        "empty": "", "64-chars": "a" * 64, "dotted": "a.b", "unicode": "nämespace", "cluster-dir": "_cluster",
        "dotdot": "..", "huge": "s" * 1_000_000, "upper": "Default",
    }
    for label, ns in namespaces.items():
        b.add(f"namespace/{label}", (ns, valid_name, _uid()), fragments=("invalid claim namespace",))

    # Duplicates within one call.
    ref, obj = b.good()
    dup = Input("call/same-claim-twice", claims=[ref, ref], objects=[obj], expect={ref[2]: (OK, ())})
    b.inputs.append(dup)
    uid = _uid()
    b.add("call/same-uid-different-names", [("default", "x1", uid), ("default", "x2", uid)],
          fragments=("listed twice with different names",))
    b.add("call/same-uid-huge-different-names", [("default", "y" * 500_000, uid), ("default", "z", uid)],
          fragments=("listed twice with different names",))
    b.add("call/thousands-of-unknown-claims", [("default", f"nobody-{i}", _uid()) for i in range(3000)],
          fragments=("not found",))
    b.inputs.append(Input("call/no-claims"))

    # Wrong namespace / UID: the object exists, the kubelet's coordinates do not match it.
    def _wrong_ns(n: str, ns: str, u: str) -> dict[str, Any]:
        return claim_object(n, "other", u, [b.result()])
    b.stored("claim/object-names-another-namespace", _wrong_ns,
             fragments=("metadata.namespace is 'other'", "metadata.namespace 'other' is not the namespace it is stored under"))
    b.stored("claim/uid-mismatch", lambda n, ns, u: claim_object(n, ns, _uid(), [b.result()]),
             fragments=("UID mismatch",))
    cname, cuid = b._name("elsewhere"), _uid()
    b.add("claim/asked-in-the-wrong-namespace", ("kube-system", cname, cuid),
          objects=[("default", cname, _encoded(claim_object(cname, "default", cuid, [b.result()])))],
          fragments=("not found",))
    b.add("unprepare/hostile-uids", [("default", "c", "../x"), ("n" * 300_000, "c", "v" * 300_000),
                                     ("default", "never-prepared", _uid())],
          call="unprepare", expect=ANY, with_good=False)


def _store_objects(b: Builder) -> None:
    base = lambda n, ns, u, **kw: claim_object(n, ns, u, [b.result()], **kw)  # noqa: E731
    b.stored("store/status-list", lambda n, ns, u: base(n, ns, u, status=[1]), fragments=("status: expected an object",))
    b.stored("store/metadata-list", lambda n, ns, u: base(n, ns, u, metadata=[1]),
             fragments=("metadata: expected an object",))
    b.stored("store/metadata-missing", lambda n, ns, u: {"kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1"},
             fragments=("metadata",))
    b.stored("store/kind-pod", lambda n, ns, u: base(n, ns, u, kind="Pod"), fragments=("kind is 'Pod'",))
    b.stored("store/api-version", lambda n, ns, u: base(n, ns, u, apiVersion="v1"), fragments=("apiVersion",))
    b.stored("store/spec-string", lambda n, ns, u: base(n, ns, u, spec="x"), fragments=("spec: expected an object",))
    b.stored("store/list-document", b"[1, 2]", fragments=("does not hold an object",))
    b.stored("store/null-document", b"null", fragments=("does not hold an object",))
    b.stored("store/empty-row", b"", fragments=("does not parse",))
    b.stored("store/not-json", b"a: [1, 2\n", fragments=("does not parse",))
    b.stored("store/python-tag", b"!!python/object/apply:os.system ['true']\n", fragments=("does not parse",))
    b.stored("store/non-utf8", b"metadata:\n  name: \xff\xfe\n", fragments=("not text",))
    b.stored("store/deep-150", lambda n, ns, u: b'{"metadata": {"name": "%s", "namespace": "%s"}, "a": %s}' % (
        n.encode(), ns.encode(), b"[" * 150 + b"]" * 150), fragments=("nests more than",))
    b.stored("store/deep-5000", b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", fragments=("does not parse",))
    b.stored("store/deep-100000", b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", fragments=("does not parse",))
    b.stored("store/huge-integer", b'{"metadata": {"generation": ' + b"9" * 5000 + b"}}", fragments=("does not parse",))
    b.stored("store/oversized", b'{"a": "' + b"x" * (3 * 1024 * 1024 + 1) + b'"}', fragments=("larger than",))


def _allocations(b: Builder) -> None:
    dev = b.dev
    r = b.result
    cases: dict[str, tuple[Any, str, tuple[str, ...]]] = {
        # (results, expectation, fragments); EMPTY: answered without devices, nothing prepared
        "results-null": (None, EMPTY, ()),
        "results-empty": ([], EMPTY, ()),
        "results-map": ({"a": 1}, ERROR, ("results: expected a list",)),
        "results-string": ("gpu-0", ERROR, ("results: expected a list",)),
        "result-number": ([7], ERROR, ("results[0]: expected an object",)),
        "result-null": ([None], ERROR, ("results[0]: expected an object",)),
        "driver-other": ([{**r(), "driver": "other.example.com"}], EMPTY, ()),
        "driver-missing": ([{k: v for k, v in r().items() if k != "driver"}], EMPTY, ()),
        "driver-number": ([{**r(), "driver": 5}], EMPTY, ()),
        "device-missing": ([{k: v for k, v in r().items() if k != "device"}], ERROR, ("device",)),
        "device-number": ([r(device=7)], ERROR, ("device",)),
        "device-upper": ([r(device="GPU-0")], ERROR, ("device",)),
        "device-traversal": ([r(device="../x")], ERROR, ("device",)),
        "device-huge": ([r(device="d" * 100_000)], ERROR, ("device",)),
        "device-unicode": ([r(device="gpü-0")], ERROR, ("device",)),
        "device-unknown": ([r(device="no-such-device")], ERROR, ("not in the current inventory",)),
        "pool-other": ([{**r(), "pool": "other-node"}], ERROR, ("not this node's pool",)),
        "pool-number": ([{**r(), "pool": 1}], ERROR, ("not this node's pool",)),
        "pool-missing": ([{k: v for k, v in r().items() if k != "pool"}], ERROR, ("not this node's pool",)),
        "request-missing": ([{k: v for k, v in r().items() if k != "request"}], ERROR, ("request",)),
        "request-empty-part": ([r(request="a//b")], ERROR, ("request",)),
        "request-unicode": ([r(request="réq")], ERROR, ("request",)),
        "request-number": ([r(request=5)], OK, ()),  # "5" is a DNS label: the number's text is used
        "share-id-map": ([r(shareID={"a": 1})], ERROR, ("shareID",)),
        "share-id-number": ([r(shareID=3)], ERROR, ("shareID",)),
        # the API allows only a lowercase UUID (format=k8s-uuid); the value reaches the CDI env
        "share-id-not-uuid": ([r(shareID="s1")], ERROR, ("shareID", "lowercase UUID")),
        "share-id-upper": ([r(shareID="123E4567-E89B-12D3-A456-426614174000")], ERROR, ("lowercase UUID",)),
        "share-id-newline": ([r(shareID="123e4567-e89b-12d3-a456-426614174000\nX=1")], ERROR, ("lowercase UUID",)),
        "share-id-huge": ([r(shareID="a" * 1_000_000)], ERROR, ("lowercase UUID",)),
        "consumed-capacity-list": ([r(consumedCapacity=[1])], ERROR, ("malformed allocation",)),
        "same-device-twice": ([r(), r(request="s")], ERROR, ("allocated twice in this claim",)),
        "same-device-twice-admin": ([r(adminAccess=True), r(adminAccess=True)], ERROR, ("allocated twice",)),
        "thousands-of-results": ([r(device=f"x-{i}") for i in range(2000)], ERROR, ("not in the current inventory",)),
    }
    if dev.mig:
        cases["gpu-and-its-partition"] = ([r(), r(device=dev.mig, request="m")], ERROR, ("revalidation failed",))
    for label, (results, expect, fragments) in cases.items():
        b.allocated(f"allocation/{label}", results, expect=expect, fragments=fragments)
    for label, allocation, fragments in [
        ("allocation-string", "x", ("status.allocation: expected an object",)),
        ("allocation-list", [1], ("status.allocation: expected an object",)),
        ("devices-list", {"devices": []}, ("status.allocation.devices: expected an object",)),
        ("config-map", {"devices": {"results": [r()], "config": {"a": 1}}}, ("config: expected a list",)),
        ("config-entry-string", {"devices": {"results": [r()], "config": ["x"]}}, ("config[0]",)),
        ("config-opaque-garbage", {"devices": {"results": [r()], "config": [
            {"requests": "r", "opaque": {"driver": dev.driver, "parameters": [1, 2]}}]}}, ("config",)),
    ]:
        b.stored(f"allocation/{label}", lambda n, ns, u, a=allocation: claim_object(n, ns, u, allocation=a),
                 fragments=fragments)
    b.stored("allocation/unallocated", lambda n, ns, u: claim_object(n, ns, u, allocation=None),
             fragments=("is not allocated",))
    b.stored("allocation/status-null", lambda n, ns, u: {**claim_object(n, ns, u, allocation=None), "status": None},
             fragments=("is not allocated",))


def _quantities(b: Builder) -> None:
    dev = b.dev
    if not (dev.vf and dev.vf_counter_set and dev.vf_counter):
        return

    def rec(amount: Any, counter_set: str | None = None, counter: str | None = None) -> list[dict[str, Any]]:
        return [{"counterSet": counter_set or dev.vf_counter_set, "counters": {counter or dev.vf_counter: {"value": amount}}}]

    hostile = {
        "negative": ("-1", ("negative",)), "minus-zero-ok": ("-0", ()), "exponent-huge": ("1e10000000", ("magnitude",)),
        "exponent-int64": ("1e99999999999999999999", ("exponent",)), "tiny": ("1e-400", ("requestPolicy",)),
        "digits-65": ("1" * 65, ("more than 64 digits",)), "digits-64": ("1" * 64, ("magnitude",)),
        "binary-cap": ("9Ei", ("requestPolicy",)), "text-huge": ("1" * 200_000, ("longer than",)),
        "whitespace": (" 1G", ("invalid quantity",)), "newline": ("1G\n", ("invalid quantity",)),
        "garbage": ("lots", ("invalid quantity",)), "float": (1.5, ("invalid quantity",)),
        "bool": (True, ("invalid quantity",)), "null": (None, ("invalid quantity",)),
        "map": ({"x": 1}, ("invalid quantity",)), "int-huge": (10**40, ("magnitude",)),
        "unknown-set": ("1G", ()), "unknown-counter": ("1G", ()), "duplicate-set": ("1G", ()),
    }
    for label, (amount, fragments) in hostile.items():
        if label == "unknown-set":
            records = rec(amount, counter_set="no-such-set")
            fragments = ("does not consume from this counter set",)
        elif label == "unknown-counter":
            records = rec(amount, counter="no-such-counter")
            fragments = ("does not consume this counter",)
        elif label == "duplicate-set":
            records = rec("200M") + rec("200M")
            fragments = ("listed twice",)
        else:
            records = rec(amount)
        expect = ERROR
        if label == "minus-zero-ok":  # -0 is 0: below validRange min, so still refused by the policy
            fragments = ("requestPolicy",)
        b.allocated(f"quantity/{label}", [b.result(dev.vf, consumedCounters=records)], expect=expect,
                    fragments=fragments)
    b.allocated("quantity/records-not-a-list", [b.result(dev.vf, consumedCounters={"counterSet": dev.vf_counter_set})],
                fragments=("consumedCounters: expected a list",))


def _raw_messages(b: Builder) -> None:
    b.inputs.append(Input("raw/not-protobuf", call="raw", raw=b"\xff" * 64, raw_codes=("INTERNAL", "UNKNOWN", "OK")))
    # field 1 (claims), a Claim whose field 3 (uid) is not valid UTF-8: proto3 strings must be
    bad_claim = b"\x1a\x02\xff\xfe"
    b.inputs.append(Input("raw/invalid-utf8-uid", call="raw", raw=b"\x0a" + bytes([len(bad_claim)]) + bad_claim,
                          raw_codes=("INTERNAL", "UNKNOWN", "OK")))
    big = b"\x0a" + _varint(5 * 1024 * 1024 + 6) + b"\x0a" + _varint(5 * 1024 * 1024) + b"a" * (5 * 1024 * 1024)
    b.inputs.append(Input("raw/over-the-message-limit", call="raw", raw=big, raw_codes=("RESOURCE_EXHAUSTED", "OK")))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


_ALPHABET = ["a", "-", ".", "/", "..", "\x00", "\n", " ", "Ä", "\U0001f4a3", "%", "*", "\\", "0", "Z", "_"]


def fuzz(dev: Devices, seed: int, count: int) -> list[Input]:
    """Random variants (for the soak): hostile strings, random field replacements and quantities.
    Their outcome is not known in advance (ANY); the invariants still hold."""
    rng = random.Random(seed)
    b = Builder(dev)

    def text() -> str:
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.choice([0, 1, 5, 64, 300, 5000])))

    junk: list[Callable[[], Any]] = [text, lambda: rng.randint(-10**6, 10**6), lambda: None, lambda: [text()],
                                     lambda: {text(): text()}, lambda: rng.random(), lambda: rng.choice([True, False])]
    fields = ["request", "driver", "pool", "device", "adminAccess", "shareID", "consumedCounters", "consumedCapacity"]
    for i in range(count):
        kind = rng.choice(["ref", "result", "quantity"])
        if kind == "ref":
            ns = rng.choice(["default", text()])
            name = rng.choice(["c", text()])
            b.add(f"fuzz-{seed}-{i}/ref", (ns, name, rng.choice([_uid(), text()])), expect=ANY)
        elif kind == "result":
            res = b.result(rng.choice([dev.gpu, dev.mig or dev.gpu, dev.vf or dev.gpu]))
            for _ in range(rng.randint(1, 3)):
                res[rng.choice(fields)] = rng.choice(junk)()
            b.allocated(f"fuzz-{seed}-{i}/result", [res], expect=ANY)
        elif dev.vf:
            amount = rng.choice(["", "-", "1", "-1"]) + "".join(rng.choice("0123456789.eE+-kMGTPEi mnu")
                                                                for _ in range(rng.randint(0, 30)))
            b.allocated(f"fuzz-{seed}-{i}/quantity", [b.result(dev.vf, consumedCounters=[
                {"counterSet": dev.vf_counter_set, "counters": {dev.vf_counter: {"value": amount}}}])], expect=ANY)
    return b.inputs


# -- running inputs against a plugin ---------------------------------------------------------


@dataclass
class Target:
    """A running plugin and the directories it uses."""

    registry_dir: Path
    store: Path
    state_dir: Path
    cdi_root: Path
    driver: str = "fake-dra.example.com"
    node: str = "n1"
    timeout_s: float = 45.0

    def client(self) -> KubeletClient:
        c = KubeletClient(self.registry_dir, self.driver, timeout_s=self.timeout_s)
        c.register()
        return c

    def reserved(self) -> tuple[set[str], set[str]]:
        """(claim UIDs in the checkpoint, claim UIDs with a CDI spec)."""
        try:
            claims = set(json.loads((self.state_dir / "checkpoint.json").read_text()).get("claims", {}))
        except FileNotFoundError:
            claims = set()
        prefix = f"k8s.{self.driver}_device_"
        specs = {p.name[len(prefix):-len(".json")] for p in self.cdi_root.glob(f"{prefix}*.json")} \
            if self.cdi_root.is_dir() else set()
        return claims, specs

    def devices(self) -> Devices:
        """Pick the devices the inputs use from the slices this plugin published."""
        root = self.store
        slices = ObjectStore(root).list("resourceslices")
        specs = [s["spec"] for s in slices if s.get("spec", {}).get("driver") == self.driver
                 and s["spec"].get("nodeName") == self.node]
        if not specs:
            raise RuntimeError(f"no ResourceSlices of {self.driver} for node {self.node} in {root}")
        gen = max(s["pool"]["generation"] for s in specs)
        specs = [s for s in specs if s["pool"]["generation"] == gen]
        pool = specs[0]["pool"]["name"]
        devs = [d for s in specs for d in s.get("devices") or ()]
        policies = {cs["name"]: cs["counters"] for s in specs for cs in s.get("sharedCounters") or ()}

        def typ(d: dict[str, Any]) -> str:
            return str(((d.get("attributes") or {}).get("type") or {}).get("string", ""))

        gpus = [d for d in devs if typ(d) == "gpu"]
        if len(gpus) < 2:
            raise RuntimeError("the node under test needs two full GPUs")
        gpu_sets = {c["counterSet"] for c in gpus[0].get("consumesCounters") or ()}
        mig = next((d["name"] for d in devs if typ(d) == "mig"
                    and {c["counterSet"] for c in d.get("consumesCounters") or ()} & gpu_sets), None)
        # A device with a request-driven counter; a publisher whose scheduler lacks KEP-5941 publishes
        # VFs with a fixed value instead, while the plugin still revalidates the request-driven form.
        vf = vf_set = vf_counter = None
        for want_value_from in (True, False):
            for d in devs:
                if vf is not None or (not want_value_from and typ(d) != "vf"):
                    continue
                for c in d.get("consumesCounters") or ():
                    for cname, counter in (c.get("counters") or {}).items():
                        driven = bool((counter or {}).get("valueFrom"))
                        if vf is None and driven == want_value_from and c["counterSet"] in policies:
                            vf, vf_set, vf_counter = d["name"], c["counterSet"], cname
        return Devices(self.driver, pool, gpus[0]["name"], gpus[1]["name"], mig, vf, vf_set, vf_counter)


def _write_objects(target: Target, inp: Input) -> list[tuple[str, str]]:
    """Store each object: through the store's API when it is an object with metadata naming it
    (as `fake-dra apply` would, so only the plugin's own checks stand between it and a prepare),
    else as a raw row planted under its key (as a hand edit of the database would)."""
    store = ObjectStore(target.store)
    written = []
    for ns, name, data in inp.objects:
        try:
            obj = None if (ns, name) in inp.raw_keys else json.loads(data)
        except (ValueError, RecursionError):
            obj = None
        try:
            if not (isinstance(obj, dict) and isinstance(obj.get("metadata"), dict)
                    and obj["metadata"].get("name") == name and obj["metadata"].get("namespace") == ns):
                raise InputError("not a well-formed object")
            store.restore("resourceclaims", obj)
        except InputError:
            try:
                text: str | bytes = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data
            plant_row(target.store, "resourceclaims", ns, name, text)
        written.append((ns, name))
    store.close()
    return written


def _remove(target: Target, keys: Iterable[tuple[str, str]]) -> None:
    store = ObjectStore(target.store)
    for ns, name in keys:
        try:
            store.delete("resourceclaims", ns, name)
        except (NotFoundError, InputError):
            pass
    store.close()


def _raw_call(client: KubeletClient, data: bytes, timeout: float) -> str:
    pb2, _ = DRA[client.dra_version or "v1"]
    service = pb2.DESCRIPTOR.services_by_name["DRAPlugin"].full_name
    channel = grpc.insecure_channel(f"unix://{client.endpoint}")
    try:
        call = channel.unary_unary(f"/{service}/NodePrepareResources")
        call(data, timeout=timeout)
        return "OK"
    except grpc.RpcError as exc:
        return exc.code().name
    finally:
        channel.close()


def run(target: Target, inputs: Sequence[Input], client: KubeletClient | None = None,
        on_input: Callable[[Input, list[str]], None] | None = None) -> Report:
    """Send every input; check the invariants after each; return the figures and the violations
    (each naming the input). Stops early only if the plugin stops serving."""
    report = Report()
    own = client is None
    client = client or target.client()
    try:
        for inp in inputs:
            problems = _run_one(target, client, inp, report)
            report.tried += 1
            report.violations.extend(f"{inp.name}: {p}" for p in problems)
            if on_input is not None:
                on_input(inp, problems)
            if any(p.startswith("server not serving") for p in problems):
                break
    finally:
        if own:
            client.close()
    return report


def _run_one(target: Target, client: KubeletClient, inp: Input, report: Report) -> list[str]:
    problems: list[str] = []
    before = target.reserved()
    written = _write_objects(target, inp)
    prepared: list[Ref] = []
    try:
        if inp.call == "raw":
            code = _raw_call(client, inp.raw, target.timeout_s)
            if code not in inp.raw_codes:
                problems.append(f"raw call ended with {code}, expected one of {inp.raw_codes}")
        elif inp.call == "unprepare":
            answers = client.unprepare(inp.claims)
            report.claims += len(answers)
            problems += _check_keys(inp, answers)
            for uid, error in answers.items():
                report.errors += bool(error)
                if len(error) > MAX_ERROR_CHARS:
                    problems.append(f"claim {uid[:40]!r}: error of {len(error)} characters")
        else:
            results = client.prepare(inp.claims)
            report.claims += len(results)
            problems += _check_keys(inp, results)
            for uid, res in results.items():
                want, fragments = inp.expect.get(uid, (ANY, ()))
                shown = uid[:40]
                if res.error:
                    report.errors += 1
                    if len(res.error) > MAX_ERROR_CHARS:
                        problems.append(f"claim {shown!r}: error of {len(res.error)} characters")
                    if want in (OK, EMPTY):
                        problems.append(f"claim {shown!r}: expected {want}, got error {res.error[:300]!r}")
                    elif fragments and not any(f in res.error for f in fragments):
                        problems.append(f"claim {shown!r}: error {res.error[:300]!r} names none of {fragments}")
                    ref = next(r for r in inp.claims if r[2] == uid)
                    if want != ANY and ref[1][:40] not in res.error and uid[:36] not in res.error:
                        problems.append(f"claim {shown!r}: error {res.error[:300]!r} names neither the claim nor its UID")
                else:  # answered as prepared (maybe with no device): the kubelet unprepares it later
                    prepared.append(next(r for r in inp.claims if r[2] == uid))
                    if want == ERROR:
                        problems.append(f"claim {shown!r}: expected an error, got {len(res.devices)} devices")
                    elif want == EMPTY and res.devices:
                        problems.append(f"claim {shown!r}: expected no devices, got {len(res.devices)}")
                    elif want == OK and not res.devices:
                        problems.append(f"claim {shown!r}: expected devices, got none")
    except grpc.RpcError as exc:
        problems.append(f"the whole call failed: {exc.code().name}: {(exc.details() or '')[:300]}")
    finally:
        if prepared:
            report.prepared += len(prepared)
            try:
                left = {uid: e for uid, e in client.unprepare(prepared).items() if e}
                if left:
                    problems.append(f"unprepare of the prepared claims failed: {left}")
            except grpc.RpcError as exc:
                problems.append(f"unprepare of the prepared claims failed: {exc.code().name}")
        _remove(target, written)
    after = target.reserved()
    if after != before:
        problems.append(f"left reserved: checkpoint {sorted(after[0] - before[0])[:5]}, "
                        f"CDI {sorted(after[1] - before[1])[:5]}")
    try:
        if client.prepare([]) != {}:
            problems.append("server not serving: an empty call got claims back")
    except grpc.RpcError as exc:
        problems.append(f"server not serving: {exc.code().name}")
    return problems


def _check_keys(inp: Input, answers: dict[str, Any]) -> list[str]:
    sent = {r[2] for r in inp.claims}
    if set(answers) != sent:
        missing, extra = sent - set(answers), set(answers) - sent
        return [f"answer has {len(answers)} claims for {len(sent)} sent (missing {len(missing)}, extra {len(extra)})"]
    return []


# -- command line (hack/soak.sh) ---------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m adversarial.hostile", description=__doc__.split("\n\n")[0])
    ap.add_argument("--registry-dir", required=True, type=Path, help="the plugin's --kubelet-registry-dir")
    ap.add_argument("--store", required=True, type=Path, help="the plugin's --store")
    ap.add_argument("--state-dir", required=True, type=Path, help="the plugin's --state-dir")
    ap.add_argument("--cdi-root", required=True, type=Path, help="the plugin's --cdi-root")
    ap.add_argument("--driver-name", default="fake-dra.example.com")
    ap.add_argument("--node-name", default="n1")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the catalogue (each adds fuzz inputs)")
    ap.add_argument("--fuzz", type=int, default=50, help="random inputs per round")
    ap.add_argument("--seed", type=int, default=None, help="fuzz seed (default: time); printed for replay")
    ap.add_argument("--only", default="", help="run only the catalogue inputs whose name starts with this")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    target = Target(args.registry_dir, args.store, args.state_dir, args.cdi_root, args.driver_name, args.node_name)
    dev = target.devices()
    total = Report()
    start = time.monotonic()
    for round_no in range(args.rounds):
        fixed = [i for i in catalogue(dev) if i.name.startswith(args.only)]
        rep = run(target, fixed + fuzz(dev, seed + round_no, args.fuzz))
        for name in ("tried", "claims", "errors", "prepared"):
            setattr(total, name, getattr(total, name) + getattr(rep, name))
        total.violations += rep.violations
        if any("server not serving" in v for v in rep.violations):
            break
    summary = {"inputs": total.tried, "claims": total.claims, "errors": total.errors, "prepared": total.prepared,
               "violations": total.violations[:50], "violation_count": len(total.violations), "seed": seed,
               "seconds": round(time.monotonic() - start, 1)}
    print(json.dumps(summary) if args.json else f"{total.line()} (seed {seed}, {summary['seconds']} s)")
    for v in total.violations[:50]:
        print(f"  violation: {v}", file=sys.stderr)
    return 1 if total.violations else 0


if __name__ == "__main__":
    sys.exit(main())
