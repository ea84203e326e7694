"""Render search placements as `status.allocation` in the resource.k8s.io/v1 shape.

Results carry request (or request/subrequest), driver, pool, device, plus adminAccess, tolerations,
shareID, consumedCapacity and (with the binding-condition gates) bindingConditions /
bindingFailureConditions as upstream writes them, and `consumedCounters` (KEP-5941) when the
device has request-driven counters. Class and claim configs are copied like upstream; the node
selector pins the claim to the node when any device is node-local or binds to its node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.allocator.checks import status_capacity_name
from driver.allocator.engine import Placement
from driver.allocator.inputs import Claim
from driver.allocator.rules import consumed_counters_field
from driver.model.quantity import format_quantity


def _result(alloc: Any, p: Placement) -> dict[str, Any]:
    dev = p.device
    out: dict[str, Any] = {"request": p.request.name, "driver": dev.driver, "pool": dev.pool, "device": dev.name}
    if p.request.admin_access:
        out["adminAccess"] = True
    if p.request.tolerations:
        out["tolerations"] = [dict(t) for t in p.request.tolerations]
    if p.share_id is not None:
        out["shareID"] = p.share_id
    if p.consumed_capacity:
        caps = alloc.caps(dev)
        out["consumedCapacity"] = {
            status_capacity_name(name, dev): format_quantity(amount, like=caps[name].text)
            for name, amount in sorted(p.consumed_capacity.items())
        }
    if p.request_counters:
        out["consumedCounters"] = consumed_counters_field(p.request_counters, p.pool.counter_sets)
    if alloc.binding_conditions:
        # The scheduler waits for these device conditions before binding the pod (KEP-5007).
        if dev.binding_conditions is not None:
            out["bindingConditions"] = list(dev.binding_conditions)
        if dev.binding_failure_conditions is not None:
            out["bindingFailureConditions"] = list(dev.binding_failure_conditions)
    return out


def _node_selector(alloc: Any, placements: list[Placement]) -> dict[str, Any] | None:
    fields: list[dict] = []
    exprs: list[dict] = []
    for p in placements:
        spec = p.pool.slice_specs.get(p.device.slice_name, {})
        source: Mapping[str, Any] = p.device.raw if spec.get("perDeviceNodeSelection") else spec
        if source.get("nodeName") or p.device.binds_to_node:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [alloc.node.name]}]}]}
        selector = source.get("nodeSelector")
        if selector:
            terms = selector.get("nodeSelectorTerms") or []
            if terms:
                for req in terms[0].get("matchFields") or ():
                    if req not in fields:
                        fields.append(dict(req))
                for req in terms[0].get("matchExpressions") or ():
                    if req not in exprs:
                        exprs.append(dict(req))
    if not fields and not exprs:
        return None
    term: dict[str, Any] = {}
    if exprs:
        term["matchExpressions"] = exprs
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _configs(alloc: Any, claim: Claim, selected: Mapping[tuple[int, int], int], ci: int) -> list[dict]:
    chosen = []  # (top name, result name, class name) per top-level request
    for ri, alternatives in enumerate(claim.requests):
        req = alternatives[selected.get((ci, ri), 0)]
        chosen.append((req.top, req.name, req.class_name))
    out: list[dict] = []
    by_class: dict[str, list[dict]] = {}
    for _, name, class_name in chosen:
        if class_name in by_class:
            for cfg in by_class[class_name]:
                cfg["requests"].append(name)
            continue
        entries = []
        for cfg in alloc.classes[class_name].config:
            entry = {"source": "FromClass", "requests": [name], **{k: v for k, v in cfg.items() if k != "requests"}}
            entries.append(entry)
            out.append(entry)
        by_class[class_name] = entries
    spec_devices = (claim.obj.get("spec") or {}).get("devices") or {}
    for cfg in spec_devices.get("config") or ():
        wanted = list(cfg.get("requests") or ())
        if not wanted or any(top in wanted or name in wanted for top, name, _ in chosen):
            out.append({"source": "FromClaim", "requests": wanted, **{k: v for k, v in cfg.items() if k != "requests"}})
    for entry in out:
        if entry["requests"] and all(top in entry["requests"] or name in entry["requests"] for top, name, _ in chosen):
            entry["requests"] = []
    for entry in out:
        if not entry["requests"]:
            del entry["requests"]
    return out


def render_allocation(alloc: Any, claim: Claim, placements: list[Placement], selected, ci: int) -> dict[str, Any]:
    devices: dict[str, Any] = {"results": [_result(alloc, p) for p in placements]}
    configs = _configs(alloc, claim, selected, ci)
    if configs:
        devices["config"] = configs
    allocation: dict[str, Any] = {"devices": devices}
    selector = _node_selector(alloc, placements)
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation
