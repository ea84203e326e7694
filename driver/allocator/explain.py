"""Say in words why a pod's claims cannot be allocated: which claim and request, and what blocks it.

kube-scheduler only reports "cannot allocate all claims"; users need the blocker. The search has
no memory of why it failed, so this module replays it in small steps (off the hot path, only after
a failure):

1. Each claim alone against what is already allocated: every candidate device of each request is
   tried and its first blocker tallied — not matching the selectors, in use, counters exhausted on
   counter set X (with amounts), groups incompatible on counter set X, capacity or requestPolicy
   (what was asked and what is allowed), taints (naming the DeviceTaintRule that set one), constraints.
2. When every claim fits alone, the first claim (and request) that cannot join the ones before it:
   the search's first solution for everything before it is placed, and that request's candidates
   are diagnosed against it — which is how "fits alone, not together" names the counter set, group
   clash or constraint the later claim could not get past.

A constraint failure whose candidates were really turned away by a compatibility-group clash (the
devices that would satisfy the constraint are exactly the ones the groups forbid) says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from driver.allocator.checks import capacity_shortfall, counter_shortfall
from driver.allocator.inputs import Claim, Request
from driver.allocator.rules import counter_policy_shortfall


def _describe(code: str, count: int, alloc: Any, details: dict[str, str]) -> str:
    kind, _, detail = code.partition(":")
    extra = f" ({details[code]})" if code in details else ""
    if kind == "counters":
        return f"{count} blocked: counters exhausted on counter set {detail}{extra}"
    if kind == "groups":
        states = {k: v for k, v in alloc.state.groups.items() if k[2] == detail}
        held = "; ".join(f"{k[0]}/{k[1]} holds {v.describe()}" for k, v in sorted(states.items()))
        return f"{count} blocked: groups incompatible on counter set {detail}" + (f" ({held})" if held else "")
    if kind == "constraint":
        return f"{count} blocked by {detail}"
    if kind == "taint":
        return f"{count} tainted without a matching toleration{extra}"
    if code == "counter request policy":
        return f"{count} rejected: the requested amount violates the counter requestPolicy{extra}"
    if kind == "capacity":
        return f"{count} without enough capacity for the request{extra}"
    return f"{count} {code}"


def _detail(alloc: Any, code: str, req: Request, dev: Any, pool: Any) -> str | None:
    """Amounts behind a counters / capacity / requestPolicy blocker, for the first device it hit."""
    st = alloc.state
    if code == "capacity":
        text = capacity_shortfall(dev, req, st.capacity_used.get(dev.key, {}), st.allocating_capacity.get(dev.key, {}),
                                  alloc.caps(dev), alloc.features.shared_consumable_capacity,
                                  not alloc.features.fractional_capacity_range)
    elif code == "counter request policy":
        text = counter_policy_shortfall(dev, req.capacity or {}, pool.counter_sets)
    elif code.startswith("counters:"):
        text = counter_shortfall(alloc, dev, pool, code.partition(":")[2], req)
    elif code == "taint":
        text = taint_text(alloc.blocking_taint(dev, req))
    else:
        return None
    return f"{dev.name}: {text}" if text else None


def taint_text(hit: Any) -> str | None:
    """`taint gpu.example.com/unhealthy=ecc:NoExecute (DeviceTaintRule gpu-0-ecc)` for a blocking taint."""
    if hit is None:
        return None
    taint, rule = hit
    value = taint.get("value")
    text = f"taint {taint.get('key')}{'=' + str(value) if value else ''}:{taint.get('effect')}"
    return f"{text} (DeviceTaintRule {rule})" if rule else f"{text} (listed by its ResourceSlice)"


def _group_clash_behind_constraint(search: Any, ci: int, req: Request, grouped: list) -> str | None:
    """When candidates failed a constraint, would the ones the groups turned away have met it?"""
    states = search.constraints[ci]
    for dev, code in grouped:
        added = []
        ok = True
        for state in states:
            if state.add(req, dev):
                added.append(state)
            else:
                ok = False
                break
        for state in reversed(added):
            state.remove(req, dev)
        if ok:
            names = "; ".join(s.constraint.describe() for s in states if s.constraint.applies(req))
            return (f"{names} can only be met by devices whose compatibility groups clash on counter set "
                    f"{code.partition(':')[2]} with devices already placed")
    return None


def _request_report(alloc: Any, claim: Claim, req: Request, search: Any, ci: int) -> tuple[int, int, str]:
    """(usable, matching candidates, sentence) for one request or subrequest, against the search's placements."""
    matching = 0
    usable = 0
    blockers: Counter[str] = Counter()
    details: dict[str, str] = {}
    grouped: list = []
    for pool in alloc.pools:
        if pool.incomplete or pool.invalid:
            continue
        for dev in pool.devices:
            if not alloc.selectable(claim, req, dev):
                continue
            matching += 1
            if search._in_use_skip(ci, req, dev):
                blockers.update(["in use"])
                continue
            reasons: dict[str, int] = {}
            undo = search._allocate_device(ci, req, dev, pool, must=False, reasons=reasons)
            if undo is not None:
                undo()
                usable += 1
                continue
            blockers.update(reasons)
            for code in reasons:
                if code not in details:
                    text = _detail(alloc, code, req, dev, pool)
                    if text:
                        details[code] = text
                if code.startswith("groups:"):
                    grouped.append((dev, code))
    need = req.count if req.mode == "ExactCount" else max(matching, 1)
    skipped = [p.label + (f" (invalid: {p.invalid})" if p.invalid else f" (incomplete: {p.note})" if p.note else " (incomplete)")
               for p in alloc.pools if p.incomplete or p.invalid]
    pools_note = f"; skipped pools: {', '.join(skipped)}" if skipped else ""
    if matching == 0:
        return 0, 0, f"request {req.name}: no device matches the selectors (class {req.class_name}){pools_note}"
    parts = ", ".join(_describe(code, n, alloc, details) for code, n in blockers.most_common())
    text = (
        f"request {req.name}: needs {need if req.mode == 'ExactCount' else 'all'} device(s), "
        f"{matching} match the selectors, {usable} usable" + (f" ({parts})" if parts else "") + pools_note
    )
    if usable == 0 and grouped and any(code.startswith("constraint:") for code in blockers):
        clash = _group_clash_behind_constraint(search, ci, req, grouped)
        if clash:
            text += f"; {clash}"
    return usable, matching, text


def _prefix(claim: Claim, n: int) -> Claim:
    return replace(claim, requests=claim.requests[:n])


def _reports(alloc: Any, claim: Claim, alternatives: tuple[Request, ...], search: Any, ci: int) -> list[str] | None:
    """Reports for a request's alternatives, or None when one of them alone has enough candidates."""
    reports = [_request_report(alloc, claim, req, search, ci) for req in alternatives]
    # ExactCount needs `count` usable devices; All needs every matching one (and at least one).
    if all(usable < (req.count if req.mode == "ExactCount" else max(matching, 1))
           for (usable, matching, _), req in zip(reports, alternatives)):
        return [text for _, _, text in reports]
    return None


def _alone(alloc: Any, claim: Claim) -> str | None:
    """A request of the claim that cannot be served even alone, against what is already allocated."""
    from driver.allocator.engine import Search  # local: engine imports nothing from here

    lines = []
    for alternatives in claim.requests:
        lines.extend(_reports(alloc, claim, alternatives, Search(alloc, [claim]), 0) or ())
    return f"claim {claim.label}: cannot be allocated: " + "; ".join(lines) if lines else None


def _placed_text(search: Any, claims: Sequence[Claim], last: int) -> str:
    """"with X for claim a; Y for this claim already placed, " (empty when nothing is placed)."""
    parts = []
    for ci in range(last + 1):
        names = ", ".join(p.device.name for p in search.results[ci])
        if names:
            parts.append(f"{names} for {'this claim' if ci == last else 'claim ' + claims[ci].label}")
    if not parts:
        return ""
    if last == 0:
        return f"with {parts[0].removesuffix(' for this claim')} already placed for this claim, "
    return f"with {'; '.join(parts)} already placed, "


def _combination(alloc: Any, claims: Sequence[Claim]) -> str | None:
    """The first claim/request that cannot join everything before it, diagnosed against the
    search's first solution for what precedes it (partially placed requests included)."""
    from driver.allocator.engine import Search

    for k, claim in enumerate(claims):
        for j in range(len(claim.requests)):
            if Search(alloc, list(claims[:k]) + [_prefix(claim, j + 1)]).run_and_rollback():
                continue
            alternatives = claim.requests[j]
            single = len(alternatives) == 1 and alternatives[0].mode == "ExactCount"
            for placed in (range(alternatives[0].count - 1, -1, -1) if single else [0]):
                requests = claim.requests[:j] + (((replace(alternatives[0], count=placed),),) if placed else ())
                earlier = Search(alloc, list(claims[:k]) + [replace(claim, requests=requests)])
                if not earlier.run():
                    continue
                try:
                    where = _placed_text(earlier, claims, k)
                    found = _reports(alloc, _prefix(claim, j + 1), alternatives, earlier, k)
                finally:
                    earlier.rollback()
                if not found:
                    return None
                together = f" together with {', '.join(c.label for c in claims[:k])}" if k else ""
                return f"claim {claim.label}: cannot be allocated{together}: {where}" + "; ".join(found)
            return None
    return None


def explain_failure(alloc: Any, claims: Sequence[Claim], invalid_pools: Sequence[Any]) -> str:
    # Upstream turns "no solution" into an error when invalid pools were seen; say so too.
    note = ""
    if invalid_pools:
        note = "; invalid resource pools were encountered: " + ", ".join(f"{p.label} ({p.invalid})" for p in invalid_pools)
    for claim in claims:
        reason = _alone(alloc, claim)
        if reason is not None:
            return reason + note
    reason = _combination(alloc, claims)
    if reason is not None:
        return reason + note
    claim = claims[0]
    if len(claims) == 1:
        if claim.constraints:
            cons = "; ".join(c.describe() for c in claim.constraints)
            text = f"claim {claim.label}: cannot be allocated: no combination of usable devices satisfies {cons}"
        else:
            text = (
                f"claim {claim.label}: cannot be allocated: each request has usable devices, but not enough of "
                "them at once (they compete for the same devices, counters or compatibility groups)"
            )
    else:
        text = "claims " + ", ".join(c.label for c in claims) + ": cannot all be allocated together"
    return text + note
