"""A terminal picture of who holds what on each GPU and NIC, from slices and allocated claims.

The demo prints it before and after the scenarios, and `fake-dra show --store` for any node of the
local object store, so a user can see the rules at work: the memory slices of a MIG-capable GPU
and which claim holds each, vGPUs and time-shares per GPU, the counters left on each GPU, and how
much of each NIC's link bandwidth the allocated VFs consume. It reads only API objects (through
driver.allocator.usage, the allocator's own accounting), so it draws the local object store and a
real cluster alike. Devices of other drivers (no fake-dra `type` attribute) are listed with
their holders and counter sets rather than drawn.
"""

from __future__ import annotations

import string
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from driver.allocator.usage import CounterUse, Hold, PoolUsage, Usage, usage_of
from driver.model.quantity import format_quantity
from driver.tables import terminal_width

MEMORY_SLICE = "memory-slice-"  # the per-slice MIG counters (driver.slices.gpucounters)
_OWN_TYPES = ("gpu", "mig", "vgpu", "timeshare", "vf", "nic")


def _attr(dev: Mapping[str, Any], name: str) -> Any:
    value = (dev.get("attributes") or {}).get(name) or {}
    return next(iter(value.values()), None) if isinstance(value, Mapping) and value else None


def _q(amount: Fraction | int, like: str) -> str:
    return format_quantity(amount, like=like or None)


def counter_summary(counters: Mapping[str, CounterUse]) -> str:
    """`memory slices 7/8, memory 35Gi/40Gi, multiprocessors 94/108, ...`: left/total per counter,
    the per-slice MIG counters folded into one count of free memory slices."""
    slices = [use for name, use in counters.items() if name.startswith(MEMORY_SLICE)]
    parts = []
    if slices:
        parts.append(f"memory slices {sum(1 for u in slices if u.left >= u.total)}/{len(slices)}")
    for name, use in counters.items():
        if not name.startswith(MEMORY_SLICE):
            parts.append(f"{name} {_q(use.left, use.text)}/{_q(use.total, use.text)}")
    return ", ".join(parts)


class _Letters:
    """One letter per claim, in the order claims are first drawn, with the legend."""

    def __init__(self) -> None:
        self._free = iter(string.ascii_uppercase + string.ascii_lowercase)
        self.of: dict[str, str] = {}

    def __call__(self, hold: Hold) -> str:
        if hold.claim not in self.of:
            self.of[hold.claim] = next(self._free, "?")
        return self.of[hold.claim]

    def legend(self) -> str:
        return "claims: " + "; ".join(f"{letter} = {claim}" for claim, letter in self.of.items()) if self.of else ""


def _gpu_lines(pool: PoolUsage, gpu: Mapping[str, Any], mark: _Letters) -> list[str]:
    devices, holds = pool.devices, pool.holds
    uuid = _attr(gpu, "uuid")
    children = [d for d in devices.values() if _attr(d, "parentUUID") == uuid and uuid is not None]
    lines = [f"{gpu['name']}  {_attr(gpu, 'productName')}  {uuid}"]
    for h in holds.get(gpu["name"], []):
        lines.append(f"  whole GPU      [{mark(h)}] held by {h.claim}")
    migs = [d for d in children if _attr(d, "type") == "mig"]
    if migs:
        width = max(int(_attr(d, "memorySliceStart") or 0) + int(_attr(d, "memorySlices") or 1) for d in migs)
        cells = ["."] * width
        used = []
        for d in sorted(migs, key=lambda d: int(_attr(d, "memorySliceStart") or 0)):
            for h in holds.get(d["name"], []):
                start = int(_attr(d, "memorySliceStart") or 0)
                for k in range(start, start + int(_attr(d, "memorySlices") or 1)):
                    cells[k] = mark(h)
                used.append(f"{_attr(d, 'profile')}@{start}")
        lines.append(f"  MIG slices     [{' '.join(cells)}]  {', '.join(used) or 'free'}")
    for kind in ("vgpu", "timeshare"):
        group = [d for d in children if _attr(d, "type") == kind]
        if not group:
            continue
        taken = [(d, h) for d in group for h in holds.get(d["name"], [])]
        label = "vGPU" if kind == "vgpu" else "time-shared"
        detail = ", ".join(f"{mark(h)}:{_attr(d, 'profile') or _attr(d, 'sharing') or d['name']}" for d, h in taken)
        lines.append(f"  {label:<14} {len(taken)} in use{' (' + detail + ')' if detail else ''}"
                     f" of {len(group)} published")
    counters = pool.counters()
    for cs in pool.counter_sets_of(gpu["name"]):
        if cs in counters:
            lines.append(f"  counters left  {counter_summary(counters[cs])}")
    return lines


def _nic_lines(pool: PoolUsage, mark: _Letters) -> list[str]:
    nics: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for dev in pool.devices.values():
        if _attr(dev, "type") == "vf":
            nics[str(_attr(dev, "pfInterface") or _attr(dev, "parentUUID"))].append(dev)
    counters = pool.counters()
    lines = []
    for pf, group in sorted(nics.items()):
        sets = pool.counter_sets_of(group[0]["name"])
        cs = sets[0] if sets else None
        taken = [(d, h) for d in group for h in pool.holds.get(d["name"], [])]
        bw = ""
        use = counters.get(cs or "", {}).get("bandwidth")
        if use is not None:
            bw = f", bandwidth left {_q(use.left, use.text)} of {_q(use.total, use.text)}"
        detail = ", ".join(f"{mark(h)}:{d['name']}" + _vf_bandwidth(pool, d, h, cs) for d, h in taken)
        lines.append(f"NIC {pf}  {len(taken)}/{len(group)} VFs in use{bw}{'  (' + detail + ')' if detail else ''}")
    return lines


def _vf_bandwidth(pool: PoolUsage, dev: Mapping[str, Any], hold: Hold, cs: str | None) -> str:
    """What one VF's allocation takes of its PF's bandwidth: recorded (valueFrom) or its static share."""
    amount = sum((amounts.get("bandwidth", 0) for set_name, amounts in hold.consumed_counters if set_name == cs),
                 Fraction(0))
    info = pool.device_info(dev["name"])
    for cons in info.consumes if info else ():
        if cons.counter_set == cs:
            amount += cons.static.get("bandwidth", 0)
    if not amount or cs is None:
        return ""
    total = pool.counter_sets.get(cs, {}).get("bandwidth")
    return " " + _q(amount, total.text if total else "")


def _other_lines(pool: PoolUsage, mark: _Letters) -> list[str]:
    """Devices without a fake-dra type: who holds them, and every counter set of the pool."""
    lines = []
    for name in sorted(pool.holds):
        if _attr(pool.devices[name], "type") in _OWN_TYPES:
            continue
        holders = ", ".join(f"{mark(h)}:{h.claim}" for h in pool.holds[name])
        lines.append(f"device {name}  held by {holders}")
    drawn = {cs for d in pool.devices.values() if _attr(d, "type") in ("gpu", "vf")
             for cs in pool.counter_sets_of(d["name"])}
    for cs, counters in sorted(pool.counters().items()):
        if cs not in drawn:
            lines.append(f"counter set {cs}: left {counter_summary(counters)}")
    return lines


def render_pool(pool: PoolUsage, mark: _Letters | None = None) -> list[str]:
    """The picture of one pool: GPUs, NICs, other devices; its claims' legend last."""
    own = mark is None
    mark = mark or _Letters()
    lines: list[str] = []
    gpus = [d for d in pool.devices.values() if _attr(d, "type") == "gpu"]
    for gpu in sorted(gpus, key=lambda d: (int(_attr(d, "index") or 0), d["name"])):
        lines += _gpu_lines(pool, gpu, mark)
    lines += _nic_lines(pool, mark)
    lines += _other_lines(pool, mark)
    if own and mark.legend():
        lines.append(mark.legend())
    return lines


def fit(lines: Iterable[str], width: int | None = None) -> str:
    """Long lines continue indented, broken only at spaces (names stay whole and copy-pastable)."""
    width = width or terminal_width()
    out: list[str] = []
    for line in lines:
        out.extend(textwrap.wrap(line, width=width, subsequent_indent="      ", break_long_words=False,
                                 break_on_hyphens=False) if len(line) > width else [line])
    return "\n".join(out)


def render_usage(usage: Usage, pools: Sequence[PoolUsage], width: int | None = None) -> str:
    """Every pool with a heading naming its node, pool and generation (`fake-dra show --store`)."""
    blocks = []
    for pool in pools:
        node = pool.node or "(no single node)"
        head = f"node {node}: pool {pool.label}, generation {pool.generation}, {len(pool.devices)} devices"
        blocks.append(fit([head, *(render_pool(pool) or ["(nothing published)"])], width))
    held = sorted({h.claim for h in usage.unpublished})
    if held:
        blocks.append(fit([f"claims holding devices no pool publishes any more: {', '.join(held)}"], width))
    if usage.problems:
        blocks.append(fit(["records that could not be read:", *(f"  {p}" for p in usage.problems)], width))
    return "\n\n".join(blocks)


def render(slices: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]], driver: str,
           width: int | None = None) -> str:
    """The demo's map: the driver's pools (one node), one legend for all of them."""
    usage = usage_of(slices, claims)
    mark = _Letters()
    lines: list[str] = []
    for _, pool in sorted(usage.pools.items()):
        if pool.driver == driver:
            lines += render_pool(pool, mark)
    if mark.legend():
        lines.append(mark.legend())
    return fit(lines, width)
