"""The device taint eviction controller: pods whose claims hold a NoExecute-tainted device are evicted.

Rules (kubernetes/kubernetes pkg/controller/devicetainteviction/device_taint_eviction.go; which
pods and when, and the rules' status wording, are driver.allocator.eviction's pure functions):
- a device's NoExecute taints come from its slices and from the DeviceTaintRules selecting it; an
  allocated claim whose device results do not tolerate one is tainted, at the taint's timeAdded
  plus the smallest matching `tolerationSeconds` (at once without timeAdded);
- every pod using a tainted claim is evicted when that time comes: its status gets the
  `DisruptionTarget` condition (reason `DeletionByDeviceTaintManager`, message `Device Taint
  manager: deleting due to NoExecute taint`), a `DeviceTaintManagerEviction` event "Marking for
  deletion", and it is deleted with a uid precondition (gracefully: the pod stages or the node
  complete it), as the controller's `addConditionAndDeletePod` does;
- each DeviceTaintRule's `EvictionInProgress` condition says how many pods are pending eviction,
  or that none are (Completed, NotStarted), a dry run for effect None, and the pods evicted since
  the controller started (`maybeUpdateRuleStatus`).

Only what a taint can reach is read: the slices the store indexes as carrying a NoExecute taint,
the rules, the claims holding devices of the pools those select (the store's allocation index), and
the pods those claims reserve. Without the DRADeviceTaints gate nothing is evicted; without
DRADeviceTaintRules the rules are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from driver.allocator.eviction import CONDITION, Eviction, pods_to_evict, rule_condition
from driver.allocator.taintrules import parse_rule
from driver.controllers.base import Result, Writes
from driver.controllers.objects import Key, meta, with_condition
from driver.errors import InputError, NotFoundError
from driver.features import Features
from driver.store.objectstore import ObjectStore, now_timestamp
from driver.store.watch import Change

COMPONENT = "device-taint-eviction-controller"
RULES, SLICES, CLAIMS, PODS = "devicetaintrules", "resourceslices", "resourceclaims", "pods"
EVICTING = ("", None, "device-taints")  # one key: the whole cluster's taints are judged together
_REACHING = ("NoExecute", "None")  # effects that evict, or say what they would evict


class DeviceTaintEviction:
    name = COMPONENT
    watches = (RULES, SLICES, CLAIMS, PODS)

    def __init__(self, features: Features = Features()) -> None:
        self.features = features
        self.evicted: dict[str, int] = {}  # rule -> pods evicted for it since this controller started

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        return [EVICTING]

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        obj = change.object or {}
        if change.resource == RULES:
            return [EVICTING]
        if change.resource == SLICES:
            devices = (obj.get("spec") or {}).get("devices") or ()
            return [EVICTING] if any(d.get("taints") for d in devices if isinstance(d, Mapping)) else []
        if change.resource == CLAIMS:  # a claim allocated on a tainted device: its pods may go
            return [EVICTING] if ((obj.get("status") or {}).get("allocation")) else []
        return []

    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        if not self.features.device_taints:
            return Result()
        w = Writes(store, COMPONENT)
        rules = store.list(RULES) if self.features.device_taint_rules else []
        tainted = store.list(SLICES, index={"taint": "NoExecute"})
        pools = _pools(store, rules, tainted)
        claims = store.claims_in_pools(pools) if pools else []
        slices = store.list(SLICES, index={"pool": sorted(pools)}) if pools else []
        pods = _reserving_pods(store, claims)
        now = datetime.now(timezone.utc)
        later: list[float] = []
        evicted = False
        for eviction in pods_to_evict(slices=slices, claims=claims, pods=pods, rules=rules, features=self.features):
            if eviction.at is not None and eviction.at > now:
                later.append((eviction.at - now).total_seconds())
                continue
            if self._evict(store, w, eviction):
                evicted = True
                for rule in eviction.rules:
                    self.evicted[rule] = self.evicted.get(rule, 0) + 1
        if evicted:  # being deleted now: no longer pending eviction in the rules' status
            pods = _reserving_pods(store, claims)
        for rule in rules:
            self._rule_status(w, rule, slices, claims, pods, rules)
        return Result(w.count, requeue_after=min(later) if later else None)

    def _evict(self, store: ObjectStore, w: Writes, eviction: Eviction) -> bool:
        ns, name = eviction.pod.split("/", 1)
        try:
            pod = store.get(PODS, ns, name)
        except NotFoundError:
            return False
        if meta(pod).get("deletionTimestamp"):
            return False
        status = dict(pod.get("status") or {})
        status["conditions"] = with_condition(status.get("conditions"), {
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByDeviceTaintManager",
            "message": "Device Taint manager: deleting due to NoExecute taint"}, now_timestamp())
        updated = w.update(PODS, {**pod, "status": status})
        if updated is None:
            return False
        w.event(updated, "DeviceTaintManagerEviction", "Marking for deletion")
        w.delete(PODS, updated)
        return True

    def _rule_status(self, w: Writes, rule: dict[str, Any], slices: list[dict[str, Any]],
                     claims: list[dict[str, Any]], pods: list[dict[str, Any]], rules: list[dict[str, Any]]) -> None:
        name = str(meta(rule).get("name"))
        wanted = rule_condition(rule, slices=slices, claims=claims, pods=pods, rules=rules,
                                evicted=self.evicted.get(name, 0), features=self.features)
        status = dict(rule.get("status") or {})
        current = next((c for c in status.get("conditions") or () if c.get("type") == CONDITION), None)
        compared = ("status", "reason", "message", "observedGeneration")
        if current is not None and all(current.get(k) == wanted.get(k) for k in compared):
            return
        wanted.pop("lastTransitionTime", None)
        status["conditions"] = with_condition(status.get("conditions"), wanted, now_timestamp())
        w.update(RULES, {**rule, "status": status})


def _pools(store: ObjectStore, rules: list[dict[str, Any]], tainted: list[dict[str, Any]]) -> set[str]:
    """`driver/pool` of every pool a NoExecute (or dry-run) taint can reach."""
    pools = {f"{(s.get('spec') or {}).get('driver')}/{((s.get('spec') or {}).get('pool') or {}).get('name')}"
             for s in tainted}
    known: list[str] | None = None
    for rule in rules:
        try:
            parsed = parse_rule(rule)
        except InputError:
            continue  # the store admitted it; a rule it cannot read selects nothing here
        if parsed is None or parsed.effect not in _REACHING:
            continue
        if parsed.driver is not None and parsed.pool is not None:
            pools.add(f"{parsed.driver}/{parsed.pool}")
            continue
        if known is None:
            known = store.index_values(SLICES, "pool")
        pools.update(p for p in known if parsed.driver is None or p.startswith(f"{parsed.driver}/"))
    return pools


def _reserving_pods(store: ObjectStore, claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods the claims are reserved for (the pods using them, once scheduled)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for claim in claims:
        ns = meta(claim).get("namespace") or "default"
        for ref in (claim.get("status") or {}).get("reservedFor") or ():
            if ref.get("resource") != PODS or (ns, str(ref.get("name"))) in out:
                continue
            try:
                out[(ns, str(ref.get("name")))] = store.get(PODS, ns, str(ref.get("name")))
            except NotFoundError:
                continue
    return list(out.values())
