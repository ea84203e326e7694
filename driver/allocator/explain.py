"""Say in words why a claim cannot be allocated: which request, and what blocks its candidates.

After a failed search every candidate of every request is tried alone against the committed state
(devices already allocated), and the first blocker of each is tallied: not matching the selectors,
in use, counters exhausted on counter set X, groups incompatible on counter set X, capacity, taints.
When each request could be served alone, the failure is about combining them: a claim constraint
or devices competing for the same counters/groups.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from driver.allocator.inputs import Claim, Request


def _describe(code: str, count: int, alloc: Any) -> str:
    kind, _, detail = code.partition(":")
    if kind == "counters":
        return f"{count} blocked: counters exhausted on counter set {detail}"
    if kind == "groups":
        states = {k: v for k, v in alloc.state.groups.items() if k[2] == detail}
        held = "; ".join(f"{k[0]}/{k[1]} holds {v.describe()}" for k, v in sorted(states.items()))
        return f"{count} blocked: groups incompatible on counter set {detail}" + (f" ({held})" if held else "")
    if kind == "constraint":
        return f"{count} blocked by {detail}"
    if kind == "taint":
        return f"{count} tainted without a matching toleration"
    if code == "counter request policy":
        return f"{count} rejected: the requested amount violates the counter requestPolicy (validRange/validValues)"
    if kind == "capacity":
        return f"{count} without enough capacity for the request"
    return f"{count} {code}"


def _request_report(alloc: Any, claim: Claim, req: Request, search: Any) -> tuple[int, str]:
    """(usable candidates, sentence) for one request or subrequest, tried alone."""
    matching = 0
    usable = 0
    blockers: Counter[str] = Counter()
    for pool in alloc.pools:
        if pool.incomplete or pool.invalid:
            continue
        for dev in pool.devices:
            if not alloc.selectable(claim, req, dev):
                continue
            matching += 1
            reasons: dict[str, int] = {}
            if search._in_use_skip(0, req, dev):
                blockers.update(["in use"])
                continue
            undo = search._allocate_device(0, req, dev, pool, must=False, reasons=reasons)
            if undo is not None:
                undo()
                usable += 1
            else:
                blockers.update(reasons)
    need = req.count if req.mode == "ExactCount" else max(matching, 1)
    skipped = [p.label + (" (incomplete)" if p.incomplete else f" (invalid: {p.invalid})") for p in alloc.pools if p.incomplete or p.invalid]
    pools_note = f"; skipped pools: {', '.join(skipped)}" if skipped else ""
    if matching == 0:
        return 0, f"request {req.name}: no device matches the selectors (class {req.class_name}){pools_note}"
    parts = ", ".join(_describe(code, n, alloc) for code, n in blockers.most_common())
    text = (
        f"request {req.name}: needs {need if req.mode == 'ExactCount' else 'all'} device(s), "
        f"{matching} match the selectors, {usable} usable" + (f" ({parts})" if parts else "") + pools_note
    )
    return usable, text


def _prefix(claim: Claim, n: int) -> Claim:
    return replace(claim, requests=claim.requests[:n])


def _reports(alloc: Any, claim: Claim, alternatives: tuple[Request, ...], search: Any) -> list[str] | None:
    reports = [_request_report(alloc, claim, req, search) for req in alternatives]
    if all(usable < (req.count if req.mode == "ExactCount" else 1) for (usable, _), req in zip(reports, alternatives)):
        return [text for _, text in reports]
    return None


def explain_claim(alloc: Any, claim: Claim) -> str | None:
    """A reason naming the request that cannot be served and its blockers, or None if none found."""
    from driver.allocator.engine import Search  # local: engine imports nothing from here

    lines = []
    for alternatives in claim.requests:
        lines.extend(_reports(alloc, claim, alternatives, Search(alloc, [claim])) or ())
    if lines:
        return f"claim {claim.label}: cannot be allocated: " + "; ".join(lines)
    # Every request can be served alone: find the first request that cannot join the earlier ones
    # (or whose own devices do not fit together) and diagnose its next device against the search's
    # first solution for everything before it.
    for k in range(len(claim.requests)):
        if Search(alloc, [_prefix(claim, k + 1)]).run_and_rollback():
            continue
        alternatives = claim.requests[k]
        partial_counts = range(alternatives[0].count - 1, -1, -1) if len(alternatives) == 1 and alternatives[0].mode == "ExactCount" else [0]
        for placed in partial_counts:
            requests = claim.requests[:k] + (((replace(alternatives[0], count=placed),),) if placed else ())
            earlier = Search(alloc, [replace(claim, requests=requests)])
            if not earlier.run():
                continue
            try:
                chosen = ", ".join(p.device.name for p in earlier.results[0])
                found = _reports(alloc, _prefix(claim, k + 1), alternatives, earlier)
            finally:
                earlier.rollback()
            if found:
                where = f"with {chosen} already placed for this claim, " if chosen else ""
                return f"claim {claim.label}: cannot be allocated: {where}" + "; ".join(found)
            break
        break
    return None


def explain_failure(alloc: Any, claims: Sequence[Claim], invalid_pools: Sequence[Any]) -> str:
    for claim in claims:
        reason = explain_claim(alloc, claim)
        if reason is not None:
            return reason
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
    if invalid_pools:
        text += "; invalid resource pools were encountered: " + ", ".join(f"{p.label} ({p.invalid})" for p in invalid_pools)
    return text
