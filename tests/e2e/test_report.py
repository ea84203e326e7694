"""The report table and JUnit XML say which scenario, step and check failed, and what was seen."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from driver.e2e.report import Check, RunReport, ScenarioResult, render_summary, render_table, write_junit


def _report() -> RunReport:
    good = ScenarioResult("good", "works", [Check("1. pod a", "scheduled", "yes", "yes", True)], seconds=1.0)
    bad = ScenarioResult("bad", "breaks", [
        Check("1. pod a", "scheduled", "yes", "yes", True),
        Check("2. pod b", "unschedulable", "reason contains groups", "scheduled", False),
    ], seconds=2.0)
    crashed = ScenarioResult("crashed", "harness", error="setup: plugin exited with code 2")
    skipped = ScenarioResult("skipped", "kind only", skipped="needs valueFrom")
    return RunReport("local", [good, bad, crashed, skipped])


def test_counts_and_ok() -> None:
    r = _report()
    assert r.counts() == {"PASS": 1, "FAIL": 2, "SKIP": 1}
    assert not r.ok
    assert RunReport("local", [r.scenarios[0], r.scenarios[3]]).ok


def test_table_shows_expected_and_observed() -> None:
    text = render_table(_report(), width=120)
    assert "reason contains groups" in text and "FAIL" in text
    assert "plugin exited with code 2" in text
    assert "skipped: needs valueFrom" in text
    assert "1 passed, 2 failed, 1 skipped" in text
    assert all(len(line) <= 120 for line in text.splitlines())


def test_summary_lists_failed_checks() -> None:
    text = render_summary(_report())
    assert "bad 2. pod b: unschedulable: expected reason contains groups, observed scheduled" in text


def test_junit(tmp_path) -> None:
    path = tmp_path / "e2e.xml"
    write_junit(_report(), path)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "2" and suite.get("skipped") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["good"].find("failure") is None
    assert "unschedulable" in cases["bad"].find("failure").text
    assert "plugin exited" in cases["crashed"].find("failure").get("message")
    assert cases["skipped"].find("skipped").get("message") == "needs valueFrom"


def test_junit_never_creates_a_missing_directory(tmp_path) -> None:
    # The CLI checks --junit's directory before the run (commands.common.output_file); a directory
    # that vanished meanwhile is an error for the boundary, not a tree grown from a typo.
    with pytest.raises(FileNotFoundError):
        write_junit(_report(), tmp_path / "typo" / "e2e.xml")
    assert list(tmp_path.iterdir()) == []


def test_tables_fit_100_columns_and_never_cut_a_token() -> None:
    cdi = "k8s.fake-dra.example.com/device=<claim>-gpu-0-mig-1g5gb-4"
    env = "FAKE_DRA_*_PROFILE: FAKE_DRA_GPU_0_MIG_3G20GB_0_PROFILE=3g.20gb"
    long_reason = ("claim fake-dra-e2e/mig-next-to-vgpu: cannot be allocated: request gpu: needs 1 device(s), 7 match "
                   "the selectors, 0 usable (7 blocked: groups incompatible on counter set gpu-1-counters)")
    s = ScenarioResult("tour", "A scenario whose reason is a long sentence that would not fit on one line of a "
                       "hundred columns at all", [
                           Check("4. pod inference", "CDI devices", "2", f"2: {cdi}, {cdi}", True),
                           Check("4. pod inference", "env", "FAKE_DRA_*_PROFILE=3g.20gb", env, True),
                           Check("8. pod refused", "unschedulable", "reason contains groups incompatible",
                                 long_reason, True)], seconds=1.4)
    report = RunReport("local", [s])
    for text in (render_table(report), render_summary(report)):
        lines = text.splitlines()
        assert all(len(line) <= 100 or len(line.split()) == 1 for line in lines), text
        words = text.split()
        for token in (cdi + ",", env.split()[1], "gpu-1-counters)") if text.startswith("tour:") else ("hundred",):
            assert token in words, f"{token!r} cut in:\n{text}"
    table = render_table(report)
    assert table.count("4. pod inference") == 1, "a step's label is shown on its first row only"
