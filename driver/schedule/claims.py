"""The resourceclaim controller's part in scheduling: which claims a pod uses, made from templates.

As kube-controller-manager's resourceclaim controller (pkg/controller/resourceclaim/controller.go):
a `spec.resourceClaims` entry naming `resourceClaimTemplateName` gets a claim of its own, named from
`<pod>-<claim>-` plus five random characters (both parts shortened in proportion when longer than 57
characters), owned by the pod (controller, blockOwnerDeletion), annotated
`resource.kubernetes.io/pod-claim-name: <claim>`, with the template's labels, annotations and spec,
and recorded in the pod's `status.resourceClaimStatuses`. A claim made earlier for the same pod and
entry is found again, recorded or not (the controller's own check for orphans after a crash), so an
interrupted `schedule` never makes a second claim. An entry naming `resourceClaimName` uses that
claim, which must exist. A claim already allocated pins its pods to the nodes its allocation's
node selector allows (`bound_reason`, `pinned_to`).

PodGroup claims (KEP-5729, gate DRAWorkloadResourceClaims, beta and off by default in 1.37): a pod
whose `spec.schedulingGroup.podGroupName` names a PodGroup (scheduling.k8s.io/v1beta1) and whose claim
entry matches one of the group's `spec.resourceClaims` exactly (same name, same claim or template)
uses the group's claim: for a template, one claim made for the whole group (owned by the PodGroup,
named `<podgroup>-<claim>-` plus five random characters, recorded in the PodGroup's
`status.resourceClaimStatuses`), and the claim is reserved for the PodGroup rather than for each pod
(k8s.io/api scheduling/v1beta1 PodGroupSpec.resourceClaims, PodGroupResourceClaim). So the first pod
of the group allocates it and the others share the allocation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.controllers.resourceclaim import POD_CLAIM_ANNOTATION, claim_from_template
from driver.schedule.nodes import NodeInfo, terms_match
from driver.store.objectstore import generated_name



@dataclass
class PodClaim:
    """One entry of a pod's spec.resourceClaims and the claim behind it."""

    entry: str  # the name in the pod's spec.resourceClaims
    claim: dict[str, Any]
    new: bool = False  # made from a template by this pass: not stored yet
    group: Mapping[str, Any] | None = None  # the PodGroup whose claim this is (reserved for the group)


@dataclass
class Resolution:
    claims: list[PodClaim] = field(default_factory=list)
    problem: str | None = None  # why the pod cannot be scheduled before any node is looked at

    def statuses(self, pod_uid: str) -> list[dict[str, str]]:
        """pod.status.resourceClaimStatuses: the claims made from templates for this pod."""
        return [{"name": c.entry, "resourceClaimName": c.claim["metadata"]["name"]} for c in self.claims
                if (c.claim["metadata"].get("annotations") or {}).get(POD_CLAIM_ANNOTATION) == c.entry
                and _owned_by(c.claim, pod_uid)]


def _owned_by(claim: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid and r.get("kind") == "Pod" for r in (claim.get("metadata") or {}).get("ownerReferences") or [])


class ClaimIndex:
    """The namespace's claims and templates, kept up to date as claims are made and written."""

    def __init__(self, claims: list[dict[str, Any]], templates: list[dict[str, Any]],
                 podgroups: list[dict[str, Any]] = (), group_claims: bool = False) -> None:
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.by_owner: dict[tuple[str, str], dict[str, Any]] = {}  # (pod uid, entry) -> claim
        self.by_group: dict[tuple[str, str], dict[str, Any]] = {}  # (PodGroup uid, entry) -> claim
        # DRAWorkloadResourceClaims: PodGroups by (namespace, name); empty with the gate off.
        self.group_claims = group_claims
        self.podgroups = {((g.get("metadata") or {}).get("namespace") or "default", g["metadata"]["name"]): g
                          for g in podgroups} if group_claims else {}
        for claim in claims:
            self.put(claim)
        self.templates = {((t.get("metadata") or {}).get("namespace") or "default", t["metadata"]["name"]): t
                          for t in templates}

    def put(self, claim: dict[str, Any]) -> None:
        meta = claim.get("metadata") or {}
        self.claims[(meta.get("namespace") or "default", meta["name"])] = claim
        entry = (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
        for ref in meta.get("ownerReferences") or []:
            if entry and ref.get("kind") == "Pod" and ref.get("uid"):
                self.by_owner[(str(ref["uid"]), entry)] = claim
            if entry and ref.get("kind") == "PodGroup" and ref.get("uid"):
                self.by_group[(str(ref["uid"]), entry)] = claim

    def _group_entry(self, pod: Mapping[str, Any], ns: str, entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The pod's PodGroup when `entry` matches one of the group's claims exactly, else None."""
        ref = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        group = self.podgroups.get((ns, str(ref))) if ref else None
        if group is None:
            return None
        keys = ("name", "resourceClaimName", "resourceClaimTemplateName")
        want = {k: entry.get(k) or None for k in keys}
        for theirs in (group.get("spec") or {}).get("resourceClaims") or ():
            if {k: theirs.get(k) or None for k in keys} == want:
                return group
        return None

    def remove(self, claim: Mapping[str, Any]) -> None:
        """Forget a deleted claim."""
        meta = claim.get("metadata") or {}
        self.claims.pop((meta.get("namespace") or "default", meta.get("name")), None)
        entry = (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
        for ref in meta.get("ownerReferences") or []:
            key = (str(ref.get("uid")), entry)
            if entry and self.by_owner.get(key) is claim:
                del self.by_owner[key]
            if entry and self.by_group.get(key) is claim:
                del self.by_group[key]

    def resolve(self, pod: Mapping[str, Any]) -> Resolution:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        ns, name, uid = meta.get("namespace") or "default", str(meta.get("name")), str(meta.get("uid") or "")
        recorded = {s.get("name"): s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or [] if isinstance(s, Mapping)}
        out = Resolution()
        for entry in spec.get("resourceClaims") or []:
            pod_claim = str(entry.get("name"))
            group = self._group_entry(pod, ns, entry)
            if entry.get("resourceClaimName"):
                claim = self.claims.get((ns, str(entry["resourceClaimName"])))
                if claim is None:
                    out.problem = f'resourceclaim "{entry["resourceClaimName"]}" not found'
                    return out
                out.claims.append(PodClaim(pod_claim, claim, group=group))
                continue
            if group is not None:
                gmeta = group.get("metadata") or {}
                made_for = {s.get("name"): s.get("resourceClaimName")
                            for s in (group.get("status") or {}).get("resourceClaimStatuses") or () if isinstance(s, Mapping)}
                made = self.claims.get((ns, str(made_for.get(pod_claim)))) if made_for.get(pod_claim) else None
                made = made or self.by_group.get((str(gmeta.get("uid") or ""), pod_claim))
                if made is not None:
                    out.claims.append(PodClaim(pod_claim, made, group=group))
                    continue
            made = self.claims.get((ns, str(recorded.get(pod_claim)))) if recorded.get(pod_claim) else None
            made = made or self.by_owner.get((uid, pod_claim))
            if made is not None:
                out.claims.append(PodClaim(pod_claim, made))
                continue
            template = self.templates.get((ns, str(entry.get("resourceClaimTemplateName"))))
            if template is None:
                out.problem = f'resource claim template "{entry.get("resourceClaimTemplateName")}" not found'
                return out
            if group is not None:
                gmeta = group.get("metadata") or {}
                claim = self._from_template(template, ns, str(gmeta.get("name")), str(gmeta.get("uid") or ""), pod_claim,
                                            owner=("scheduling.k8s.io/v1beta1", "PodGroup"))
                self.put(claim)  # the group's other pods of this pass find it
                out.claims.append(PodClaim(pod_claim, claim, new=True, group=group))
                continue
            out.claims.append(PodClaim(pod_claim, self._from_template(template, ns, name, uid, pod_claim), new=True))
        for c in out.claims:  # kube-scheduler's PreFilter (dynamicresources): a claim being deleted is not used
            if (c.claim.get("metadata") or {}).get("deletionTimestamp"):
                out.problem = f"resourceclaim {c.claim['metadata'].get('name')} is being deleted"
                return out
        return out

    def _from_template(self, template: Mapping[str, Any], ns: str, owner_name: str, uid: str, entry: str,
                       owner: tuple[str, str] = ("v1", "Pod")) -> dict[str, Any]:
        """The resourceclaim controller's claim (driver.controllers.resourceclaim: one
        implementation of its naming, annotations and owner), named here as the apiserver would
        name it, because this pass refers to it before the store has it."""
        claim = claim_from_template(template, {"metadata": {"name": owner_name, "namespace": ns, "uid": uid}}, entry)
        ref = claim["metadata"]["ownerReferences"][0]
        ref["apiVersion"], ref["kind"] = owner
        while True:
            claim_name = generated_name(claim["metadata"]["generateName"])
            if (ns, claim_name) not in self.claims:
                break
        claim["metadata"]["name"] = claim_name
        return claim


def reserved_by(claim: Mapping[str, Any], uid: str | None) -> bool:
    """Whether a consumer with this UID is in the claim's status.reservedFor."""
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])


def with_consumer(claim: Mapping[str, Any], consumer: Mapping[str, Any]) -> dict[str, Any] | None:
    """The claim with `consumer` appended to status.reservedFor (as kube-scheduler's PreBind writes
    it), or None when that consumer (by UID) is already there."""
    if reserved_by(claim, consumer.get("uid")):
        return None
    status = dict(claim.get("status") or {})
    status["reservedFor"] = [*(status.get("reservedFor") or []), dict(consumer)]
    return {**claim, "status": status}


def without_consumer(claim: Mapping[str, Any], uid: str) -> dict[str, Any]:
    """The claim with the consumer of this UID dropped from status.reservedFor; when none is left,
    deallocated too, as the resourceclaim controller does once a claim has no consumer."""
    status = dict(claim.get("status") or {})
    left = [r for r in status.get("reservedFor") or [] if r.get("uid") != uid]
    if left:
        status["reservedFor"] = left
    else:
        status.pop("reservedFor", None)
        status.pop("allocation", None)
    return {**claim, "status": status}


def pinned_to(bound: list[PodClaim]) -> set[str] | None:
    """The node names the allocated claims' node selectors allow, when each is exactly one term
    `metadata.name In [...]` (what the allocator writes for node-local devices); None otherwise."""
    allowed: set[str] | None = None
    for c in bound:
        selector = (((c.claim.get("status") or {}).get("allocation") or {}).get("nodeSelector") or {})
        terms = selector.get("nodeSelectorTerms") or []
        if not terms:
            continue
        if len(terms) != 1 or not isinstance(terms[0], Mapping) or terms[0].get("matchExpressions"):
            return None
        fields = terms[0].get("matchFields") or []
        if len(fields) != 1 or not isinstance(fields[0], Mapping):
            return None
        req = fields[0]
        if req.get("key") != "metadata.name" or req.get("operator") != "In" or not isinstance(req.get("values"), list):
            return None
        names = {str(v) for v in req["values"]}
        allowed = names if allowed is None else allowed & names
    return allowed


def bound_reason(bound: list[PodClaim], node: NodeInfo) -> str | None:
    """An allocated claim the pod shares pins it to the nodes its allocation selects."""
    for c in bound:
        selector = (((c.claim.get("status") or {}).get("allocation") or {}).get("nodeSelector") or {})
        terms = selector.get("nodeSelectorTerms") or []
        if terms and not terms_match(terms, node, f"ResourceClaim {c.claim['metadata']['name']}: status.allocation"):
            return f"resourceclaim {c.claim['metadata']['name']} is allocated on other nodes"
    return None


def group_consumer(group: Mapping[str, Any]) -> dict[str, Any]:
    """A PodGroup as a claim consumer (KEP-5729: the claim is reserved for the group, not each pod)."""
    meta = group.get("metadata") or {}
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": meta.get("name"), "uid": meta.get("uid")}
