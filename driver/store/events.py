"""Events in the local object store: what `kubectl describe` shows under "Events:".

On a cluster, kube-scheduler says why it could not place a pod in a core/v1 Event on the pod
(reason FailedScheduling, source default-scheduler); `kubectl describe` lists the events whose
involvedObject is the object described. The local stand-ins for the scheduler (`apply --allocate`,
`fake-dra schedule`) record their failures the same way, so `fake-dra describe` and
`fake-dra get events` show why a claim or pod is pending.

Events are aggregated as client-go's event recorder does (tools/record, EventCorrelator): an event
with the same source component, involved object (kind, namespace, name, uid), type and reason as
one already stored updates it (count + 1, lastTimestamp, the newest message) instead of adding
another object. The object's name is `<involved name>.<hex digest of that key>`, so the update
finds it with one read, however many events the store holds. Cluster-scoped objects (a Node)
have their events in the `default` namespace, as upstream.

API: `ObjectRef.of(obj)`, `record_event(store, ref, reason=..., message=..., type=..., component=...)
-> dict` (the stored Event), `events_for(store, ref) -> [Event dict]` (oldest last seen first).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import InputError, NotFoundError
from driver.store.indexes import involved_key
from driver.store.objectstore import ObjectStore, now_timestamp

PLURAL = "events"
DEFAULT_NAMESPACE = "default"
NORMAL, WARNING = "Normal", "Warning"
# Reasons the local scheduler stand-ins use (kube-scheduler's is FailedScheduling on the pod).
FAILED_ALLOCATION = "FailedAllocation"
FAILED_SCHEDULING = "FailedScheduling"
SCHEDULED = "Scheduled"  # kube-scheduler's Normal event on a bound pod
SCHEDULER_COMPONENT = "fake-dra-scheduler"  # source.component of the local scheduler stand-ins
_MAX_NAME = 253


@dataclass(frozen=True)
class ObjectRef:
    """An event's involvedObject (core/v1 ObjectReference)."""

    kind: str
    name: str
    namespace: str | None = None
    uid: str | None = None
    api_version: str | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        """The reference to a stored (or about to be stored) object."""
        meta = obj.get("metadata") or {}
        if not obj.get("kind") or not meta.get("name"):
            raise InputError("an event's involved object needs a kind and metadata.name")
        return cls(str(obj["kind"]), str(meta["name"]), meta.get("namespace") or None, meta.get("uid") or None,
                   obj.get("apiVersion") or None)

    @property
    def event_namespace(self) -> str:
        return self.namespace or DEFAULT_NAMESPACE

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind, "name": self.name}
        for key, value in (("namespace", self.namespace), ("uid", self.uid), ("apiVersion", self.api_version)):
            if value:
                out[key] = value
        return out

    def matches(self, involved: Mapping[str, Any]) -> bool:
        """Is an event's involvedObject this object? A uid on both sides must agree (a claim
        deleted and created again under the same name does not inherit the old one's events)."""
        if (involved.get("kind"), involved.get("name"), involved.get("namespace") or None) != (
                self.kind, self.name, self.namespace):
            return False
        return not (self.uid and involved.get("uid") and involved.get("uid") != self.uid)


def event_name(ref: ObjectRef, reason: str, type_: str, component: str) -> str:
    key = "\0".join((component, ref.kind, ref.namespace or "", ref.name, ref.uid or "", type_, reason))
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    # Keep the name a DNS subdomain: the involved name is one; cut it so the digest fits.
    head = ref.name[:_MAX_NAME - len(digest) - 1].rstrip(".-")
    return f"{head}.{digest}"


def record_event(store: ObjectStore, ref: ObjectRef, *, reason: str, message: str, type: str = WARNING,
                 component: str = "fake-dra", now: str | None = None) -> dict[str, Any]:
    """Record that `reason` happened to `ref` (aggregated as the module docstring says); returns
    the stored Event. Holds the store's writer lock for the read-and-write."""
    if type not in (NORMAL, WARNING):
        raise InputError(f"event type {type!r}: must be {NORMAL} or {WARNING}")
    stamp = now or now_timestamp()
    name = event_name(ref, reason, type, component)
    ns = ref.event_namespace
    with store.locked():
        try:
            current = store.get(PLURAL, ns, name)
        except NotFoundError:
            current = None
        if current is not None and ref.matches(current.get("involvedObject") or {}):
            current["count"] = int(current.get("count") or 1) + 1
            current["lastTimestamp"] = stamp
            current["message"] = message
            return store.update(PLURAL, current)  # under the lock: its resourceVersion is current
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": ref.to_json(),
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": component},
            "reportingComponent": component,
        }
        if current is not None:  # a digest collision with another object's event: keep both
            event["metadata"] = {"generateName": f"{name}."[:_MAX_NAME - 5], "namespace": ns}
        return store.create(PLURAL, event)


def events_for(store: ObjectStore, ref: ObjectRef) -> list[dict[str, Any]]:
    """The stored events about `ref`, the least recently seen first (kubectl's order); found through
    the store's index of involved objects, so a store with 50,000 events reads only these."""
    key = involved_key(ref.kind, ref.namespace, ref.name)
    found = [e for e in store.find(PLURAL, "involved", key, namespace=ref.event_namespace)
             if ref.matches(e.get("involvedObject") or {})]
    return sorted(found, key=lambda e: (str(e.get("lastTimestamp") or ""), str(e["metadata"].get("name"))))
