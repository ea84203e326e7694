"""Why a pod fits nowhere, in one line: the nodes grouped by reason, as kube-scheduler's FitError.

kube-scheduler says `0/1000 nodes are available: 900 node(s) had untolerated taint {...}, 100 ...`
(framework.FitError), and for DRA only "cannot allocate all claims". Here the DRA part carries the
allocator's reason, with what differs between otherwise equal nodes (the index in `gpu-3-counters`,
`memory-slice-5`, `nic-1-vf-2`) written as `*`, so 1,000 nodes full in the same way are one group:
`0/1000 nodes are available: 900 nodes: ... counters exhausted on gpu-*-counters (memory-slice-*); 100
nodes: node(s) had untolerated taint {kwok.x-k8s.io/node: fake}.`
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

# A dash and digits inside a name (`gpu-3-counters`, `memory-slice-5`), not a count or a size.
_INDEX = re.compile(r"(?<=[a-z])-\d+(?=[-\s,;:)(/]|$)")
_CLAIM = re.compile(r"claim ([^\s:]+):")
_HIDDEN = "claim \x00:"  # stands in for a claim name while indices are replaced
MAX_MESSAGE = 1024  # kube-scheduler truncates event notes at 1,024 characters (validation.NoteLengthLimit)


def normalize(reason: str, node: str) -> str:
    text = reason.replace(f"node {node}", "the node")
    claims = _CLAIM.findall(text)  # claim names are the pod's own: kept as they are
    text = _INDEX.sub("-*", _CLAIM.sub(lambda _: _HIDDEN, text))
    for name in claims:
        text = text.replace(_HIDDEN, f"claim {name}:", 1)
    # Lists that differ only by index collapse: "gpu-*-counters, gpu-*-counters" -> "gpu-*-counters".
    parts = []
    for part in text.split(", "):
        if not parts or parts[-1] != part:
            parts.append(part)
    return ", ".join(parts)


def fit_error(reasons: Mapping[str, str], total: int) -> str:
    """`0/N nodes are available: ...` with the nodes grouped by normalized reason, most first."""
    counts = Counter(normalize(reason, node) for node, reason in reasons.items())
    groups = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = f"0/{total} nodes are available: " + "; ".join(
        f"{n} node{'s' if n != 1 else ''}: {reason}" for reason, n in groups) + "."
    if not reasons:
        text = f"0/{total} nodes are available."
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."
