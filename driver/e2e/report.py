"""Results of an e2e run: a readable table (scenario, step, expected vs observed) and JUnit XML.

Every checked expectation is its own row, so a failing run says exactly which step of which
scenario diverged and what was seen instead; CI systems read the JUnit file (one testcase per
scenario, one failure message per diverging check).
"""

from __future__ import annotations

import shutil
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Check:
    """One expectation of one step, compared with what was observed."""

    step: str  # e.g. "3. pod p-vgpu"
    what: str  # e.g. "unschedulable"
    expected: str
    observed: str
    ok: bool


@dataclass
class ScenarioResult:
    name: str
    reason: str
    checks: list[Check] = field(default_factory=list)
    error: str | None = None  # the harness could not run the scenario (setup, crash)
    skipped: str | None = None  # why the scenario did not run on this backend
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    @property
    def status(self) -> str:
        if self.skipped is not None:
            return "SKIP"
        return "PASS" if self.ok else "FAIL"


@dataclass
class RunReport:
    backend: str
    scenarios: list[ScenarioResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok or s.skipped is not None for s in self.scenarios)

    def counts(self) -> dict[str, int]:
        out = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        for s in self.scenarios:
            out[s.status] += 1
        return out


def _clip(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=max(width, 8), break_long_words=True, break_on_hyphens=False) or [""]


def render_table(report: RunReport, width: int | None = None) -> str:
    """The run as a text table; long cells wrap so the table stays inside the terminal."""
    width = width or min(shutil.get_terminal_size((140, 24)).columns, 160)
    headers = ("scenario", "step", "check", "expected", "observed", "")
    rows: list[tuple[str, ...]] = []
    for s in report.scenarios:
        if s.skipped is not None:
            rows.append((s.name, "-", "-", "-", f"skipped: {s.skipped}", "SKIP"))
            continue
        if s.error is not None:
            rows.append((s.name, "-", "harness", "scenario runs", s.error, "FAIL"))
        for i, c in enumerate(s.checks):
            rows.append((s.name if i == 0 else "", c.step, c.what, c.expected, c.observed, "ok" if c.ok else "FAIL"))
    fixed = [max(len(headers[i]), *(len(r[i]) for r in rows)) if rows else len(headers[i]) for i in range(3)]
    fixed = [min(f, cap) for f, cap in zip(fixed, (30, 24, 18))]
    rest = max(width - sum(fixed) - 5 * 3 - 4, 30)
    widths = [*fixed, rest // 2, rest - rest // 2, 4]
    lines = [" | ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("-+-".join("-" * w for w in widths))
    for row in rows:
        cells = [_clip(text, w) for text, w in zip(row, widths)]
        for k in range(max(len(c) for c in cells)):
            lines.append(" | ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths)).rstrip())
    counts = report.counts()
    lines.append("")
    lines.append(
        f"{report.backend} backend: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
        f"({sum(s.seconds for s in report.scenarios):.1f} s)"
    )
    return "\n".join(lines)


def write_junit(report: RunReport, path: str | Path) -> None:
    """JUnit XML with one testcase per scenario; every failed check is listed in its failure."""
    counts = report.counts()
    suite = ET.Element(
        "testsuite",
        name=f"fake-dra-e2e-{report.backend}",
        tests=str(len(report.scenarios)),
        failures=str(counts["FAIL"]),
        skipped=str(counts["SKIP"]),
        time=f"{sum(s.seconds for s in report.scenarios):.3f}",
    )
    for s in report.scenarios:
        case = ET.SubElement(suite, "testcase", classname=f"e2e.{report.backend}", name=s.name, time=f"{s.seconds:.3f}")
        if s.skipped is not None:
            ET.SubElement(case, "skipped", message=s.skipped)
            continue
        failed = [c for c in s.checks if not c.ok]
        if s.error is not None or failed:
            lines = [f"{c.step}: {c.what}: expected {c.expected}, observed {c.observed}" for c in failed]
            if s.error is not None:
                lines.insert(0, f"harness error: {s.error}")
            fail = ET.SubElement(case, "failure", message=lines[0][:500])
            fail.text = "\n".join(lines)
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(
            [f"reason: {s.reason}"]
            + [f"{'ok  ' if c.ok else 'FAIL'} {c.step}: {c.what}: {c.observed}" for c in s.checks]
        )
    tree = ET.ElementTree(ET.Element("testsuites"))
    tree.getroot().append(suite)
    ET.indent(tree)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tree.write(target, encoding="utf-8", xml_declaration=True)


def summarize_failures(results: Sequence[ScenarioResult]) -> list[str]:
    out = []
    for s in results:
        if s.error is not None:
            out.append(f"{s.name}: {s.error}")
        out.extend(f"{s.name} {c.step}: {c.what}: expected {c.expected}, observed {c.observed}" for c in s.checks if not c.ok)
    return out


def render_summary(report: RunReport) -> str:
    """One line per scenario (status, checks, time, reason), then every failed check in full."""
    width = max([len(s.name) for s in report.scenarios] + [8])
    lines = [f"{'scenario':<{width}}  result  checks  seconds  why it matters", "-" * (width + 40)]
    for s in report.scenarios:
        ok = sum(c.ok for c in s.checks)
        lines.append(f"{s.name:<{width}}  {s.status:<6}  {ok:>3}/{len(s.checks):<3} {s.seconds:>7.1f}  {s.reason}")
    failures = summarize_failures(report.scenarios)
    if failures:
        lines.append("")
        lines.append("failed checks:")
        lines.extend(f"  {f}" for f in failures)
    counts = report.counts()
    lines.append("")
    lines.append(f"{report.backend} backend: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return "\n".join(lines)
