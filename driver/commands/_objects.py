"""How `fake-dra get/apply/delete` print stored objects: kubectl's tables, YAML, JSON and names.

Columns follow kubectl's printers (kubernetes/kubernetes pkg/printers/internalversion/printers.go):
DeviceClass NAME AGE; ResourceClaim NAME STATE AGE with STATE from deleted/pending/allocated/reserved;
ResourceClaimTemplate NAME AGE; ResourceSlice NAME NODE DRIVER POOL AGE; Pod NAME READY STATUS
RESTARTS AGE (wide: IP NODE NOMINATED NODE READINESS GATES); Node NAME STATUS ROLES AGE VERSION (wide:
INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME). `-o wide` of the DRA kinds adds
what a driver author looks for next: the devices a claim got, the size of a slice, a class's selectors.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import yaml

from driver.tables import kubectl_table
from driver.store.kinds import Kind

OUTPUTS = ("table", "wide", "yaml", "json", "name")
JSONPATH = "jsonpath="
CUSTOM_COLUMNS = "custom-columns="


def output_format(value: str) -> str:
    """-o of `get`: one of OUTPUTS, jsonpath=TEMPLATE or custom-columns=SPEC (parsed here, so a bad
    one is refused before the store is read)."""
    from driver.commands._columns import parse_custom_columns
    from driver.commands._jsonpath import JsonPathError, parse
    from driver.errors import InputError

    if value in OUTPUTS:
        return value
    if value.startswith(CUSTOM_COLUMNS) or value == "custom-columns":
        try:
            parse_custom_columns(value[len(CUSTOM_COLUMNS):])
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    if value.startswith(JSONPATH):
        template = value[len(JSONPATH):]
        if not template:
            raise argparse.ArgumentTypeError("jsonpath= needs a template, e.g. -o jsonpath='{.items[*].metadata.name}'")
        try:
            parse(template)
        except JsonPathError as exc:
            raise argparse.ArgumentTypeError(f"jsonpath template {template!r}: {exc}") from None
        return value
    if value == "jsonpath":
        raise argparse.ArgumentTypeError("jsonpath needs a template: -o jsonpath='{.items[*].metadata.name}'")
    raise argparse.ArgumentTypeError(f"{value!r} is not one of {', '.join(OUTPUTS)}, jsonpath=TEMPLATE, "
                                     "custom-columns=SPEC")


def human_duration(seconds: float) -> str:
    """Age as kubectl prints it (k8s.io/apimachinery/pkg/util/duration.HumanDuration)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // (24 * 365)}y{days}d" if days else f"{hours // (24 * 365)}y"
    return f"{hours // (24 * 365)}y"


def age(obj: Mapping[str, Any], now: datetime | None = None) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def since(stamp: Any, now: datetime | None = None) -> str:
    """How long ago an RFC 3339 time stamp was, as kubectl prints ages."""
    if not stamp:
        return "<unknown>"
    try:
        created = datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return "<unknown>"
    return human_duration(((now or datetime.now(timezone.utc)) - created).total_seconds())


def claim_state(claim: Mapping[str, Any]) -> str:
    meta, status = claim.get("metadata") or {}, claim.get("status") or {}
    states = ["deleted"] if meta.get("deletionTimestamp") else []
    if not status.get("allocation"):
        if not meta.get("deletionTimestamp"):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def allocated_devices(claim: Mapping[str, Any]) -> list[str]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [str(r.get("device")) for r in results if isinstance(r, Mapping)]


def pod_status(pod: Mapping[str, Any]) -> str:
    """kubectl's STATUS of a pod: Terminating, the status reason, the phase (Pending by default)."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return str(status.get("reason") or status.get("phase") or "Pending")


def node_status(node: Mapping[str, Any]) -> str:
    """kubectl's STATUS of a node: its Ready condition (Unknown without one), SchedulingDisabled."""
    ready = next((c for c in (node.get("status") or {}).get("conditions") or []
                  if isinstance(c, Mapping) and c.get("type") == "Ready"), None)
    text = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    return text + (",SchedulingDisabled" if (node.get("spec") or {}).get("unschedulable") else "")


def _core_columns(kind: Kind, obj: Mapping[str, Any], wide: bool, now: datetime) -> tuple[list[str], list[object]]:
    name = (obj.get("metadata") or {}).get("name")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if kind.kind == "Pod":
        containers = spec.get("containers") or []
        ready = sum(1 for c in status.get("containerStatuses") or [] if isinstance(c, Mapping) and c.get("ready"))
        restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or [] if isinstance(c, Mapping))
        heads = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        cells: list[object] = [name, f"{ready}/{len(containers)}", pod_status(obj), restarts, age(obj, now)]
        if wide:
            heads += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
            cells += [status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
                      status.get("nominatedNodeName") or "<none>", "<none>"]
        return heads, cells
    labels = (obj.get("metadata") or {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = status.get("nodeInfo") or {}
    heads = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    cells = [name, node_status(obj), ",".join(roles) or "<none>", age(obj, now), info.get("kubeletVersion") or ""]
    if wide:
        addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or [] if isinstance(a, Mapping)}
        heads += ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
        cells += [addresses.get("InternalIP") or "<none>", addresses.get("ExternalIP") or "<none>",
                  info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
                  info.get("containerRuntimeVersion") or "<unknown>"]
    return heads, cells


def _columns(kind: Kind, obj: Mapping[str, Any], wide: bool, now: datetime) -> tuple[list[str], list[object]]:
    name = (obj.get("metadata") or {}).get("name")
    spec = obj.get("spec") or {}
    if kind.kind in ("Pod", "Node"):
        return _core_columns(kind, obj, wide, now)
    if kind.kind == "ResourceClaim":
        heads, cells = ["NAME", "STATE", "AGE"], [name, claim_state(obj), age(obj, now)]
        if wide:
            heads.append("DEVICES")
            cells.append(", ".join(allocated_devices(obj)) or "<none>")
        return heads, cells
    if kind.kind == "ResourceSlice":
        pool = spec.get("pool") or {}
        heads = ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
        cells = [name, spec.get("nodeName") or "<none>", spec.get("driver"), pool.get("name"), age(obj, now)]
        if wide:
            heads += ["GEN", "DEVICES", "COUNTERS"]
            cells += [pool.get("generation"), len(spec.get("devices") or ()), len(spec.get("sharedCounters") or ())]
        return heads, cells
    if kind.kind == "Event":
        involved = obj.get("involvedObject") or {}
        return (["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
                [since(obj.get("lastTimestamp") or obj.get("firstTimestamp"), now), obj.get("type"), obj.get("reason"),
                 f"{str(involved.get('kind') or '').lower()}/{involved.get('name')}", obj.get("message")])
    if kind.kind == "Namespace":
        return ["NAME", "STATUS", "AGE"], [name, (obj.get("status") or {}).get("phase") or "Active", age(obj, now)]
    heads, cells = ["NAME", "AGE"], [name, age(obj, now)]
    if wide and kind.kind == "DeviceClass":
        exprs = [((s or {}).get("cel") or {}).get("expression", "") for s in spec.get("selectors") or ()]
        heads.append("SELECTORS")
        cells.append(" && ".join(f"({e})" for e in exprs) or "<none>")
    return heads, cells


def render_table(kind: Kind, objects: Sequence[Mapping[str, Any]], *, wide: bool = False,
                 all_namespaces: bool = False, qualified: bool = False, now: datetime | None = None,
                 show_labels: bool = False, no_headers: bool = False, custom: str | None = None) -> str:
    """The objects as `kubectl get` prints them (driver.tables.kubectl_table: never wrapped);
    `custom`: a custom-columns spec instead of the kind's columns."""
    from driver.commands._columns import custom_row, format_labels, parse_custom_columns

    now = now or datetime.now(timezone.utc)
    columns = parse_custom_columns(custom) if custom is not None else None
    headers: list[str] = [c.header for c in columns] if columns else []
    rows = []
    for obj in objects:
        if columns is not None:
            rows.append(custom_row(columns, obj))
            continue
        headers, cells = _columns(kind, obj, wide, now)
        if qualified:
            cells[0] = object_name(kind, obj)
        if all_namespaces and kind.namespaced:
            headers = ["NAMESPACE", *headers]
            cells = [(obj.get("metadata") or {}).get("namespace"), *cells]
        if show_labels:
            headers = [*headers, "LABELS"]
            cells = [*cells, format_labels(obj)]
        rows.append(cells)
    return kubectl_table(headers, rows, no_headers=no_headers)


def object_name(kind: Kind, obj: Mapping[str, Any]) -> str:
    return f"{kind.qualified}/{(obj.get('metadata') or {}).get('name')}"


def as_list(objects: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What kubectl prints for several objects: a v1 List."""
    return {"apiVersion": "v1", "items": list(objects), "kind": "List", "metadata": {"resourceVersion": ""}}


def dump(value: Any, output: str) -> str:
    """YAML or JSON with sorted keys, as kubectl prints objects."""
    if output == "json":
        return json.dumps(value, indent=4, sort_keys=True, default=str) + "\n"
    return yaml.safe_dump(value, sort_keys=True, default_flow_style=False, width=1000)
