"""What the churn soak (adversarial.churn) counts and prints: the settled store's violations sorted
into double-booked, stale and lost, and the figures `hack/soak.sh --mode churn` prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class ChurnFigures:
    seed: int = 0
    steps: int = 0
    ops: Counter = field(default_factory=Counter)
    commands: int = 0
    exits: Counter = field(default_factory=Counter)
    schedule_runs: int = 0
    hostile_rows: int = 0
    hostile_answers: int = 0
    double_booked: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # crashes, tracebacks, multi-line errors, no settle
    settled: dict[str, int] = field(default_factory=dict)  # what the settled store holds
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.double_booked or self.stale or self.lost or self.problems)

    def report(self) -> str:
        ops = ", ".join(f"{k} {n}" for k, n in sorted(self.ops.items()))
        exits = ", ".join(f"{k}: {n}" for k, n in sorted(self.exits.items()))
        held = ", ".join(f"{k} {n}" for k, n in self.settled.items())
        lines = [
            "churn soak figures",
            f"  seed               {self.seed}",
            f"  steps              {self.steps}  ({ops})",
            f"  commands           {self.commands}  (exit codes {exits}; {self.schedule_runs} of them "
            f"concurrent `schedule` runs)",
            f"  hostile rows       {self.hostile_rows} planted, {self.hostile_answers} one-line answers checked",
            f"  settled store      {held}",
            f"double-booked: {len(self.double_booked)}",
            f"stale: {len(self.stale)}",
            f"lost: {len(self.lost)}",
            f"problems: {len(self.problems)}",
        ]
        for title, items in (("double-booked", self.double_booked), ("stale", self.stale), ("lost", self.lost),
                             ("problem", self.problems)):
            lines += [f"  - {title}: {item}" for item in items[:20]]
        lines.append(f"  took               {self.seconds:.0f} s")
        return "\n".join(lines)


def classify(found: list[str]) -> tuple[list[str], list[str], list[str]]:
    """violations() in the soak's three counts: double-booked, stale, lost (a bound pod left without
    its allocation lost what it had)."""
    double, stale, lost = [], [], []
    for v in found:
        if "double-booked" in v:
            double.append(v)
        elif v.startswith("pod ") and " is bound but " in v:
            lost.append(v)
        else:
            stale.append(v)
    return double, stale, lost
