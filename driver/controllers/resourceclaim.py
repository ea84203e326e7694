"""The resourceclaim controller (structured parameters, 1.37): claims from templates, reservations, cleanup.

Rules (kubernetes/kubernetes pkg/controller/resourceclaim/controller.go):
- **Claims from templates** (`handleClaim`): a pod's `spec.resourceClaims` entry naming
  `resourceClaimTemplateName` gets a claim created with `generateName` `<pod>-<entry>-` (both
  parts shortened in proportion past 57 characters, so the apiserver's five random characters fit
  in 63), the template's labels, annotations and spec, the annotation
  `resource.kubernetes.io/pod-claim-name: <entry>` and a controller ownerReference to the pod with
  `blockOwnerDeletion`; recorded in the pod's `status.resourceClaimStatuses` (`syncPod`). A claim
  made earlier for the same pod and entry is found again by owner and annotation
  (`findPodResourceClaim`), so nothing is made twice; a recorded claim that was deleted while the
  pod still needs it is made again. Pods being deleted or done get nothing (`podNeedsWork`).
  A missing template is a `FailedResourceClaimCreation` Warning event on the pod.
- **Reservations** (`syncPod`): a bound pod whose claim is allocated but does not list it in
  `status.reservedFor` gets it added (up to 256 entries, `CanBeReserved`).
- **Stale reservations** (`syncClaim`): `reservedFor` entries of pods that are gone, replaced
  (another uid) or done (`isPodDone`: Succeeded, Failed, or deleted before being scheduled) are
  removed; when that leaves none, the claim is deallocated (`status.allocation` cleared) and the
  `resource.kubernetes.io/delete-protection` finalizer kube-scheduler adds when it allocates
  (pkg/scheduler/framework/plugins/dynamicresources, Reserve/PreBind) is removed. A claim being
  deleted with that finalizer and no valid reservation is deallocated and loses it, so it goes.
- **Generated claims of done pods** (`syncClaim`): an unreserved claim whose controller owner is a
  pod that is done or replaced is deleted (the garbage collector deletes those of pods that are gone).

Two choices of the local store, where upstream's assumptions do not hold here:
- a claim allocated without the finalizer (by `fake-dra apply --allocate`, or a stored claim of an
  earlier release) is deallocated the same way when its last reservation goes: upstream skips it
  only because nothing but its own scheduler allocates in 1.37;
- a generated claim whose pod records *another* claim for the same entry in
  `status.resourceClaimStatuses` is a duplicate (two schedulers racing, issue 29): its reservation
  for that pod is not valid, so it is deallocated and deleted rather than held forever.
Deallocation also drops `status.devices` (kube-apiserver refuses device status entries for devices
that are not allocated). Reservations by PodGroups (KEP-5729) are kept as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from driver.controllers.base import Result, Writes
from driver.controllers.objects import Key, controller_ref, is_terminal, key_of, meta, owner_refs
from driver.errors import NotFoundError
from driver.store import deletion
from driver.store.events import WARNING
from driver.store.objectstore import ObjectStore
from driver.store.watch import DELETED, Change

COMPONENT = "resource_claim"  # the event source upstream's controller records with
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
MAX_BASE = 57  # leaves room for '-' and 5 random characters in a 63-character name
MAX_RESERVED_FOR = 256  # ResourceClaimReservedForMaxSize
CLAIMS, PODS, TEMPLATES = "resourceclaims", "pods", "resourceclaimtemplates"


# ---- the rules the scheduler shares (one implementation) -----------------------------------------
def generate_name(pod: str, entry: str) -> str:
    """The generateName of a pod's claim from a template (both parts cut in proportion past 57)."""
    base = f"{pod}-{entry}-"
    if len(base) > MAX_BASE:
        base = pod[:len(pod) * MAX_BASE // len(base)] + "-" + entry[:len(entry) * MAX_BASE // len(base)]
    return base


def claim_from_template(template: Mapping[str, Any], pod: Mapping[str, Any], entry: str) -> dict[str, Any]:
    """The ResourceClaim the controller creates for `entry` of `pod` (named by the store's
    generateName, as the apiserver names it)."""
    pmeta = meta(pod)
    tmeta = ((template.get("spec") or {}).get("metadata") or {})
    metadata: dict[str, Any] = {
        "generateName": generate_name(str(pmeta.get("name")), entry),
        "namespace": pmeta.get("namespace") or "default",
        "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_ANNOTATION: entry},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pmeta.get("name"), "uid": pmeta.get("uid"),
                             "controller": True, "blockOwnerDeletion": True}],
    }
    if tmeta.get("labels"):
        metadata["labels"] = dict(tmeta["labels"])
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata,
            "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {})}


def is_generated_for(claim: Mapping[str, Any], pod_uid: str, entry: str | None = None) -> bool:
    """Made for that pod (controller reference) and, when given, that entry (annotation)."""
    ref = controller_ref(claim)
    if not ref or ref.get("kind") != "Pod" or ref.get("apiVersion") != "v1" or ref.get("uid") != pod_uid:
        return False
    return entry is None or (meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION) == entry


def find_generated(store: ObjectStore, pod: Mapping[str, Any], entry: str) -> dict[str, Any] | None:
    """findPodResourceClaim: the claim made earlier for this pod and entry, through the store's
    owner index (the first by name when several)."""
    uid = str(meta(pod).get("uid"))
    for resource, ns, name in store.dependents(uid):
        if resource != CLAIMS:
            continue
        try:
            claim = store.get(CLAIMS, ns, name)
        except NotFoundError:
            continue
        if is_generated_for(claim, uid, entry):
            return claim
    return None


def recorded_claims(pod: Mapping[str, Any]) -> dict[str, str | None]:
    """pod.status.resourceClaimStatuses as entry -> claim name."""
    out: dict[str, str | None] = {}
    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(s, Mapping) and s.get("name"):
            out[str(s["name"])] = s.get("resourceClaimName")
    return out


def is_pod_done(pod: Mapping[str, Any]) -> bool:
    """isPodDone: terminal, or deleted before it was scheduled."""
    return is_terminal(pod) or bool(meta(pod).get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"))


def reserved_by(claim: Mapping[str, Any], uid: Any) -> bool:
    return any(isinstance(r, Mapping) and r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])


def deallocated(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The claim without its allocation, device status and delete-protection finalizer."""
    status = {k: v for k, v in (claim.get("status") or {}).items() if k not in ("allocation", "devices", "reservedFor")}
    m = dict(meta(claim))
    left = [f for f in deletion.finalizers(claim) if f != DELETE_PROTECTION]
    if left:
        m["finalizers"] = left
    else:
        m.pop("finalizers", None)
    out = {**claim, "metadata": m}
    if status:
        out["status"] = status
    else:
        out.pop("status", None)
    return out


# ---- the controller ------------------------------------------------------------------------------
class ResourceClaimController:
    name = COMPONENT
    watches = (PODS, CLAIMS, TEMPLATES)

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        for pod in store.iter(PODS, all_namespaces=True):
            if (pod.get("spec") or {}).get("resourceClaims"):
                yield key_of(PODS, pod)
        for ns, name in store.keys(CLAIMS, all_namespaces=True):
            yield CLAIMS, ns, name

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        obj = change.object or {}
        if change.resource == PODS:
            if change.type != DELETED:
                if not (obj.get("spec") or {}).get("resourceClaims"):
                    return
                yield change.key
            uid = meta(obj).get("uid")
            if uid and (change.type == DELETED or is_pod_done(obj) or meta(obj).get("deletionTimestamp")):
                for ns, name in store.keys(CLAIMS, change.namespace, index={"reserved": str(uid)}):
                    yield CLAIMS, ns, name
                for resource, ns, name in store.dependents(str(uid)):
                    if resource == CLAIMS:
                        yield CLAIMS, ns, name
        elif change.resource == CLAIMS:
            if change.type != DELETED:
                yield change.key
            for ref in owner_refs(obj):  # a generated claim deleted while its pod still needs it
                if ref.get("kind") == "Pod":
                    yield PODS, change.namespace, str(ref.get("name"))
        elif change.resource == TEMPLATES and change.type != DELETED:
            for ns, name in store.keys(PODS, change.namespace):
                yield PODS, ns, name

    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        try:
            obj = store.get(*key)
        except NotFoundError:
            return Result()
        if key[0] == PODS:
            self._sync_pod(store, w, obj)
        elif key[0] == CLAIMS:
            self._sync_claim(store, w, obj)
        return Result(w.count)

    # ---- pods -----------------------------------------------------------------------------------
    def _sync_pod(self, store: ObjectStore, w: Writes, pod: dict[str, Any]) -> None:
        m = meta(pod)
        entries = [e for e in (pod.get("spec") or {}).get("resourceClaims") or [] if isinstance(e, Mapping)]
        if not entries or m.get("deletionTimestamp") or is_terminal(pod):
            return
        ns, uid = m.get("namespace") or "default", str(m.get("uid"))
        recorded = recorded_claims(pod)
        made: dict[str, str] = {}
        claims: list[dict[str, Any]] = []
        for entry in entries:
            name = str(entry.get("name"))
            if entry.get("resourceClaimName"):
                claim = _get(store, (CLAIMS, ns, str(entry["resourceClaimName"])))
                if claim is not None:
                    claims.append(claim)
                continue
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name:
                continue
            claim = _get(store, (CLAIMS, ns, str(recorded[name]))) if recorded.get(name) else None
            if claim is None or not is_generated_for(claim, uid):
                claim = find_generated(store, pod, name)
                if claim is None:
                    template = _get(store, (TEMPLATES, ns, str(template_name)))
                    if template is None:
                        w.event(pod, "FailedResourceClaimCreation",
                                f'PodResourceClaim {name}: resource claim template "{template_name}": '
                                f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found', WARNING)
                        continue
                    claim = w.create(CLAIMS, claim_from_template(template, pod, name))
                made[name] = str(meta(claim).get("name"))
            claims.append(claim)
        if made:
            statuses = [dict(s) for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
                        if isinstance(s, Mapping) and s.get("name") not in made]
            statuses += [{"name": n, "resourceClaimName": c} for n, c in made.items()]
            pod = w.update(PODS, {**pod, "status": {**(pod.get("status") or {}), "resourceClaimStatuses": statuses}}) or pod
        if not (pod.get("spec") or {}).get("nodeName"):
            return  # the scheduler reserves when it binds
        consumer = {"resource": "pods", "name": m.get("name"), "uid": uid}
        for claim in claims:
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if status.get("allocation") and not reserved_by(claim, uid) and len(reserved) < MAX_RESERVED_FOR \
                    and not meta(claim).get("deletionTimestamp"):
                w.update(CLAIMS, {**claim, "status": {**status, "reservedFor": [*reserved, consumer]}})

    # ---- claims ---------------------------------------------------------------------------------
    def _sync_claim(self, store: ObjectStore, w: Writes, claim: dict[str, Any]) -> None:
        m = meta(claim)
        ns = m.get("namespace") or "default"
        reserved = [r for r in (claim.get("status") or {}).get("reservedFor") or [] if isinstance(r, Mapping)]
        valid = [r for r in reserved if self._still_valid(store, ns, claim, r)]
        terminating = bool(m.get("deletionTimestamp"))
        protected = DELETE_PROTECTION in deletion.finalizers(claim)
        if len(valid) < len(reserved):
            if valid:
                claim = w.update(CLAIMS, {**claim, "status": {**(claim.get("status") or {}), "reservedFor": valid}})
            else:
                claim = w.update(CLAIMS, deallocated(claim))
            if claim is None:
                return
        elif protected and terminating and not valid:
            w.update(CLAIMS, deallocated(claim))
            return
        if valid:
            return
        ref = controller_ref(claim)
        if not ref or ref.get("kind") != "Pod" or ref.get("apiVersion") != "v1" or meta(claim).get("deletionTimestamp"):
            return
        pod = _get(store, (PODS, ns, str(ref.get("name"))))
        if pod is None:
            return  # the garbage collector deletes the claims of pods that are gone
        if meta(pod).get("uid") != ref.get("uid") or is_pod_done(pod) or _is_duplicate(claim, pod):
            try:
                w.delete(CLAIMS, claim)
            except NotFoundError:
                pass

    def _still_valid(self, store: ObjectStore, ns: str, claim: Mapping[str, Any], ref: Mapping[str, Any]) -> bool:
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return True
        pod = _get(store, (PODS, ns, str(ref.get("name"))))
        if pod is None or meta(pod).get("uid") != ref.get("uid") or is_pod_done(pod):
            return False
        return not _is_duplicate(claim, pod)


def _is_duplicate(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """A generated claim of this pod that the pod's status says is not its claim for that entry."""
    entry = (meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    if not entry or not is_generated_for(claim, str(meta(pod).get("uid")), entry):
        return False
    recorded = recorded_claims(pod).get(entry)
    return bool(recorded) and recorded != meta(claim).get("name")


def _get(store: ObjectStore, key: Key) -> dict[str, Any] | None:
    try:
        return store.get(*key)
    except NotFoundError:
        return None
