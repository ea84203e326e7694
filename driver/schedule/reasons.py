"""Why a pod fits nowhere, in one line, worded as kube-scheduler's FitError.

kube-scheduler (pkg/scheduler/framework/types.go FitError.Error) says
`0/N nodes are available: <histogram>. preemption: 0/N nodes are available: <histogram>.`:
- the first histogram counts every reason of every node's Filter status (a node rejected by
  NodeResourcesFit carries one reason per resource short, `Insufficient cpu` and `Insufficient
  memory`), each entry `<count> <reason>`, the entries sorted as strings and joined by `, `; a
  PreFilter rejection replaces it with its own message;
- the `preemption:` part is DefaultPreemption's PostFilter (plugins/defaultpreemption,
  framework/preemption/preemption.go): a node whose status is UnschedulableAndUnresolvable (taints,
  node affinity, unschedulable, DRA, a request above the node's allocatable) counts as
  `Preemption is not helpful for scheduling`; one where removing pods could help (resources short)
  as `No preemption victims found for incoming pod`, which is what kube-scheduler finds when no pod
  on the node has a lower priority than the pending one: preemption itself is not modelled here.
- No nodes at all is kube-scheduler's ErrNoNodesAvailable, `no nodes available to schedule pods`.

For DRA kube-scheduler says only `cannot allocate all claims`; here that is followed by the
allocator's reason, with what differs between otherwise equal nodes (the index in `gpu-3-counters`,
`memory-slice-5`, `nic-1-vf-2`) written as `*`, so 1,000 nodes full in the same way are one entry.
Claim names stay as they are (`claim ns/name:` and `claim ns/name, request r:`): they are the pod's own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

# A dash and digits inside a name (`gpu-3-counters`, `memory-slice-5`), not a count or a size.
_INDEX = re.compile(r"(?<=[a-z])-\d+(?=[-\s,;:)(/]|$)")
# A claim's name as the allocator writes it: `claim ns/name:` or `claim ns/name, request r:`.
_CLAIM = re.compile(r"\bclaim ([^\s:,]+)(?=[:,])")
_HIDDEN = "\x00{}\x00"  # stands in for a claim name while indices are replaced
MAX_MESSAGE = 1024  # kube-scheduler truncates event notes at 1,024 characters (validation.NoteLengthLimit)
TRUNCATED = " ..."  # schedule_one.go truncateMessage's suffix
NO_NODES = "no nodes available to schedule pods"  # ErrNoNodesAvailable
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
DRA_UNSCHEDULABLE = "cannot allocate all claims"  # dynamicresources' Filter


class NodeReasons(str):
    """One node's Filter status: its reasons (the text, one reason per line) and whether preemption
    could make room (framework.Unschedulable) or not (UnschedulableAndUnresolvable, the default)."""

    resolvable: bool

    def __new__(cls, reasons: Iterable[str], resolvable: bool = False) -> NodeReasons:
        made = super().__new__(cls, "\n".join(reasons))
        made.resolvable = resolvable
        return made


def normalize(reason: str, node: str) -> str:
    text = reason.replace(f"node {node}", "the node")
    claims = _CLAIM.findall(text)  # claim names are the pod's own: kept as they are
    for i, name in enumerate(claims):
        text = text.replace(f"claim {name}", "claim " + _HIDDEN.format(i), 1)
    text = _INDEX.sub("-*", text)
    for i, name in enumerate(claims):
        text = text.replace("claim " + _HIDDEN.format(i), f"claim {name}", 1)
    # Lists that differ only by index collapse: "gpu-*-counters, gpu-*-counters" -> "gpu-*-counters".
    parts: list[str] = []
    for part in text.split(", "):
        if not parts or parts[-1] != part:
            parts.append(part)
    return ", ".join(parts)


def dra_reason(explained: str) -> str:
    """A node's DRA Filter status: kube-scheduler's words, then the allocator's reason."""
    return f"{DRA_UNSCHEDULABLE}: {explained}"


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def truncate(message: str) -> str:
    """An event note as kube-scheduler writes it: at most MAX_MESSAGE characters."""
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - len(TRUNCATED)] + TRUNCATED


def fit_error(reasons: Mapping[str, str], total: int, prefilter: str | None = None) -> str:
    """kube-scheduler's message for a pod that fits nowhere (module docstring). `reasons`: node name
    -> its Filter status (a NodeReasons, or a plain string: one unresolvable reason); `prefilter`:
    a PreFilter rejection, which stands for every node."""
    if total == 0:
        return NO_NODES
    head = f"0/{total} nodes are available:"
    if prefilter is not None:
        text = f"{head} {prefilter}."
        preemption: Counter[str] = Counter({NOT_HELPFUL: total})
    else:
        counts: Counter[str] = Counter()
        preemption = Counter()
        for node, status in reasons.items():
            for part in str(status).split("\n"):
                counts[normalize(part, node)] += 1
            preemption[NO_VICTIMS if getattr(status, "resolvable", False) else NOT_HELPFUL] += 1
        if total > len(reasons):  # nodes the Filter never reached (SetAbsentNodesStatus)
            preemption[NOT_HELPFUL] += total - len(reasons)
        text = f"{head} {_histogram(counts)}." if counts else f"0/{total} nodes are available."
    text += f" preemption: {head} {_histogram(preemption)}."
    return truncate(text)


def rename_claims(message: str, old: Sequence[str], new: Sequence[str]) -> str:
    """A memoised message reworded for another pod of the same shape: each of the first pod's claim
    names (`claim ns/a:` and `claim ns/a, request r:`) becomes this pod's, in order."""
    renames = {before: after for before, after in zip(old, new) if before != after}
    if not renames:
        return message
    names = "|".join(re.escape(name) for name in sorted(renames, key=len, reverse=True))
    return re.sub(rf"\bclaim ({names})(?=[:,])", lambda m: f"claim {renames[m.group(1)]}", message)
