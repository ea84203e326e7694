"""`kubectl apply` semantics on the local object store: validate a batch, then write all or nothing.

What the API server does, and so what happens here:
- every document is checked before anything is written (kind, apiVersion, strictly against the
  1.37 schema (driver.schema: unknown fields are errors, as with kubectl's default strict field
  validation), then admitted as kube-apiserver admits it (driver.store.admission: the kind's
  defaults, the mutating admission plugins and registry strategy, the kind's typed validation
  with kube-apiserver's field paths and messages), then read by the allocator's parsers), and every
  error names the document, the object and the field; one invalid document leaves the store
  untouched;
- the server owns `metadata.uid`, `creationTimestamp`, `generation` and `resourceVersion`: a uid or
  resourceVersion given in a document is a precondition on update (conflict when stale) and
  refused on create ("resourceVersion should not be set on objects to be created"); a given
  creationTimestamp is ignored;
- an update keeps what `kubectl apply`'s merge patch keeps although the document does not say it
  (a pod's binding, a job's generated selector: driver.store.admission.mutate.carry_over), and is
  checked by the kind's ValidateUpdate (immutable fields);
- a document without `status` keeps the stored status (kubectl apply never touches status); pods
  and workloads always keep it (their strategy resets status on create and keeps it on update).
- what kube-apiserver's strategies do per kind of the 1.37 DRA API (driver/store/server_defaults.py):
  fields of gates the simulated apiserver has off are dropped (a claim's `derivedAttributes`
  without DRADerivedAttributes), a DeviceTaintRule's `timeAdded` is set, a ResourcePoolStatusRequest's
  spec is immutable and a completed one immutable whole.

Unlike kube-apiserver, a document may carry a claim `status`: the local store is also the
scheduler's stand-in, so writing an allocation by hand is how a claim gets one without
`fake-dra apply --allocate` (an allocation once set may be cleared but not changed).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver import schema
from driver.errors import ConflictError, FakeDraError, InputError, NotFoundError
from driver.features import Features
from driver.store import admission, server_defaults, validate
from driver.store.admission.field import invalid_each, invalid_message
from driver.store.admission.names import name_is_dns_label, name_is_dns_subdomain, name_is_long_name
from driver.store.kinds import Kind, for_object
from driver.store.objectstore import ObjectStore
from driver.yamlio import load_all

SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields")


@dataclass
class Planned:
    """One document, checked and merged with what is stored, ready to write."""

    index: int  # 1-based document number in the input
    kind: Kind
    namespace: str | None
    name: str
    obj: dict[str, Any]  # what will be stored (server fields filled on write)
    current: dict[str, Any] | None  # the stored object, None when it will be created

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def ref(self) -> str:
        """`resourceclaim.resource.k8s.io/name`, as kubectl names an object in its messages."""
        return f"{self.kind.qualified}/{self.name}"


@dataclass
class Applied:
    planned: Planned
    action: str  # created | configured | unchanged
    obj: dict[str, Any]


def load_documents(text: str, source: str) -> list[tuple[int, Any]]:
    """(document number, object) of a multi-document YAML text; empty documents are skipped."""
    docs = load_all(text, source)
    out = []
    for i, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            # `fake-dra get -o yaml` (and kubectl) print several objects as a List: accept it back.
            out.extend((i, item) for item in doc["items"])
            continue
        out.append((i, doc))
    return out


# The name rule of each kind's Validate function (ValidateObjectMeta's nameFn): checked before the
# store is asked for the object, since the name is also its file name.
_NAME_RULES = {"Namespace": name_is_dns_label, "DeviceClass": name_is_long_name}


def _check_metadata(obj: Mapping[str, Any], kind: Kind, where: str, namespace: str, explicit_ns: bool) -> tuple[str | None, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise InputError(f"{where}: metadata: required (with a name)")
    name = meta.get("name")
    if not name:
        hint = " (generateName needs `kubectl create`; the local store's apply needs a name)" if meta.get("generateName") else ""
        raise InputError(f"{where}: metadata.name: required{hint}")
    if not isinstance(name, str):
        raise InputError(f"{where}: metadata.name: expected a string, got {type(name).__name__}")
    problems = invalid_each("metadata.name", name, _NAME_RULES.get(kind.kind, name_is_dns_subdomain)(name, False))
    if not kind.namespaced:
        _refuse(kind, name, where, problems)
        return None, name
    ns = meta.get("namespace")
    if ns is not None and explicit_ns and ns != namespace:
        raise InputError(f"{where}: the namespace from the provided object {ns!r} does not match the namespace "
                         f"{namespace!r}. You must pass '--namespace={ns}' to perform this operation.")
    ns = ns if ns is not None else namespace
    if not isinstance(ns, str):
        raise InputError(f"{where}: metadata.namespace: expected a string, got {type(ns).__name__}")
    _refuse(kind, name, where, problems + invalid_each("metadata.namespace", ns, name_is_dns_label(ns)))
    return ns, name


def _refuse(kind: Kind, name: str, where: str, problems: list[Any]) -> None:
    if problems:
        raise InputError(f"{where}: {invalid_message(kind.kind, name, problems)}")


def _strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without the server's metadata fields: a new top level and metadata, the rest shared."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    return {**obj, "metadata": meta}


def _check_preconditions(doc: Mapping[str, Any], current: dict[str, Any] | None, planned: Planned, where: str) -> None:
    meta = doc.get("metadata") or {}
    rv, uid = meta.get("resourceVersion"), meta.get("uid")
    if current is None:
        if rv:
            raise InputError(f"{where}: metadata.resourceVersion: should not be set on objects to be created")
        return
    cur = current.get("metadata") or {}
    if uid and uid != cur.get("uid"):
        raise ConflictError(f"{where}: Precondition failed: UID in precondition: {uid}, UID in object meta: "
                            f"{cur.get('uid')}")
    if rv and str(rv) != str(cur.get("resourceVersion")):
        raise ConflictError(f'{where}: Operation cannot be fulfilled on {planned.kind.resource} '
                            f'"{planned.name}": the object has been modified (resourceVersion {rv}, stored '
                            f'{cur.get("resourceVersion")}); please apply your changes to the latest version and try again')


def _merge(doc: dict[str, Any], current: dict[str, Any] | None, planned: Planned, where: str,
           now: Callable[[], str] = lambda: "") -> dict[str, Any]:
    """The object to store: `doc` (the caller's copy, changed in place) without server fields, in
    its namespace, with the stored status when it gives none, and the 1.37 DRA strategies' rules."""
    new = doc
    new["metadata"] = {k: v for k, v in (doc.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    meta = new["metadata"]
    if planned.kind.namespaced:
        meta["namespace"] = planned.namespace
    else:
        meta.pop("namespace", None)
    if planned.kind.kind == "DeviceTaintRule":
        server_defaults.taint_rule_time_added(new, current, now())
    if planned.kind.kind == "ResourcePoolStatusRequest":
        if current is not None and new.get("spec") != current.get("spec"):
            raise InputError(f"{where}: spec: field is immutable (delete the ResourcePoolStatusRequest and apply it again)")
        server_defaults.pool_status_request(new, current, where)
    if current is not None and "status" not in doc and "status" in current:
        new["status"] = copy.deepcopy(current["status"])
    return new


def plan(store: ObjectStore, documents: Sequence[tuple[str, int, Any]], *, namespace: str = "default",
         explicit_namespace: bool = False, features: Features = Features(),
         gate_hint: str | None = None, clock: Callable[[], str] | None = None) -> list[Planned]:
    """Check every (source, document number, object) against the store; call inside `store.locked()`
    and hand the result to `commit` so nothing changes in between.

    `features` are the gates of the simulated kube-apiserver: KEP-5941 fields are unknown fields
    unless it has DRASharedConsumableCapacity on (`gate_hint` then says where to turn it on)."""
    out: list[Planned] = []
    seen: dict[tuple[str, str | None, str], str] = {}
    for source, index, doc in documents:
        where = schema.document_label(source, index, doc)
        if not isinstance(doc, Mapping):
            raise InputError(f"{where}: expected an object with apiVersion, kind and metadata, got {type(doc).__name__}")
        kind = for_object(doc.get("apiVersion"), doc.get("kind"), where)
        ns, name = _check_metadata(doc, kind, where, namespace, explicit_namespace)
        key = (kind.kind, ns, name)
        if key in seen:
            raise InputError(f"{where}: {kind.kind} {ns + '/' if ns else ''}{name} is also {seen[key]}; "
                             "give each object once")
        seen[key] = f"{source}: document {index}"
        try:
            current: dict[str, Any] | None = store.get(kind.plural, ns, name)
        except NotFoundError:
            current = None
        planned = Planned(index, kind, ns, name, {}, current)
        _check_preconditions(doc, current, planned, where)
        decoded = admission.decode(kind.kind, doc, current)
        schema.validate(decoded, kind.kind, features, where, gate_hint, old=current)
        decoded = server_defaults.drop_disabled_fields(decoded, kind.kind, features, current)
        merged = _merge(decoded, current, planned, where, clock or server_defaults.now)  # its errors name `where`
        try:
            planned.obj = admission.admit(kind.kind, merged, current, copy=False)
            validate.check_object(kind.kind, planned.obj)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        out.append(planned)
    return out


def _same(planned: Planned) -> bool:
    if planned.current is None:
        return False
    return _strip_server_fields(planned.current) == _strip_server_fields(planned.obj)


def commit(store: ObjectStore, planned: Sequence[Planned],
           on_write: Callable[[Planned], None] | None = None) -> list[Applied]:
    """Write the planned objects (inside `store.locked()`); on a failed write, restore what was written."""
    done: list[tuple[Planned, dict[str, Any] | None]] = []
    out: list[Applied] = []
    try:
        for p in planned:
            if _same(p):
                out.append(Applied(p, "unchanged", p.current or p.obj))
                continue
            if on_write is not None:
                on_write(p)
            if p.current is None:
                written = store.create(p.kind.plural, p.obj)
                action = "created"
            else:
                # update() sets only metadata fields, so a new top level and metadata suffice.
                obj = {**p.obj, "metadata": {**p.obj["metadata"],
                                             "resourceVersion": p.current["metadata"].get("resourceVersion")}}
                written = store.update(p.kind.plural, obj)
                action = "configured"
            done.append((p, p.current))
            out.append(Applied(p, action, written))
    except (FakeDraError, OSError) as exc:
        _rollback(store, done)
        if isinstance(exc, OSError):
            raise InputError(f"local store {store.root}: cannot write {p.kind.plural}/{p.label}: "
                             f"{exc.strerror or exc}; nothing was applied") from None
        raise
    return out


def _rollback(store: ObjectStore, done: Sequence[tuple[Planned, dict[str, Any] | None]]) -> None:
    """Undo the writes of a batch that failed part-way (newest first)."""
    for p, before in reversed(done):
        try:
            if before is None:
                store.delete(p.kind.plural, p.namespace, p.name)
            else:
                restored = copy.deepcopy(before)
                restored["metadata"].pop("resourceVersion", None)
                store.update(p.kind.plural, restored)
        except (FakeDraError, OSError):
            continue  # best effort: the original error is what the user must see
