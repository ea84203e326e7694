"""Which pods an untolerated NoExecute device taint evicts, and the status a DeviceTaintRule gets.

Pure functions of the cluster's objects, for the local control plane's controller loop (issue 26's
`driver/controllers/` wires them to the store; docs/allocator.md "Device taints and eviction").
They follow kube-controller-manager's device taint eviction controller
(kubernetes/kubernetes pkg/controller/devicetainteviction/device_taint_eviction.go):

- a device's NoExecute taints are those its pool's newest-generation slices list, then those of the
  DeviceTaintRules selecting it (resourceslice/tracker; while DRADeviceTaintRules is on);
- an allocated claim is tainted by a device result whose taint none of the result's own
  `tolerations` (copied from the request when the scheduler allocated it) tolerates; a tolerating
  toleration with `tolerationSeconds` delays eviction to timeAdded + seconds (the smallest such
  delay wins; zero or negative means at once), one without it tolerates forever;
- the claim's eviction time is the earliest over its devices; every pod using the claim (its
  `spec.resourceClaims` by name, or through `status.resourceClaimStatuses` for a template) that is
  not already being deleted is evicted then, with every taint that caused it named as the reason;
- a rule's `EvictionInProgress` condition: NoExecute with pods pending is True /
  PodsPendingEviction ("2 pods need to be evicted in 2 different namespaces."), else False /
  Completed once some pod was evicted or NotStarted; effect None is a dry run (False / NoEffect,
  "3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace
  if the effect was NoExecute. ..."); NoSchedule is False / OtherEffect; "N pods evicted since
  starting the controller." is appended when the caller counted evictions. The messages are the
  controller's (`maybeUpdateRuleStatus`), word for word, since users `kubectl wait` on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from driver.allocator.taintrules import RuleTaint, TaintRules, parse_rule, tolerates
from driver.features import Features

CONDITION = "EvictionInProgress"


@dataclass(frozen=True)
class Eviction:
    """One pod to evict: when (None: the taint has no timeAdded, so at once), and why."""

    pod: str  # namespace/name
    claims: tuple[str, ...]  # the tainted claims (namespace/name) the pod uses
    at: datetime | None
    reasons: tuple[str, ...]  # "DeviceTaintRule r" or "ResourceSlice s driver/pool/device taint #i"
    rules: tuple[str, ...] = field(default=())  # names of the rules among the reasons


def _time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


def _delay(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> timedelta | None:
    """How long the result's tolerations keep the pod after the taint: None forever, else the delay."""
    matching = [t for t in tolerations if tolerates(t, taint)]
    if not matching:
        return timedelta(0)
    seconds = [t.get("tolerationSeconds") for t in matching]
    if any(s is None for s in seconds):
        return None
    return timedelta(seconds=max(0, min(int(s) for s in seconds)))  # type: ignore[arg-type]


def _newest_devices(slices: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], list[tuple[str, int, Mapping[str, Any]]]]:
    """(driver, pool, device) -> [(slice name, taint index, taint)] over each pool's newest generation."""
    newest: dict[tuple[str, str], int] = {}
    specs = []
    for s in slices:
        spec = s.get("spec") or {}
        pid = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
        gen = int((spec.get("pool") or {}).get("generation") or 0)
        newest[pid] = max(newest.get(pid, gen), gen)
        specs.append((str((s.get("metadata") or {}).get("name")), pid, gen, spec))
    out: dict[tuple[str, str, str], list[tuple[str, int, Mapping[str, Any]]]] = {}
    for name, pid, gen, spec in specs:
        if gen != newest[pid]:
            continue
        for dev in spec.get("devices") or ():
            key = (pid[0], pid[1], str(dev.get("name")))
            out.setdefault(key, [])
            out[key].extend((name, i, t) for i, t in enumerate(dev.get("taints") or ()))
    return out


def _rules(rules: Iterable[Mapping[str, Any] | RuleTaint]) -> TaintRules:
    parsed = [r if isinstance(r, RuleTaint) else parse_rule(r) for r in rules]
    return TaintRules(r for r in parsed if r is not None)


def _claim_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _pod_claims(pod: Mapping[str, Any]) -> list[str]:
    """The claims (namespace/name) a pod uses: named directly, or generated from a template and
    recorded in status.resourceClaimStatuses (resourceclaim.Name)."""
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    statuses = {s.get("name"): s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
    out = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = entry.get("resourceClaimName") or statuses.get(entry.get("name"))
        if name:
            out.append(f"{ns}/{name}")
    return out


def tainted_claims(*, slices: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]],
                   rules: Iterable[Mapping[str, Any] | RuleTaint] = (), features: Features = Features(),
                   effect_override: tuple[str, str] | None = None) -> dict[str, tuple[datetime | None, list[str], list[str]]]:
    """claim key -> (eviction time, reasons, rule names) for every allocated claim an untolerated
    NoExecute taint evicts. `effect_override` (rule name, effect) simulates one rule with another
    effect (the controller's dry run of an effect-None rule)."""
    if not features.device_taints:
        return {}
    devices = _newest_devices(slices)
    index = _rules(rules) if features.device_taint_rules else TaintRules()
    out: dict[str, tuple[datetime | None, list[str], list[str]]] = {}
    for claim in claims:
        results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or ()
        when: datetime | None = None
        evict = False
        reasons: list[str] = []
        names: list[str] = []
        for r in results:
            key = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            tolerations = r.get("tolerations") or ()
            found: list[tuple[Mapping[str, Any], str, str | None]] = []
            for slice_name, i, taint in devices.get(key, ()):
                found.append((taint, f"ResourceSlice {slice_name} {'/'.join(key)} taint #{i}", None))
            for rule in index.for_device(*key):
                taint = rule.taint
                if effect_override is not None and rule.rule == effect_override[0]:
                    taint = {**taint, "effect": effect_override[1]}
                found.append((taint, f"DeviceTaintRule {rule.rule}", rule.rule))
            for taint, reason, rule_name in found:
                if taint.get("effect") != "NoExecute":
                    continue
                delay = _delay(taint, tolerations)
                if delay is None:
                    continue
                added = _time(taint.get("timeAdded"))
                at = added + delay if added is not None else None
                when = at if not evict else (None if when is None or at is None else min(when, at))
                evict = True
                if reason not in reasons:
                    reasons.append(reason)
                if rule_name and rule_name not in names:
                    names.append(rule_name)
        if evict:
            out[_claim_key(claim)] = (when, reasons, names)
    return out


def pods_to_evict(*, slices: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]],
                  pods: Iterable[Mapping[str, Any]], rules: Iterable[Mapping[str, Any] | RuleTaint] = (),
                  features: Features = Features(),
                  effect_override: tuple[str, str] | None = None) -> list[Eviction]:
    """Every pod an untolerated NoExecute device taint evicts, in namespace/name order (see module
    docstring). Pods already being deleted are left out; nothing is written."""
    tainted = tainted_claims(slices=slices, claims=claims, rules=rules, features=features,
                             effect_override=effect_override)
    if not tainted:
        return []
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        used = [c for c in _pod_claims(pod) if c in tainted]
        if not used:
            continue
        times = [tainted[c][0] for c in used]
        at = None if any(t is None for t in times) else min(times)  # type: ignore[type-var]
        reasons = tuple(dict.fromkeys(r for c in used for r in tainted[c][1]))
        rules_hit = tuple(dict.fromkeys(r for c in used for r in tainted[c][2]))
        out.append(Eviction(f"{meta.get('namespace') or 'default'}/{meta.get('name')}", tuple(used), at, reasons, rules_hit))
    return sorted(out, key=lambda e: e.pod)


def _plural(n: int, one: str, many: str) -> str:
    return f"1 {one}" if n == 1 else f"{n} {many}"


def rule_condition(rule: Mapping[str, Any], *, slices: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
                   pods: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]] = (), evicted: int = 0,
                   now: str = "", features: Features = Features()) -> dict[str, Any]:
    """The `EvictionInProgress` condition the controller sets on `rule` (`evicted`: pods this
    controller already evicted for it). `rules` are all the cluster's rules (`rule` is added if absent)."""
    name = str((rule.get("metadata") or {}).get("name"))
    parsed = parse_rule(rule)
    effect = str(((rule.get("spec") or {}).get("taint") or {}).get("effect") or "")
    others = [r for r in rules if str((r.get("metadata") or {}).get("name")) != name] + [rule]
    cond: dict[str, Any] = {"type": CONDITION, "status": "False", "reason": "", "message": "",
                            "observedGeneration": int((rule.get("metadata") or {}).get("generation") or 1),
                            "lastTransitionTime": now or "1970-01-01T00:00:00Z"}

    def pending(override: tuple[str, str] | None) -> tuple[int, int]:
        hit = [e for e in pods_to_evict(slices=slices, claims=claims, pods=pods, rules=others, features=features,
                                        effect_override=override) if name in e.rules]
        return len(hit), len({e.pod.split("/", 1)[0] for e in hit})

    if effect == "NoExecute":
        n, ns = pending(None)
        if n:
            cond.update(status="True", reason="PodsPendingEviction",
                        message=f"{_plural(n, 'pod needs', 'pods need')} to be evicted in "
                                + ("1 namespace." if ns == 1 else f"{ns} different namespaces."))
        else:
            cond["reason"] = "Completed" if evicted else "NotStarted"
    elif effect == "None":
        n, ns = pending((name, "NoExecute"))
        published = allocated = 0
        if parsed is not None:
            for key in _newest_devices(slices):
                published += parsed.selects(*key)
            for claim in claims:
                for r in ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or ():
                    allocated += parsed.selects(str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        cond["reason"] = "NoEffect"
        cond["message"] = (f"{_plural(published, 'published device', 'published devices')} selected. "
                           f"{_plural(allocated, 'allocated device', 'allocated devices')} selected. "
                           f"{_plural(n, 'pod would', 'pods would')} be evicted in "
                           + ("1 namespace " if ns == 1 else f"{ns} different namespaces ")
                           + "if the effect was NoExecute. This information will not be updated again. "
                             "Recreate the DeviceTaintRule to trigger an update.")
    else:
        cond.update(reason="OtherEffect", message="Eviction only happens for the NoExecute effect.")
    if evicted:
        cond["message"] = (cond["message"] + " " if cond["message"] else "") + \
            f"{_plural(evicted, 'pod', 'pods')} evicted since starting the controller."
    return cond
