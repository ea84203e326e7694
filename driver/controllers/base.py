"""What a controller is here, and the one way controllers write.

A controller, as kube-controller-manager's are built (client-go informers feeding a work queue of
keys; k8s.io/client-go/util/workqueue), has three parts the runner (driver.controllers.runner)
calls:
- `resync(store)`: every key it must look at once at start (an informer's initial list);
- `keys_for(store, change)`: the keys a change of a watched resource makes dirty (its event
  handlers: a pod's change dirties the pod and its owner, a deletion the dependents);
- `reconcile(store, key)`: level-triggered: read what is stored now, write what differs, and say
  when to look again (`Result.requeue_after`, for kwok's stage delays and the Job's backoff).

Controllers read and write only through the store's API (never another controller's internals),
through `Writes`: every update carries the resourceVersion it read (optimistic concurrency: a
ConflictError makes the runner requeue the key, as client-go's controllers do on 409), every
delete goes through kube-apiserver's rules (driver.store.deletion), and every write is counted,
so the runner knows when a pass changed nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from driver.controllers.objects import Key, meta
from driver.errors import FakeDraError
from driver.store import deletion
from driver.store.events import NORMAL, ObjectRef, record_event
from driver.store.objectstore import ObjectStore
from driver.store.watch import Change

log = logging.getLogger("fake-dra.cluster")


@dataclass
class Result:
    writes: int = 0
    requeue_after: float | None = None  # seconds; None: only when something it watches changes


class Controller(Protocol):
    name: str  # the event source component, as kube-controller-manager names it
    watches: tuple[str, ...]

    def resync(self, store: ObjectStore) -> Iterable[Key]: ...

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]: ...

    def reconcile(self, store: ObjectStore, key: Key) -> Result: ...


class Writes:
    """A controller's writes in one reconcile: counted, concurrency-checked, with events."""

    def __init__(self, store: ObjectStore, component: str) -> None:
        self.store = store
        self.component = component
        self.count = 0

    def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.count += 1
        return self.store.create(resource, obj)

    def update(self, resource: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Replace `obj` (its resourceVersion is the precondition); None when the update removed
        the last finalizer of an object being deleted, which deletes it."""
        if not meta(obj).get("resourceVersion"):
            raise ValueError("controller update without a resourceVersion")  # a bug: every write is checked
        self.count += 1
        return deletion.update(self.store, resource, obj)

    def delete(self, resource: str, obj: Mapping[str, Any], *, propagation: str | None = None,
               grace_period_s: int | None = None) -> deletion.Outcome:
        """Delete `obj` if it is still the object read (uid and resourceVersion preconditions)."""
        m = meta(obj)
        self.count += 1
        return deletion.delete(self.store, resource, m.get("namespace") or None, str(m.get("name")),
                               propagation=propagation, grace_period_s=grace_period_s,
                               resource_version=str(m.get("resourceVersion") or "") or None, uid=m.get("uid"))

    def remove_finalizer(self, resource: str, obj: Mapping[str, Any], finalizer: str) -> dict[str, Any] | None:
        self.count += 1
        return deletion.remove_finalizer(self.store, resource, obj, finalizer)

    def event(self, obj: Mapping[str, Any], reason: str, message: str, type: str = NORMAL) -> None:
        """An Event on `obj` as the upstream controller records it (`kubectl describe` shows it).
        Not counted as a change: it reports one."""
        try:
            record_event(self.store, ObjectRef.of(obj), reason=reason, message=message, type=type,
                         component=self.component)
        except FakeDraError as exc:  # an event is best effort, as client-go's recorder makes it
            log.debug("event not recorded: %s", exc)
