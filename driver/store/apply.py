"""`kubectl apply` semantics on the local object store: validate a batch, then write all or nothing.

What the API server does, and so what happens here:
- every document is checked before anything is written (kind, apiVersion, strictly against the
  1.37 schema (driver.schema: unknown fields are errors, as with kubectl's default strict field
  validation), names, namespace, the spec as the allocator reads it), and every error names the
  document, the object and the field;
  one invalid document leaves the store untouched;
- the server owns `metadata.uid`, `creationTimestamp`, `generation` and `resourceVersion`: a uid or
  resourceVersion given in a document is a precondition on update (conflict when stale) and
  refused on create ("resourceVersion should not be set on objects to be created"); a given
  creationTimestamp is ignored;
- the spec of a ResourceClaim or ResourceClaimTemplate is immutable; `status.allocation`, once set,
  may be cleared but not changed to another allocation;
- a document without `status` keeps the stored status (kubectl apply never touches status).

Unlike kube-apiserver, a document may carry a claim `status`: the local store is also the
scheduler's stand-in, so writing an allocation by hand is how a claim gets one without
`fake-dra apply --allocate`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver import schema
from driver.errors import ConflictError, FakeDraError, InputError, NotFoundError
from driver.features import Features
from driver.slices.names import is_dns_label, is_dns_subdomain
from driver.store import validate
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


def _check_metadata(obj: Mapping[str, Any], kind: Kind, where: str, namespace: str, explicit_ns: bool) -> tuple[str | None, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise InputError(f"{where}: metadata: required (with a name)")
    name = meta.get("name")
    if not name:
        hint = " (generateName needs `kubectl create`; the local store's apply needs a name)" if meta.get("generateName") else ""
        raise InputError(f"{where}: metadata.name: required{hint}")
    if not isinstance(name, str) or not is_dns_subdomain(name):
        raise InputError(f"{where}: metadata.name: {name!r} must be a DNS subdomain (lower-case letters, "
                         "digits, '-' and '.', at most 253 characters)")
    if not kind.namespaced:
        return None, name
    ns = meta.get("namespace")
    if ns is not None and explicit_ns and ns != namespace:
        raise InputError(f"{where}: the namespace from the provided object {ns!r} does not match the namespace "
                         f"{namespace!r}. You must pass '--namespace={ns}' to perform this operation.")
    ns = ns if ns is not None else namespace
    if not isinstance(ns, str) or not is_dns_label(ns):
        raise InputError(f"{where}: metadata.namespace: {ns!r} must be a DNS label")
    return ns, name


def _strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    return out


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


def _merge(doc: dict[str, Any], current: dict[str, Any] | None, planned: Planned, where: str) -> dict[str, Any]:
    new = _strip_server_fields(doc)
    meta = new["metadata"]
    if planned.kind.namespaced:
        meta["namespace"] = planned.namespace
    else:
        meta.pop("namespace", None)
    if planned.kind.kind == "Namespace":
        _namespace_defaults(new)
    if current is None:
        return new
    _keep_server_metadata(new, current, where)
    if planned.kind.immutable_spec and new.get("spec") != current.get("spec"):
        raise InputError(f"{where}: spec: field is immutable (delete the {planned.kind.kind} and apply it again)")
    if "status" not in doc:
        if "status" in current:
            new["status"] = copy.deepcopy(current["status"])
    else:
        old_alloc = (current.get("status") or {}).get("allocation")
        new_alloc = (new.get("status") or {}).get("allocation")
        if old_alloc and new_alloc and new_alloc != old_alloc:
            raise InputError(f"{where}: status.allocation: field is immutable once set (remove it or delete the claim first)")
    return new


def _keep_server_metadata(new: dict[str, Any], current: Mapping[str, Any], where: str) -> None:
    """What a re-apply must not undo: a deletion under way (deletionTimestamp and its grace
    period are the server's), and the finalizers and owner references controllers set when the
    document says nothing of them (kubectl apply's patch leaves fields it never set alone). While
    the object is being deleted no finalizer may be added (ValidateObjectMetaUpdate)."""
    meta, cur = new["metadata"], current.get("metadata") or {}
    for key in ("finalizers", "ownerReferences"):
        if key not in meta and cur.get(key):
            meta[key] = copy.deepcopy(cur[key])
    if cur.get("deletionTimestamp"):
        meta["deletionTimestamp"] = cur["deletionTimestamp"]
        meta["deletionGracePeriodSeconds"] = cur.get("deletionGracePeriodSeconds")
        added = [f for f in meta.get("finalizers") or [] if f not in (cur.get("finalizers") or [])]
        if added:
            raise InputError(f"{where}: metadata.finalizers: Forbidden: no new finalizers can be added if the object "
                             f"is being deleted, found new finalizers {added}")
    else:
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)


def _namespace_defaults(obj: dict[str, Any]) -> None:
    """What kube-apiserver's namespace strategy sets on every write: the immutable label naming the
    namespace (kubernetes.io/metadata.name), the `kubernetes` finalizer and phase Active."""
    meta = obj["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
    spec = obj.setdefault("spec", {})
    if not spec.get("finalizers"):
        spec["finalizers"] = ["kubernetes"]
    obj.setdefault("status", {}).setdefault("phase", "Active")


def plan(store: ObjectStore, documents: Sequence[tuple[str, int, Any]], *, namespace: str = "default",
         explicit_namespace: bool = False, features: Features = Features(),
         gate_hint: str | None = None) -> list[Planned]:
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
        schema.validate(doc, kind.kind, features, where, gate_hint, old=current)
        planned.obj = _merge(dict(doc), current, planned, where)
        try:
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
                obj = copy.deepcopy(p.obj)
                obj["metadata"]["resourceVersion"] = p.current["metadata"].get("resourceVersion")
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
