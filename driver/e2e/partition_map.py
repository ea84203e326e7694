"""A terminal picture of who holds what on each GPU and NIC, from slices and allocated claims.

The demo prints it before and after the scenarios so a newcomer can see the rules at work: the
eight MIG memory slices of an A100 and which claim holds each, vGPUs and time-shares per GPU, and
how much of each NIC's link bandwidth the allocated VFs consume. It reads only API objects, so
it draws the state of the local object store and of a real cluster alike.
"""

from __future__ import annotations

import string
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.allocator.rules import parse_consumed_counters
from driver.model.quantity import format_quantity, parse_quantity


@dataclass(frozen=True)
class Holder:
    claim: str  # namespace/name
    device: str
    consumed: Mapping[str, Mapping[str, Fraction]]  # counter set -> recorded consumedCounters


def _attr(dev: Mapping[str, Any], name: str) -> Any:
    value = dev.get("attributes", {}).get(name) or {}
    return next(iter(value.values()), None) if value else None


def _specs(slices: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s.get("spec", s) for s in slices]


def holders(claims: Iterable[Mapping[str, Any]], driver: str) -> list[Holder]:
    """Every allocation result of `driver` in the claims, with its recorded counter consumption."""
    out = []
    for claim in claims:
        meta = claim.get("metadata", {})
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        for r in results:
            if r.get("driver") != driver:
                continue
            label = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
            consumed = dict(parse_consumed_counters(r.get("consumedCounters"), f"claim {label} result {r['device']}"))
            out.append(Holder(label, r["device"], consumed))
    return out


def remaining_counters(slices: Sequence[Mapping[str, Any]], held: Sequence[Holder]) -> dict[str, dict[str, Fraction]]:
    """Counter set -> counter -> amount left: static use once per device, plus recorded valueFrom use."""
    specs = _specs(slices)
    left: dict[str, dict[str, Fraction]] = {}
    for spec in specs:
        for cs in spec.get("sharedCounters") or []:
            left[cs["name"]] = {k: parse_quantity(v["value"]) for k, v in cs["counters"].items()}
    devices = {d["name"]: d for spec in specs for d in spec.get("devices") or []}
    for name in {h.device for h in held}:
        for cc in (devices.get(name) or {}).get("consumesCounters") or []:
            for counter, val in cc["counters"].items():
                if "value" in val and cc["counterSet"] in left:
                    left[cc["counterSet"]][counter] = left[cc["counterSet"]].get(counter, Fraction(0)) - parse_quantity(val["value"])
    for h in held:
        for cs, counters in h.consumed.items():
            for counter, amount in counters.items():
                if cs in left:
                    left[cs][counter] = left[cs].get(counter, Fraction(0)) - amount
    return left


def render(slices: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]], driver: str) -> str:
    specs = _specs(slices)
    devices = {d["name"]: d for spec in specs for d in spec.get("devices") or []}
    held = holders(claims, driver)
    by_device: dict[str, list[Holder]] = defaultdict(list)
    for h in held:
        by_device[h.device].append(h)
    letters = iter(string.ascii_uppercase + string.ascii_lowercase)
    letter_of: dict[str, str] = {}
    legend: list[str] = []

    def mark(h: Holder) -> str:
        if h.claim not in letter_of:
            letter_of[h.claim] = next(letters, "?")
            legend.append(f"{letter_of[h.claim]} = {h.claim}")
        return letter_of[h.claim]

    lines: list[str] = []
    left = remaining_counters(slices, held)
    gpus = [d for d in devices.values() if _attr(d, "type") == "gpu"]
    for gpu in sorted(gpus, key=lambda d: int(_attr(d, "index") or 0)):
        uuid = _attr(gpu, "uuid")
        children = [d for d in devices.values() if _attr(d, "parentUUID") == uuid]
        lines.append(f"{gpu['name']}  {_attr(gpu, 'productName')}  {uuid}")
        if by_device.get(gpu["name"]):
            lines.append(f"  whole GPU      [{mark(by_device[gpu['name']][0])}] held by {by_device[gpu['name']][0].claim}")
        migs = [d for d in children if _attr(d, "type") == "mig"]
        if migs:
            width = max(int(_attr(d, "memorySliceStart") or 0) + int(_attr(d, "memorySlices") or 1) for d in migs)
            cells = ["."] * width
            used = []
            for d in migs:
                for h in by_device.get(d["name"], []):
                    start = int(_attr(d, "memorySliceStart") or 0)
                    for k in range(start, start + int(_attr(d, "memorySlices") or 1)):
                        cells[k] = mark(h)
                    used.append(f"{_attr(d, 'profile')}@{start}")
            lines.append(f"  MIG slices     [{' '.join(cells)}]  {', '.join(used) or 'free'}")
        for kind in ("vgpu", "timeshare"):
            group = [d for d in children if _attr(d, "type") == kind]
            if not group:
                continue
            taken = [(d, h) for d in group for h in by_device.get(d["name"], [])]
            label = "vGPU" if kind == "vgpu" else "time-shared"
            detail = ", ".join(f"{mark(h)}:{_attr(d, 'profile') or _attr(d, 'sharing')}" for d, h in taken)
            lines.append(f"  {label:<14} {len(taken)} in use{' (' + detail + ')' if detail else ''}"
                         f" of {len(group)} published")
        cs = next((cc["counterSet"] for cc in gpu.get("consumesCounters") or []), None)
        if cs and cs in left:
            lines.append(f"  counters left  memory {format_quantity(left[cs].get('memory', Fraction(0)), like='1Gi')}, "
                         f"multiprocessors {format_quantity(left[cs].get('multiprocessors', Fraction(0)))}")
    vfs = [d for d in devices.values() if _attr(d, "type") == "vf"]
    nics: dict[str, list[dict]] = defaultdict(list)
    for vf in vfs:
        nics[str(_attr(vf, "pfInterface") or _attr(vf, "parentUUID"))].append(vf)
    for pf, group in sorted(nics.items()):
        cs = next((cc["counterSet"] for cc in group[0].get("consumesCounters") or []), None)
        taken = [(d, h) for d in group for h in by_device.get(d["name"], [])]
        bw = ""
        if cs and cs in left and "bandwidth" in left[cs]:
            bw = f", bandwidth left {format_quantity(left[cs]['bandwidth'])}"
        detail = ", ".join(
            f"{mark(h)}:{d['name']}" + (f" {format_quantity(sum(h.consumed.get(cs, {}).values(), Fraction(0)))}"
                                        if cs and h.consumed.get(cs) else "")
            for d, h in taken
        )
        lines.append(f"NIC {pf}  {len(taken)}/{len(group)} VFs in use{bw}{'  (' + detail + ')' if detail else ''}")
    if legend:
        lines.append("claims: " + "; ".join(legend))
    # Fit a 100-column terminal: long lines continue indented, broken only at spaces.
    fitted = []
    for line in lines:
        fitted.extend(textwrap.wrap(line, width=100, subsequent_indent="      ", break_long_words=False,
                                    break_on_hyphens=False) if len(line) > 100 else [line])
    return "\n".join(fitted)
