"""Every bundled scenario on the local backend: real plugin process, real sockets, reference allocator.

The scenarios run once per test session (side by side, each with its own plugin and directories)
and each becomes its own test, so a failure names the scenario and the diverging checks.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import yaml

from driver.cli import main
from driver.e2e.local import LocalBackend
from driver.e2e.manifests import claim_object
from driver.e2e.report import RunReport, summarize_failures
from driver.e2e.runner import run_all
from driver.e2e.scenario import load_scenarios

pytestmark = pytest.mark.slow
SCENARIOS = load_scenarios()


@pytest.fixture(scope="module")
def report() -> RunReport:
    return run_all(SCENARIOS, LocalBackend, claim_object, jobs=2)


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_scenario_passes_locally(report: RunReport, name: str) -> None:
    (result,) = [r for r in report.scenarios if r.name == name]
    assert result.ok, "\n".join(summarize_failures([result]))
    assert result.checks, "a scenario that checks nothing proves nothing"


def test_whole_local_run_is_fast_enough(report: RunReport) -> None:
    # The bound is 5 minutes for all scenarios; per scenario we stay far below it.
    assert max(r.seconds for r in report.scenarios) < 120


WRONG = {
    "name": "wrong-on-purpose",
    "reason": "Claims MIG next to a vGPU schedules; the harness must report that it does not.",
    "steps": [
        {"action": "claim", "name": "vgpu", "requests": [
            {"name": "gpu", "class": "vgpu", "selector": 'device.attributes["fake-dra.example.com"].profile == "A100X-4C"'}]},
        {"action": "pod", "name": "p1", "claims": ["vgpu"], "expect": {"scheduled": True, "prepared": True}},
        {"action": "claim", "name": "mig", "requests": [
            {"name": "gpu", "class": "mig",
             "selector": 'device.attributes["fake-dra.example.com"].parentUUID == "${claim:vgpu.parentUUID}"'}]},
        {"action": "pod", "name": "p2", "claims": ["mig"], "expect": {"scheduled": True}},
    ],
}


def test_cli_reports_a_wrong_expectation_as_failure(tmp_path, capsys) -> None:
    (tmp_path / "wrong.yaml").write_text(yaml.safe_dump(WRONG))
    junit = tmp_path / "junit.xml"
    code = main(["e2e", "--scenarios-dir", str(tmp_path), "--junit", str(junit), "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "groups incompatible" in out and "FAIL" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1"
    assert "4. pod p2: scheduled: expected yes" in suite.find("testcase/failure").text


def test_cli_list_and_bad_input(capsys) -> None:
    assert main(["e2e", "--list"]) == 0
    assert "mig-then-vgpu" in capsys.readouterr().out
    assert main(["e2e", "--scenario", "no-such-scenario"]) == 2
    assert "unknown scenario no-such-scenario" in capsys.readouterr().err
    assert main(["e2e", "--jobs", "0", "--scenario", "tour"]) == 2
