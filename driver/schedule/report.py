"""What a `fake-dra schedule` run did: one outcome per pod it decided, and the run's figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PodOutcome:
    name: str  # namespace/name
    node: str | None
    claims: list[str]
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "node": self.node, "claims": list(self.claims), "reason": self.reason}


@dataclass
class Report:
    outcomes: list[PodOutcome] = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0
    writes: int = 0
    attempts: int = 0  # allocator runs
    conflicts: int = 0  # cycles refused as stale and tried again
    skipped: list[str] = field(default_factory=list)  # pods another writer bound or deleted meanwhile
    node_reads: int = 0  # nodes whose slices were read from the store
    cpu_load: float = 0.0  # CPU seconds reading the store
    cpu_cycles: float = 0.0  # CPU seconds scheduling (cycles and writes)

    @property
    def scheduled(self) -> list[PodOutcome]:
        return [o for o in self.outcomes if o.node]

    @property
    def pending(self) -> list[PodOutcome]:
        return [o for o in self.outcomes if not o.node]
