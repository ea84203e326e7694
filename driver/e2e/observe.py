"""What a backend saw after one step, and the comparison of that with the step's expectations.

Backends (local, kind) only report facts in an Observation; judging them against the scenario
lives here, once, so both backends are held to exactly the same checks.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.e2e import devicemeta
from driver.e2e.report import Check
from driver.e2e.scenario import Step
from driver.model.quantity import format_quantity, parse_quantity


# CDI device IDs are <kind>=<claim UID>-<device>; the UID is noise in a report.
_UID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-")


@dataclass
class Observation:
    """Facts after one step. None means "not observed by this step" (an expectation on it fails)."""

    scheduled: bool | None = None
    reason: str = ""  # why the scheduler could not place the pod
    devices: list[dict[str, Any]] = field(default_factory=list)  # allocated: name + attributes
    prepared: bool | None = None
    prepare_error: str = ""
    cdi_devices: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # Device metadata files the container sees: container path -> content (None: not observed).
    metadata: dict[str, str] | None = None
    health: dict[str, str] = field(default_factory=dict)  # device -> HEALTHY|UNHEALTHY|UNKNOWN
    prepare_calls_same: bool | None = None
    released: bool | None = None
    counters: dict[str, dict[str, Fraction]] = field(default_factory=dict)  # counter set -> remaining
    node: str | None = None  # multi-node scenarios: where the pod landed (the scenario's name for it)
    node_slices: int | None = None  # multi-node scenarios: slices left for the step's node
    notes: list[str] = field(default_factory=list)  # extra context for the report
    # kind backend: what the reference allocator predicted (scheduled?, reason); compared with the
    # real scheduler on every pod step, expectation or not.
    predicted: tuple[bool, str] | None = None
    # Expectation keys this backend cannot observe (e.g. repeated prepare calls on kind): reported
    # as such in the table instead of failing or silently passing.
    unobservable: frozenset[str] = frozenset()


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "(not observed)"
    return str(value)


def _words(value: Any) -> list[str]:
    """An expected message fragment, or a list of fragments that must all appear (any case)."""
    items = value if isinstance(value, list) else [value]
    return [str(v).lower() for v in items]


def _parent(dev: Mapping[str, Any]) -> str | None:
    return dev.get("parentUUID") or dev.get("uuid")


def _check_devices(want: Mapping[str, Any], obs: Observation, claim_devices: Mapping[str, list[dict]]) -> tuple[bool, str]:
    devs = obs.devices
    names = ", ".join(d["name"] for d in devs) or "none"
    problems = []
    if "count" in want and len(devs) != int(want["count"]):
        problems.append(f"{len(devs)} devices")
    for attr in ("type", "profile"):
        if attr in want:
            bad = [d["name"] for d in devs if str(d.get(attr)) != str(want[attr])]
            if bad or not devs:
                problems.append(f"{attr} != {want[attr]} on {', '.join(bad) or 'no device'}")
    parents = {_parent(d) for d in devs}
    if want.get("same_parent") and len(parents) != 1:
        problems.append(f"{len(parents)} parent GPUs/PFs")
    if want.get("distinct_parents") and len(parents) != len(devs):
        problems.append("two devices share a parent")
    other = want.get("same_parent_as")
    if other is not None:
        theirs = {_parent(d) for d in claim_devices.get(str(other), [])}
        if not theirs or parents != theirs:
            problems.append(f"parent differs from claim {other}'s")
    return (not problems, names + (f" ({'; '.join(problems)})" if problems else ""))


def _env_matches(pattern: str, want: Any, env: Mapping[str, str]) -> tuple[bool, str]:
    keys = sorted(k for k in env if fnmatch.fnmatchcase(k, pattern))
    if not keys:
        return False, f"{pattern} not set"
    bad = [f"{k}={env[k]}" for k in keys if not fnmatch.fnmatchcase(env[k], str(want))]
    return (not bad, f"{pattern}: " + (", ".join(bad) if bad else ", ".join(f"{k}={env[k]}" for k in keys[:3])))


def check_step(step: Step, obs: Observation, claim_devices: Mapping[str, list[dict]]) -> list[Check]:
    """Compare one step's expectations with what was observed; one Check per expectation."""
    checks: list[Check] = []

    def add(what: str, expected: Any, observed: Any, ok: bool) -> None:
        checks.append(Check(step.label, what, _fmt(expected), _fmt(observed), ok))

    exp = {k: v for k, v in step.expect.items() if k not in obs.unobservable}
    for key in sorted(set(step.expect) & obs.unobservable):
        checks.append(Check(step.label, key, _fmt(step.expect[key]), "not observable on this backend", True))
    if obs.predicted is not None and obs.scheduled is not None:
        guess, why = obs.predicted
        add("allocator prediction", f"{_fmt(guess)}{': ' + why if why else ''}",
            f"scheduler: {_fmt(obs.scheduled)}{': ' + obs.reason if obs.reason else ''}", guess == obs.scheduled)
    if "scheduled" in exp:
        seen = obs.scheduled
        why = obs.reason if obs.reason and not seen and "unschedulable" not in exp else ""
        add("scheduled", exp["scheduled"], f"{_fmt(seen)}{': ' + why if why else ''}",
            seen is not None and seen == bool(exp["scheduled"]))
    if "unschedulable" in exp:
        want = _words(exp["unschedulable"])
        ok = obs.scheduled is False and all(w in obs.reason.lower() for w in want)
        add("unschedulable", f"reason contains {' + '.join(want)}",
            obs.reason or ("scheduled" if obs.scheduled else "(no reason)"), ok)
    if "devices" in exp:
        ok, seen = _check_devices(exp["devices"], obs, claim_devices)
        add("devices", ", ".join(f"{k}={v}" for k, v in exp["devices"].items()), seen, ok)
    if "prepared" in exp:
        seen = obs.prepared
        why = obs.prepare_error if "prepare_error" not in exp else ""
        add("prepared", exp["prepared"], f"{_fmt(seen)}{': ' + why if why else ''}",
            seen is not None and seen == bool(exp["prepared"]))
    if "prepare_error" in exp:
        want = _words(exp["prepare_error"])
        ok = obs.prepared is False and all(w in obs.prepare_error.lower() for w in want)
        add("prepare error", f"contains {' + '.join(want)}", obs.prepare_error or "(no error)", ok)
    if "cdi_devices" in exp:
        shown = ", ".join(_UID_RE.sub("<claim>-", i) for i in obs.cdi_devices)
        add("CDI devices", exp["cdi_devices"], f"{len(obs.cdi_devices)}: {shown}",
            len(obs.cdi_devices) == int(exp["cdi_devices"]))
    for pattern, want in (exp.get("env") or {}).items():
        ok, seen = _env_matches(str(pattern), want, obs.env)
        add("env", f"{pattern}={want}", seen, ok)
    if "metadata" in exp:
        ok, seen = devicemeta.check(exp["metadata"], obs.metadata)
        add("device metadata", ", ".join(f"{k}={v}" for k, v in exp["metadata"].items()) or "well-formed", seen, ok)
    for device, want in (exp.get("health") or {}).items():
        seen = obs.health.get(str(device))
        add("health", f"{device} {want}", f"{device} {seen or 'not reported'}", seen == str(want).upper())
    if "prepare_calls_same" in exp:
        add("re-prepare identical", exp["prepare_calls_same"], obs.prepare_calls_same,
            obs.prepare_calls_same is not None and obs.prepare_calls_same == bool(exp["prepare_calls_same"]))
    if "node" in exp:
        add("node", exp["node"], obs.node, obs.node == str(exp["node"]))
    if "node_slices" in exp:
        add("node's slices", exp["node_slices"], obs.node_slices,
            obs.node_slices is not None and obs.node_slices == int(exp["node_slices"]))
    if "released" in exp:
        add("released", exp["released"], obs.released,
            obs.released is not None and obs.released == bool(exp["released"]))
    for cs_pattern, counters in (exp.get("counters") or {}).items():
        matches = [cs for cs in obs.counters if str(cs_pattern) in cs]
        for counter, want in dict(counters).items():
            wanted = parse_quantity(want)
            seen = [obs.counters[cs].get(str(counter)) for cs in matches]
            ok = len(matches) == 1 and seen[0] is not None and seen[0] == wanted
            shown = ", ".join(f"{cs}: {_fmt_q(obs.counters[cs].get(str(counter)))}" for cs in matches) or "no such counter set"
            add("counter left", f"{cs_pattern}/{counter} = {want}", shown, ok)
    return checks


def _fmt_q(q: Fraction | None) -> str:
    if q is None:
        return "-"
    return format_quantity(q)
