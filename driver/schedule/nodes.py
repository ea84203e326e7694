"""The parts of kube-scheduler's Filter that are not DRA: which nodes a pod may go to at all.

Modelled, with kube-scheduler's plugin and its failure reason (pkg/scheduler/framework/plugins):
- NodeUnschedulable: `spec.unschedulable` nodes, unless the pod tolerates
  `node.kubernetes.io/unschedulable:NoSchedule` ("node(s) were unschedulable");
- NodeName: a pod naming `spec.nodeName` is not pending, so never seen here;
- NodeAffinity: `spec.nodeSelector` and required node affinity (nodeSelectorTerms ORed, each term's
  matchExpressions In/NotIn/Exists/DoesNotExist/Gt/Lt and matchFields on metadata.name ANDed)
  ("node(s) didn't match Pod's node affinity/selector");
- TaintToleration: NoSchedule and NoExecute taints without a matching toleration
  ("node(s) had untolerated taint {key: value}"); kwok's `kwok.x-k8s.io/node=fake:NoSchedule`
  is one, so pods meant for fleet nodes tolerate it, as on a kwok cluster;
- NodeResourcesFit: the pods count, cpu, memory and any other resource in `status.allocatable`,
  against the requests of the pods bound to the node (containers summed, the largest init container
  if larger; limits fill unset requests, as the API server defaults them) ("Too many pods",
  "Insufficient cpu", every resource short named, as fitsRequest does); an extended resource a DeviceClass serves on a node that does not list it is
  DRA's (extended.py).
Not modelled: inter-pod affinity, topology spread, ports, volumes, images, preemption, scoring.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.allocator.pools import Node, node_selector_matches
from driver.errors import InputError
from driver.model.quantity import parse_quantity
from driver.schedule.extended import container_requests
from driver.schedule.reasons import NodeReasons

log = logging.getLogger("fake-dra.schedule")

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass
class NodeInfo:
    """A Node as the scheduler sees it, with the requests of the pods bound to it."""

    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    unschedulable: bool
    allocatable: dict[str, Fraction]
    requested: dict[str, Fraction] = field(default_factory=dict)
    pods: int = 0

    @classmethod
    def of(cls, node: Mapping[str, Any]) -> NodeInfo:
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        name = str(meta.get("name"))
        allocatable: dict[str, Fraction] = {}
        for key, value in ((node.get("status") or {}).get("allocatable") or {}).items():
            try:
                allocatable[str(key)] = parse_quantity(value)
            except InputError as exc:
                raise InputError(f"Node {name}: status.allocatable.{key}: {exc}") from None
        return cls(name=name, labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
                   taints=[t for t in spec.get("taints") or [] if isinstance(t, Mapping)],
                   unschedulable=bool(spec.get("unschedulable")), allocatable=allocatable)

    def add_pod(self, requests: Iterable[tuple[str, Fraction]]) -> None:
        self.pods += 1
        for key, amount in requests:
            self.requested[key] = self.requested.get(key, Fraction(0)) + amount

    def remove_pod(self, requests: Iterable[tuple[str, Fraction]]) -> None:
        """A pod bound here is gone (deleted, finished, or bound elsewhere after all)."""
        self.pods -= 1
        for key, amount in requests:
            self.requested[key] = self.requested.get(key, Fraction(0)) - amount


@dataclass(frozen=True)
class PodNeeds:
    """What the non-DRA filters read of a pod, parsed once."""

    label: str
    node_selector: tuple[tuple[str, str], ...]
    terms: tuple[Any, ...]  # required node affinity terms (raw dicts); () = none
    tolerations: tuple[tuple[str, str, str, str], ...]  # (key, operator, value, effect)
    requests: tuple[tuple[str, Fraction], ...]

    @property
    def shape(self) -> tuple:
        """Equal for pods the static filters treat alike (requests are checked per node each time)."""
        return (self.node_selector, repr(self.terms), self.tolerations)

    @classmethod
    def requests_of(cls, pod: Mapping[str, Any]) -> tuple[tuple[str, Fraction], ...]:
        """What a bound pod takes of its node; nothing, with a warning, when its requests cannot be
        read (the API server would have refused it; it must not stop the scheduling of others)."""
        meta = pod.get("metadata") or {}
        try:
            return tuple(sorted(_requests(pod.get("spec") or {}, f"{meta.get('namespace') or 'default'}/{meta.get('name')}").items()))
        except (InputError, AttributeError, TypeError) as exc:
            log.warning("not counting the requests of a bound pod: %s", exc)
            return ()

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodNeeds:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        label = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        selector = spec.get("nodeSelector") or {}
        if not isinstance(selector, Mapping):
            raise InputError(f"Pod {label}: spec.nodeSelector: must map label names to values")
        affinity = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = affinity.get("nodeSelectorTerms") or []
        if not isinstance(terms, list):
            raise InputError(f"Pod {label}: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                             ".nodeSelectorTerms: must be a list")
        tolerations = []
        for i, t in enumerate(spec.get("tolerations") or []):
            if not isinstance(t, Mapping):
                raise InputError(f"Pod {label}: spec.tolerations[{i}]: must be an object")
            tolerations.append((str(t.get("key") or ""), str(t.get("operator") or "Equal"), str(t.get("value") or ""),
                                str(t.get("effect") or "")))
        return cls(label=label, node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
                   terms=tuple(terms), tolerations=tuple(tolerations), requests=tuple(sorted(_requests(spec, label).items())))


def _requests(spec: Mapping[str, Any], label: str) -> dict[str, Fraction]:
    def summed(containers: Any, where: str) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        for i, c in enumerate(containers or []):
            for key, value in container_requests(c or {}).items():
                try:
                    out[key] = out.get(key, Fraction(0)) + parse_quantity(value)
                except InputError as exc:
                    raise InputError(f"Pod {label}: spec.{where}[{i}].resources.requests.{key}: {exc}") from None
        return out

    total = summed(spec.get("containers"), "containers")
    for i, init in enumerate(spec.get("initContainers") or []):
        for key, amount in summed([init], f"initContainers[{i}]-").items():
            total[key] = max(total.get(key, Fraction(0)), amount)
    return total


def _tolerates(needs: PodNeeds, taint: Mapping[str, Any]) -> bool:
    key, value, effect = str(taint.get("key") or ""), str(taint.get("value") or ""), str(taint.get("effect") or "")
    for t_key, op, t_value, t_effect in needs.tolerations:
        if t_effect and t_effect != effect:
            continue
        if op == "Exists" and (not t_key or t_key == key):
            return True
        if op == "Equal" and t_key == key and t_value == value:
            return True
    return False


def terms_match(terms: Sequence[Mapping[str, Any]], node: NodeInfo, where: str) -> bool:
    """v1.NodeSelector terms (ORed) against the node: the allocator's matcher, the one the scheduler's
    DRA plugin applies to allocations too."""
    return node_selector_matches({"nodeSelectorTerms": terms}, Node(node.name, node.labels), where)


def static_reason(needs: PodNeeds, node: NodeInfo) -> str | None:
    """Why the pod cannot go to the node whatever is allocated (None: it may). Cacheable per
    (pod shape, node): it reads nothing that scheduling changes."""
    if node.unschedulable and not _tolerates(needs, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}):
        return "node(s) were unschedulable"
    if any(node.labels.get(k) != v for k, v in needs.node_selector):
        return "node(s) didn't match Pod's node affinity/selector"
    if needs.terms and not terms_match(needs.terms, node, f"Pod {needs.label}: node affinity"):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(needs, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
    return None


def resource_reason(needs: PodNeeds, node: NodeInfo, dra: frozenset[str] = frozenset()) -> NodeReasons | None:
    """NodeResourcesFit against what is bound to the node now (None: it fits). `dra`: extended
    resources this node leaves to DRA (driver.schedule.extended), which NodeResourcesFit skips.

    Every resource short is named, in fitsRequest's order (pods, cpu, memory, ephemeral-storage,
    then the others by name); preemption could help unless a request exceeds the node's whole
    allocatable (InsufficientResource.Unresolvable)."""
    reasons: list[str] = []
    unresolvable = False
    pods = node.allocatable.get("pods")
    if pods is not None and node.pods + 1 > pods:
        reasons.append("Too many pods")
    order = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}
    for key, amount in sorted(needs.requests, key=lambda kv: (order.get(kv[0], 3), kv[0])):
        if amount <= 0 or key in dra:
            continue
        have = node.allocatable.get(key)
        if have is None or node.requested.get(key, Fraction(0)) + amount > have:
            reasons.append(f"Insufficient {key}")
            unresolvable = unresolvable or have is None or amount > have
    return NodeReasons(reasons, resolvable=not unresolvable) if reasons else None


def sorted_nodes(nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
    """kube-scheduler's snapshot order: node names sorted (nodeInfoListFromSnapshot)."""
    return sorted(nodes, key=lambda n: n.name)
