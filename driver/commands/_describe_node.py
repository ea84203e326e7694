"""`fake-dra describe node NAME`: kubectl's node description, then what DRA holds on the node.

The first part is kubectl's NodeDescriber (k8s.io/kubectl pkg/describe/describe.go describeNode),
line for line and laid out by the same tabwriter: Name, Roles, Labels, Annotations,
CreationTimestamp, Taints, Unschedulable, Conditions, Addresses, Capacity, Allocatable,
Node-Local ResourceSlices (driver/pool, slices, devices), System Info, PodCIDR(s), ProviderID,
Non-terminated Pods with their CPU and memory requests and limits and their share of the node's
allocatable (describeNodeResource; requests and limits summed as resourcehelper.PodRequests sums
them: containers, the largest init container step, sidecars, overhead), then Allocated resources.
Not printed: the node Lease (the local store keeps none).

Then fake-dra's DRA part (driver.commands._describe_dra): pools, devices in use and by which claim,
shared devices, counters left, the claims the node's plugin prepared (a fleet node has no node
agent: one line says so), and last the node's Events, as kubectl prints them.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from typing import Any

from driver.allocator.usage import Usage
from driver.commands import _describe_dra
from driver.commands._describe_text import NONE, Block, Tabbed, event_lines, rfc1123z
from driver.commands._objects import since
from driver.errors import InputError
from driver.model.quantity import format_quantity, parse_quantity
from driver.state.checkpoint import COMPLETED
from driver.state.inspect import prepared_claims
from driver.store.events import ObjectRef, events_for
from driver.store.fields import parse_field_selector
from driver.store.kinds import resolve
from driver.store.objectstore import ObjectStore

ROLE_PREFIX = "node-role.kubernetes.io/"
ROLE_LABEL = "kubernetes.io/role"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"  # kwok's mark of a node it fakes (driver.fleet.nodes)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"  # describe skips it
MAX_ANNOTATION = 140
STANDARD = ("cpu", "memory", "ephemeral-storage")
_TERMINATED = parse_field_selector("status.phase!=Succeeded,status.phase!=Failed")


def roles(node: Mapping[str, Any]) -> list[str]:
    """findNodeRoles: `node-role.kubernetes.io/<role>` labels and `kubernetes.io/role=<role>`."""
    found = set()
    for key, value in (((node.get("metadata") or {}).get("labels")) or {}).items():
        if key.startswith(ROLE_PREFIX) and key[len(ROLE_PREFIX):]:
            found.add(key[len(ROLE_PREFIX):])
        elif key == ROLE_LABEL and value:
            found.add(str(value))
    return sorted(found)


def _multiline(out: Tabbed, title: str, pairs: Sequence[str]) -> None:
    out.write(0, f"{title}:\t")
    if not pairs:
        out.write(0, "<none>\n")
        return
    for i, text in enumerate(pairs):
        out.write(0, ("\t" if i else "") + text + "\n")


def _annotations(annotations: Mapping[str, Any]) -> list[str]:
    """printAnnotationsMultiline: `key: value`, a long or multi-line value on its own lines, cut."""
    out = []
    for key in sorted(k for k in annotations if k != LAST_APPLIED):
        value = str(annotations[key]).removesuffix("\n")
        if len(value) + len(key) + 2 > MAX_ANNOTATION or "\n" in value:
            parts = [f"  {s[:MAX_ANNOTATION - 2] + '...' if len(s) > MAX_ANNOTATION - 2 else s}"
                     for s in value.split("\n")]
            out.append(f"{key}:\n\t" + "\n\t".join(parts))
        else:
            out.append(f"{key}: {value}")
    return out


def _taint(taint: Mapping[str, Any]) -> str:
    key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _quantities(values: Mapping[str, Any] | None) -> dict[str, tuple[Fraction, str]]:
    out = {}
    for key, text in (values or {}).items():
        try:
            out[str(key)] = (parse_quantity(text), str(text))
        except InputError:
            continue
    return out


def _resource_list(out: Tabbed, title: str, values: Mapping[str, Any] | None) -> None:
    if not values:
        return
    out.write(0, f"{title}:\n")
    for key, (amount, text) in sorted(_quantities(values).items()):
        out.write(0, f"  {key}:\t{format_quantity(amount, like=text)}\n")


def _container_amounts(container: Mapping[str, Any], limits_only: bool) -> dict[str, tuple[Fraction, str]]:
    resources = container.get("resources") or {}
    if limits_only:
        return _quantities(resources.get("limits"))
    # The API server defaults a container's unset requests from its limits.
    return _quantities({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def _add(total: dict[str, tuple[Fraction, str]], more: Mapping[str, tuple[Fraction, str]]) -> None:
    for key, (amount, text) in more.items():
        have = total.get(key)
        total[key] = (amount + have[0], have[1]) if have else (amount, text)


def pod_amounts(pod: Mapping[str, Any], limits_only: bool = False) -> dict[str, tuple[Fraction, str]]:
    """resourcehelper.PodRequests (or PodLimits): the containers summed, restartable init containers
    (sidecars) added, each other init container's step (itself plus the sidecars before it) taken
    when larger, and the pod overhead added."""
    spec = pod.get("spec") or {}
    total: dict[str, tuple[Fraction, str]] = {}
    for container in spec.get("containers") or []:
        _add(total, _container_amounts(container or {}, limits_only))
    sidecars: dict[str, tuple[Fraction, str]] = {}
    steps: dict[str, tuple[Fraction, str]] = {}
    for init in spec.get("initContainers") or []:
        amounts = _container_amounts(init or {}, limits_only)
        if (init or {}).get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            step = dict(sidecars)
        else:
            step = dict(amounts)
            _add(step, sidecars)
        for key, value in step.items():
            if key not in steps or value[0] > steps[key][0]:
                steps[key] = value
    for key, value in steps.items():
        if key not in total or value[0] > total[key][0]:
            total[key] = value
    _add(total, _quantities(spec.get("overhead")))
    return total


def _share(amount: Fraction, of: Fraction) -> int:
    return int(amount / of * 100) if of else 0


def _shown(values: Mapping[str, tuple[Fraction, str]], key: str) -> tuple[Fraction, str]:
    amount, like = values.get(key, (Fraction(0), "0"))
    return amount, format_quantity(amount, like=like)


def _pods_section(out: Tabbed, node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime) -> None:
    status = node.get("status") or {}
    allocatable = _quantities(status.get("allocatable") or status.get("capacity"))
    out.write(0, f"Non-terminated Pods:\t({len(pods)} in total)\n")
    out.write(1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n")
    out.write(1, "---------\t----\t\t------------\t----------\t---------------\t-------------\t---\n")
    cpu_of = allocatable.get("cpu", (Fraction(0), ""))[0]
    mem_of = allocatable.get("memory", (Fraction(0), ""))[0]
    totals: dict[str, tuple[Fraction, str]] = {}
    limit_totals: dict[str, tuple[Fraction, str]] = {}
    for pod in pods:
        requests, limits = pod_amounts(pod), pod_amounts(pod, limits_only=True)
        _add(totals, requests)
        _add(limit_totals, limits)
        cells = []
        for values, key, of in ((requests, "cpu", cpu_of), (limits, "cpu", cpu_of), (requests, "memory", mem_of),
                                (limits, "memory", mem_of)):
            amount, text = _shown(values, key)
            cells.append(f"{text} ({_share(amount, of)}%)")
        meta = pod.get("metadata") or {}
        out.write(1, f"{meta.get('namespace') or 'default'}\t{meta.get('name')}\t\t" + "\t".join(cells)
                  + f"\t{since(meta.get('creationTimestamp'), now)}\n")
    out.write(0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n")
    out.write(1, "Resource\tRequests\tLimits\n")
    out.write(1, "--------\t--------\t------\n")
    for key in STANDARD:
        of = allocatable.get(key, (Fraction(0), ""))[0]
        (req, req_text), (lim, lim_text) = _shown(totals, key), _shown(limit_totals, key)
        out.write(1, f"{key}\t{req_text} ({_share(req, of)}%)\t{lim_text} ({_share(lim, of)}%)\n")
    huge = sorted(k for k in allocatable if k.startswith("hugepages-"))
    for key in huge:
        of = allocatable[key][0]
        (req, req_text), (lim, lim_text) = _shown(totals, key), _shown(limit_totals, key)
        out.write(1, f"{key}\t{req_text} ({_share(req, of)}%)\t{lim_text} ({_share(lim, of)}%)\n")
    extended = sorted(k for k in allocatable if k not in STANDARD and k != "pods" and not k.startswith("hugepages-")
                      and not k.startswith("requests."))
    for key in extended:
        out.write(1, f"{key}\t{_shown(totals, key)[1]}\t{_shown(limit_totals, key)[1]}\n")


def _slices_section(out: Tabbed, slices: Sequence[Mapping[str, Any]]) -> None:
    """describeNodeResourceSlices: slices and devices per driver/pool, at most ten pools."""
    pools: dict[tuple[str, str], list[int]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        key = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
        counts = pools.setdefault(key, [0, 0])
        counts[0] += 1
        counts[1] += len(spec.get("devices") or [])
    if not pools:
        return
    out.write(0, "Node-Local ResourceSlices:\n")
    out.write(1, "Driver\tPool\tSlices\tDevices\n")
    out.write(1, "------\t----\t------\t-------\n")
    ordered = sorted(pools, key=lambda k: f"{k[0]}/{k[1]}")
    for i, (driver, pool) in enumerate(ordered):
        if i >= 10:
            out.write(1, f"...and {len(ordered) - 10} more pools\n")
            break
        slices_n, devices_n = pools[(driver, pool)]
        out.write(1, f"{driver}\t{pool}\t{slices_n}\t{devices_n}\n")


def kubectl_part(out: Tabbed, node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                 slices: Sequence[Mapping[str, Any]], now: datetime) -> None:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    out.write(0, f"Name:\t{meta.get('name')}\n")
    out.write(0, f"Roles:\t{','.join(roles(node)) or NONE}\n")
    _multiline(out, "Labels", [f"{k}={v}" for k, v in sorted((meta.get("labels") or {}).items())])
    _multiline(out, "Annotations", _annotations(meta.get("annotations") or {}))
    out.write(0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    taints = sorted((t for t in spec.get("taints") or [] if isinstance(t, Mapping)),
                    key=lambda t: f"{t.get('effect') or ''},{t.get('key') or ''}")
    _multiline(out, "Taints", [_taint(t) for t in taints])
    out.write(0, f"Unschedulable:\t{'true' if spec.get('unschedulable') else 'false'}\n")
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    if conditions:
        out.write(0, "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n")
        out.write(1, "----\t------\t-----------------\t------------------\t------\t-------\n")
        for c in conditions:
            out.write(1, f"{c.get('type') or ''} \t{c.get('status') or ''} \t{rfc1123z(c.get('lastHeartbeatTime'))} \t"
                         f"{rfc1123z(c.get('lastTransitionTime'))} \t{c.get('reason') or ''} \t{c.get('message') or ''}\n")
    out.write(0, "Addresses:\n")
    for address in status.get("addresses") or []:
        if isinstance(address, Mapping):
            out.write(1, f"{address.get('type')}:\t{address.get('address')}\n")
    _resource_list(out, "Capacity", status.get("capacity"))
    _resource_list(out, "Allocatable", status.get("allocatable"))
    _slices_section(out, slices)
    info = status.get("nodeInfo") or {}
    out.write(0, "System Info:\n")
    for label, key in (("Machine ID", "machineID"), ("System UUID", "systemUUID"), ("Boot ID", "bootID"),
                       ("Kernel Version", "kernelVersion"), ("OS Image", "osImage"),
                       ("Operating System", "operatingSystem"), ("Architecture", "architecture"),
                       ("Container Runtime Version", "containerRuntimeVersion"), ("Kubelet Version", "kubeletVersion")):
        out.write(0, f"  {label}:\t{info.get(key) or ''}\n")
    if spec.get("podCIDR"):
        out.write(0, f"PodCIDR:\t{spec['podCIDR']}\n")
    if spec.get("podCIDRs"):
        out.write(0, f"PodCIDRs:\t{','.join(map(str, spec['podCIDRs']))}\n")
    if spec.get("providerID"):
        out.write(0, f"ProviderID:\t{spec['providerID']}\n")
    _pods_section(out, node, pods, now)


def is_fleet_node(node: Mapping[str, Any] | None) -> bool:
    """A node no node agent serves: kwok's (a fleet's nodes carry its annotation)."""
    return ((node or {}).get("metadata") or {}).get("annotations", {}).get(KWOK_ANNOTATION) == "fake"


def prepared_on_node(args: argparse.Namespace, node: str, node_obj: Mapping[str, Any] | None,
                     drivers: Sequence[str]) -> str:
    lines = []
    for driver in drivers:
        found = _describe_dra.state_dirs(args, node, driver)
        if isinstance(found, str):
            if is_fleet_node(node_obj):
                return (f"none: {node} is a fleet node ({KWOK_ANNOTATION}=fake); no node agent prepares claims "
                        "there")
            lines.append(f"{driver}: unknown: {found}")
            continue
        claims, problem = prepared_claims(found[0], driver, args.boot_id_file)
        if problem:
            lines.append(f"{driver}: unknown: {problem}")
            continue
        names = [f"{c.ref.namespace}/{c.ref.name}" + ("" if c.state == COMPLETED and not c.earlier_boot else
                 f" ({c.state}{', earlier boot' if c.earlier_boot else ''})") for c in claims]
        lines.append(f"{driver}: {', '.join(names) if names else 'none'}")
    return "\n".join(lines) or NONE


def describe_node(args: argparse.Namespace, store: ObjectStore, name: str, node_obj: Mapping[str, Any] | None,
                  usage: Usage, now: datetime) -> str:
    parts = []
    if node_obj is not None:
        pods_kind = resolve("pods")
        on_node = parse_field_selector(f"spec.nodeName={name}").for_kind(pods_kind)
        running = _TERMINATED.for_kind(pods_kind)
        # kubectl's describe node lists pods by field selector spec.nodeName (k8s.io/kubectl
        # pkg/describe NodeDescriber.Describe); the store's node index answers it without reading
        # the other nodes' pods and slices (reading them all cost 8 GB in a 5,000-node store).
        pods = [p for p in store.find("pods", "node", name) if on_node.matches(p) and running.matches(p)]
        slices = [s for s in store.find("resourceslices", "node", name) if (s.get("spec") or {}).get("nodeName") == name]
        tabbed = Tabbed()
        kubectl_part(tabbed, node_obj, pods, slices, now)
        parts.append(tabbed.text())
    dra = Block()
    if node_obj is None:
        dra.field("Name", name)
        dra.field("Node object", "<none in the store> (a node here is the pools whose slices name it)")
    pools = usage.for_node(name)
    _describe_dra.dra_fields(dra, pools)
    dra.field("Prepared claims", prepared_on_node(args, name, node_obj, sorted({p.driver for p in pools})))
    parts.append(dra.text())
    ref = ObjectRef("Node", name, uid=((node_obj or {}).get("metadata") or {}).get("uid"))
    tail = Tabbed()
    event_lines(tail, events_for(store, ref), now)
    parts.append(tail.text())
    return "\n".join(parts)
