"""`fake-dra describe resourceclaim|node`: what a driver author asks after "why is it pending?" and
"what is in use?", from the local object store and the node's plugin state.

A claim: its requests, its allocation (node, and per result the device, pool, share and what it
consumes: the device's counters, the recorded request-driven counters, consumed capacity),
reservedFor, whether the node's plugin prepared it (its checkpoint entry, CDI spec and device
metadata files, read with driver.state.inspect), status.devices, and its events (the last
allocation failure and why). A node's DRA part (dra_fields; driver.commands._describe_node
puts it after kubectl's part): its pools, the devices in use (which claim holds which, and the
shares of shared devices) and the counters left per counter set. Usage comes from driver.allocator.usage, the allocator's own accounting.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from driver.allocator.inputs import parse_claim
from driver.allocator.usage import Hold, PoolUsage, Usage
from driver.commands import common
from driver.commands._describe_text import NONE, Block, events, header
from driver.commands._objects import claim_state
from driver.e2e.partition_map import MEMORY_SLICE, counter_summary
from driver.errors import InputError
from driver.model.quantity import format_quantity
from driver.state.inspect import PreparedView, inspect_claim
from driver.store.events import ObjectRef, events_for
from driver.store.objectstore import ObjectStore
from driver.tables import kubectl_table


def _amounts(amounts: Mapping[str, Fraction], like: Mapping[str, str]) -> str:
    """`memory 4864Mi, multiprocessors 14, memory slices 4-5`: MIG's per-slice counters folded."""
    slices = sorted(int(n[len(MEMORY_SLICE):]) for n, v in amounts.items()
                    if n.startswith(MEMORY_SLICE) and n[len(MEMORY_SLICE):].isdigit() and v)
    parts = [f"{name} {format_quantity(v, like=like.get(name) or None)}" for name, v in amounts.items()
             if not (name.startswith(MEMORY_SLICE) and name[len(MEMORY_SLICE):].isdigit())]
    if slices:
        contiguous = slices == list(range(slices[0], slices[-1] + 1))
        shown = f"{slices[0]}-{slices[-1]}" if contiguous and len(slices) > 1 else ",".join(map(str, slices))
        parts.append(f"memory slice{'s' if len(slices) > 1 else ''} {shown}")
    return ", ".join(parts)


def consumption(pool: PoolUsage | None, hold: Hold) -> list[str]:
    """What one result takes: `counters <set>: ...` (the device's static values charged for the
    device, plus what the result recorded), and `capacity ...` for a share."""
    out = []
    info = pool.device_info(hold.device[2]) if pool is not None else None
    recorded = {cs: dict(amounts) for cs, amounts in hold.consumed_counters}
    sets = [c.counter_set for c in info.consumes] if info else []
    sets += [cs for cs in recorded if cs not in sets]
    for cs in sets:
        static = next((dict(c.static) for c in info.consumes if c.counter_set == cs), {}) if info else {}
        amounts = {**static}
        for name, value in recorded.get(cs, {}).items():
            amounts[name] = amounts.get(name, 0) + value
        like = {n: c.text for n, c in (pool.counter_sets.get(cs, {}) if pool else {}).items()}
        if amounts:
            out.append(f"counters {cs}: {_amounts(amounts, like)}")
    if hold.consumed_capacity:
        like = {name: cap.text for name, cap in info.capacity.items()} if info else {}
        out.append(f"capacity: {_amounts(dict(hold.consumed_capacity), like)}")
    return out


def _node_of(claim: Mapping[str, Any], usage: Usage, holds: Sequence[Hold]) -> str | None:
    for hold in holds:
        pool = usage.pools.get(hold.device[:2])
        if pool is not None and pool.node:
            return pool.node
    selector = (((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector")) or {}
    for term in selector.get("nodeSelectorTerms") or ():
        for req in term.get("matchFields") or ():
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(req.get("values") or ()) == 1:
                return str(req["values"][0])
    return None


def _capacity_texts(claim: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Request name (`req` or `req/sub`) -> its capacity.requests as written, to show them so."""
    out: dict[str, Mapping[str, Any]] = {}
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        if not isinstance(req, Mapping):
            continue
        for sub in req.get("firstAvailable") or ():
            if isinstance(sub, Mapping):
                out[f"{req.get('name')}/{sub.get('name')}"] = (sub.get("capacity") or {}).get("requests") or {}
        exactly = req.get("exactly") or req
        out[str(req.get("name"))] = (exactly.get("capacity") or {}).get("requests") or {}
    return out


def _requests(out: Block, claim: Mapping[str, Any]) -> None:
    try:
        parsed = parse_claim(claim)
    except InputError as exc:
        out.field("Requests", f"cannot be read: {exc}")
        return
    written = _capacity_texts(claim)
    out.head("Requests")
    for alternatives in parsed.requests:
        lines = []
        for req in alternatives:
            amount = "all" if req.mode == "All" else f"{req.count} x"
            text = f"{amount} {req.class_name}"
            for expr in req.selector_exprs:
                text += f"\nwhere {expr}"
            if req.capacity:
                asked = written.get(req.name) or {}
                text += "\ncapacity " + ", ".join(f"{k}={asked.get(k, format_quantity(v))}" for k, v in req.capacity.items())
            if req.admin_access:
                text += "\nadmin access"
            lines.append(text if len(alternatives) == 1 else f"{req.name.split('/', 1)[1]}: {text}")
        label = alternatives[0].top
        out.field(label, "\n".join(lines) if len(alternatives) == 1 else "first available of:\n" + "\n".join(lines), 1)
    if parsed.constraints:
        out.field("Constraints", "\n".join(c.describe().removeprefix("constraint ") for c in parsed.constraints), 1)


def _prepared(out: Block, args: argparse.Namespace, node: str | None, drivers: Sequence[str], uid: str | None) -> None:
    if node is None or not uid:
        out.field("Prepared", "no (not allocated)" if node is None else "unknown (the claim has no uid)")
        return
    out.head(f"Prepared on {node}")
    for driver in drivers:
        view = _inspect(args, node, driver, uid)
        if view.problem:
            out.field(driver, f"unknown: {view.problem}", 1)
            continue
        if view.state is None:
            state = "no (not in the plugin's checkpoint)"
        elif view.earlier_boot:
            state = f"no ({view.state} in an earlier boot; the plugin drops it when it starts)"
        else:
            state = "yes" if view.prepared else f"not yet ({view.state}: preparation started, not finished)"
        out.field(driver, state, 1)
        out.field("Checkpoint", view.checkpoint, 2)
        if view.state is not None or view.cdi_spec_exists:
            out.field("CDI spec", f"{view.cdi_spec}{'' if view.cdi_spec_exists else ' (missing)'}", 2)
            ids = [i for d in view.devices for i in d.cdi_device_ids]
            if ids:
                out.field("CDI devices", "\n".join(ids), 2)
            out.field("Metadata files", "\n".join(str(p) for p in view.metadata_files) or NONE, 2)


def state_dirs(args: argparse.Namespace, node: str, driver: str) -> tuple[Path, Path] | str:
    """(state directory, CDI root) of `driver`'s plugin on `node`, resolved as `run` resolves them;
    or why they are not here (local mode, another node's directory absent)."""
    try:
        dirs = common.node_dirs(args, driver, node)
    except InputError as exc:
        return str(exc)
    if not dirs.state.is_dir():
        return (f"node {node}'s plugin state is not on this machine (no {dirs.state}; give --kubelet-root, "
                "or --kubelet-plugins-dir (or --state-dir) and --cdi-root, as the plugin was given them)")
    return dirs.state, dirs.cdi


def _inspect(args: argparse.Namespace, node: str, driver: str, uid: str) -> PreparedView:
    found = state_dirs(args, node, driver)
    if isinstance(found, str):
        return PreparedView(checkpoint=Path("checkpoint.json"), problem=found)
    return inspect_claim(found[0], found[1], driver, uid, args.boot_id_file)


def _device_status(out: Block, claim: Mapping[str, Any]) -> None:
    statuses = (claim.get("status") or {}).get("devices") or []
    if not statuses:
        out.field("Device Status", NONE)
        return
    out.head("Device Status")
    for entry in statuses:
        out.head(f"{entry.get('driver')}/{entry.get('pool')}/{entry.get('device')}", 1)
        conditions = ", ".join(f"{c.get('type')}={c.get('status')}" + (f" ({c.get('reason')})" if c.get("reason") else "")
                               for c in entry.get("conditions") or ())
        if conditions:
            out.field("Conditions", conditions, 2)
        net = entry.get("networkData") or {}
        if net:
            parts = [f"interface {net['interfaceName']}" if net.get("interfaceName") else "",
                     f"hardware address {net['hardwareAddress']}" if net.get("hardwareAddress") else "",
                     f"IPs {', '.join(net.get('ips') or [])}" if net.get("ips") else ""]
            out.field("Network", ", ".join(p for p in parts if p) or NONE, 2)
        if entry.get("data"):
            out.field("Data", entry["data"], 2)
        if entry.get("shareID"):
            out.field("Share", entry["shareID"], 2)


def describe_claim(args: argparse.Namespace, store: ObjectStore, claim: Mapping[str, Any], usage: Usage,
                   now: datetime) -> str:
    out = Block()
    header(out, claim, now)
    out.field("State", claim_state(claim))
    _requests(out, claim)
    label = f"{(claim.get('metadata') or {}).get('namespace') or 'default'}/{claim['metadata']['name']}"
    holds = usage.holds_of(label)
    node = _node_of(claim, usage, holds) if (claim.get("status") or {}).get("allocation") else None
    if node is None and not holds:
        out.field("Allocation", NONE)
    else:
        out.head("Allocation")
        out.field("Node", node or "(no single node: see the nodeSelector)", 1)
        for hold in holds:
            pool = usage.pools.get(hold.device[:2])
            published = pool is not None and hold.device[2] in pool.devices
            where = f"pool {hold.device[0]}/{hold.device[1]}" + ("" if published else ", not published any more")
            text = "\n".join([f"{hold.device[2]} ({where})", *consumption(pool, hold),
                              *([f"share {hold.share_id}"] if hold.share_id else []),
                              *(["admin access: holds nothing others need"] if hold.admin else [])])
            out.field(f"Request {hold.request}", text, 1)
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    out.field("Reserved For", "\n".join(f"{r.get('resource') or 'pods'} {r.get('name')} (uid {r.get('uid')})"
                                        for r in reserved) or NONE)
    drivers = sorted({h.device[0] for h in holds})
    _prepared(out, args, node, drivers, (claim.get("metadata") or {}).get("uid"))
    _device_status(out, claim)
    events(out, events_for(store, ObjectRef.of(claim)), now)
    return out.text()


def dra_fields(out: Block, pools: Sequence[PoolUsage]) -> None:
    """A node's DRA part: its pools, the devices in use (which claim, which request, what each
    consumes), the shares of shared devices and the counters left per counter set."""
    out.field("Pools", "\n".join(f"{p.label}: generation {p.generation}, {len(p.devices)} devices, "
                                 f"{len(p.counter_sets)} counter sets" for p in pools) or NONE)
    rows = []
    for pool in pools:
        for device in sorted(pool.holds):
            for hold in pool.holds[device]:
                taken = consumption(pool, hold) + ([f"share {hold.share_id}"] if hold.share_id else [])
                rows.append([device, hold.claim, hold.request, "; ".join(taken) or ("admin access" if hold.admin else "-")])
    if rows:
        out.head("Devices in use")
        out.line(kubectl_table(["DEVICE", "CLAIM", "REQUEST", "CONSUMES"], rows), 1)
    else:
        out.field("Devices in use", NONE)
    shared = [(p, d) for p in pools for d in sorted(p.holds) if len(p.holds[d]) > 1]
    for pool, device in shared:
        used = pool.capacity_used(device)
        caps = (pool.devices[device].get("capacity") or {})
        detail = ", ".join(f"{n} {format_quantity(v, like=str((caps.get(n) or {}).get('value') or '') or None)} of "
                           f"{(caps.get(n) or {}).get('value', '?')}" for n, v in used.items())
        out.field(f"Shared {device}", f"{len(pool.holds[device])} shares" + (f", capacity used: {detail}" if detail else ""))
    counter_lines = [f"{cs}: {counter_summary(counters)}" for p in pools for cs, counters in sorted(p.counters().items())]
    out.field("Counters left", "\n".join(counter_lines) or NONE)
