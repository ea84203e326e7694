"""Results of an e2e run: a readable table (scenario, step, expected vs observed) and JUnit XML.

Every checked expectation is its own row, so a failing run says exactly which step of which
scenario diverged and what was seen instead; CI systems read the JUnit file (one testcase per
scenario, one failure message per diverging check).
"""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from driver.tables import table, terminal_width


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


def render_table(report: RunReport, width: int | None = None) -> str:
    """The run as text: per scenario a heading and one row per check (step, check, expected,
    observed, result). Expected/observed wrap at spaces; a token too long for its column (a CDI
    ID, say) widens the table rather than being cut."""
    width = width or terminal_width()
    blocks = []
    for s in report.scenarios:
        if s.skipped is not None:
            blocks.append(f"{s.name}: SKIP, skipped: {s.skipped}")
            continue
        ok = sum(c.ok for c in s.checks)
        head = f"{s.name}: {s.status} ({ok}/{len(s.checks)} checks, {s.seconds:.1f} s)"
        rows: list[list[str]] = []
        if s.error is not None:
            rows.append(["-", "harness", "scenario runs", s.error, "FAIL"])
        previous = None
        for c in s.checks:
            rows.append([c.step if c.step != previous else "", c.what, c.expected, c.observed, "ok" if c.ok else "FAIL"])
            previous = c.step
        if rows:
            head += "\n" + table(["STEP", "CHECK", "EXPECTED", "OBSERVED", "RESULT"], rows, width=width, wrap=[2, 3])
        blocks.append(head)
    counts = report.counts()
    blocks.append(
        f"{report.backend} backend: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
        f"({sum(s.seconds for s in report.scenarios):.1f} s)"
    )
    return "\n\n".join(blocks)


def write_junit(report: RunReport, path: str | Path) -> None:
    """JUnit XML with one testcase per scenario; every failed check is listed in its failure.
    `path`'s directory must exist (FileNotFoundError otherwise): a typo must not grow a tree."""
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
    tree.write(Path(path), encoding="utf-8", xml_declaration=True)  # its directory is never created


def summarize_failures(results: Sequence[ScenarioResult]) -> list[str]:
    out = []
    for s in results:
        if s.error is not None:
            out.append(f"{s.name}: {s.error}")
        out.extend(f"{s.name} {c.step}: {c.what}: expected {c.expected}, observed {c.observed}" for c in s.checks if not c.ok)
    return out


def render_summary(report: RunReport, width: int | None = None) -> str:
    """One row per scenario (result, checks, seconds, why it matters), then every failed check in full."""
    width = width or terminal_width()
    rows = [[s.name, s.status, f"{sum(c.ok for c in s.checks)}/{len(s.checks)}", f"{s.seconds:.1f}",
             s.skipped if s.skipped is not None else s.reason] for s in report.scenarios]
    lines = [table(["SCENARIO", "RESULT", "CHECKS", "SECONDS", "WHY IT MATTERS"], rows, width=width, wrap=[4])]
    failures = summarize_failures(report.scenarios)
    if failures:
        lines.append("")
        lines.append("failed checks:")
        lines.extend(textwrap.fill(f, width=width, initial_indent="  ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False) for f in failures)
    counts = report.counts()
    lines.append("")
    lines.append(f"{report.backend} backend: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return "\n".join(lines)


def progress_line(s: ScenarioResult) -> str:
    """One line for a scenario that just finished: result, name, checks passed, seconds."""
    if s.skipped is not None:
        return f"SKIP  {s.name} ({s.skipped})"
    ok = sum(c.ok for c in s.checks)
    extra = ", harness error" if s.error is not None else ""
    return f"{s.status:<4}  {s.name} ({ok}/{len(s.checks)} checks{extra}, {s.seconds:.1f} s)"
