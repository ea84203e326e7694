"""The report table and JUnit XML say which scenario, step and check failed, and what was seen."""

from __future__ import annotations

import xml.etree.ElementTree as ET

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
    path = tmp_path / "out" / "e2e.xml"
    write_junit(_report(), path)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "2" and suite.get("skipped") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["good"].find("failure") is None
    assert "unschedulable" in cases["bad"].find("failure").text
    assert "plugin exited" in cases["crashed"].find("failure").get("message")
    assert cases["skipped"].find("skipped").get("message") == "needs valueFrom"
