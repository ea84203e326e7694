"""`fake-dra demo`: the README's main command shows every section a newcomer needs."""

from __future__ import annotations

import argparse
import io
import re

import pytest

from driver.cli import main
from driver.commands import demo


def _args(**kw) -> argparse.Namespace:
    base = {"profile": "demo", "scenario": [], "inventory_only": False, "junit": None, "features": None}
    base.update(kw)
    return argparse.Namespace(**base)


def test_inventory_only_sections() -> None:
    out = io.StringIO()
    assert demo.run(_args(inventory_only=True), out) == 0
    text = out.getvalue()
    assert "== Node inventory" in text and "NVIDIA A100-SXM4-40GB" in text and "vGPU types: 6" in text
    assert "== ResourceSlices of node node-1" in text and "compatibility groups: mig" in text
    assert "counter set nic-0-counters: bandwidth=100G" in text
    assert "== GPU partition map (before" in text and "MIG slices     [. . . . . . . .]  free" in text


def test_gates_change_what_is_published() -> None:
    out = io.StringIO()
    demo.run(_args(inventory_only=True, features="DRADeviceCompatibilityGroups=false"), out)
    text = out.getvalue()
    assert "gates off: DRADeviceCompatibilityGroups" in text
    assert "vgpu" not in text.split("== ResourceSlices")[1].split("==")[0], "single-mode inventory: no vGPUs"


@pytest.mark.slow
def test_demo_with_tour(tmp_path) -> None:
    out = io.StringIO()
    junit = tmp_path / "demo.xml"
    code = demo.run(_args(scenario=["tour"], junit=str(junit)), out)
    text = out.getvalue()
    assert code == 0, text[text.find("== E2E report"):]
    for section in ("== Node inventory", "== ResourceSlices", "== GPU partition map (before",
                    "== Scenario 'tour' step by step", "== E2E report", "== GPU partition map (after scenario 'tour')"):
        assert section in text, section
    after = text.split("(after scenario 'tour')")[1]
    assert "[A A A A B B . .]" in after, "3g.20gb at 0 and two 1g.5gb at 4, 5 on gpu-0"
    assert "vGPU           1 in use" in after
    assert "bandwidth left 10G" in after
    assert "groups incompatible" in text
    assert re.search(r"^tour\s+PASS\s+25/25", text, re.M), "the tour passes every check"
    assert junit.is_file()
    assert re.search(r"^  PASS  tour \(25/25 checks, \d+\.\d s\), with DRASharedConsumableCapacity=true$", text,
                     re.M), "progress line as it finished, saying the tour turns KEP-5941 valueFrom on"
    assert "  3. claim infer: request gpu: 2 x mig where profile == \"1g.5gb\"" in text, "the claim steps are shown"
    assert all(len(line) <= 100 or len(line.split()) == 1 for line in text.splitlines()), \
        "fits a 100-column terminal; only a token longer than its column (a CDI ID) stands out, whole"


def test_unknown_profile_is_an_input_error(capsys) -> None:
    assert main(["demo", "--profile", "nope", "--inventory-only"]) == 2
    assert "unknown sysfs profile 'nope'" in capsys.readouterr().err


def test_other_profile_needs_inventory_only(capsys) -> None:
    assert main(["demo", "--profile", "dgx-a100"]) == 2
    err = capsys.readouterr().err
    assert "--profile dgx-a100: the e2e scenarios are written for the 'demo' node" in err
    out = io.StringIO()
    assert demo.run(_args(profile="dgx-a100", inventory_only=True), out) == 0
    assert "fake sysfs profile 'dgx-a100'" in out.getvalue() and "gpu-7" in out.getvalue()


def test_features_reach_every_scenario(monkeypatch) -> None:
    from driver.e2e import runner
    from driver.e2e.report import RunReport

    seen = {}

    def fake_run_all(scenarios, *args, **kw):
        seen.update({s.name: s.features for s in scenarios})
        return RunReport("local", [])

    monkeypatch.setattr(runner, "run_all", fake_run_all)
    out = io.StringIO()
    demo.run(_args(features="DRADeviceCompatibilityGroups=false"), out)
    assert len(seen) > 5 and all(not f.compatibility_groups for f in seen.values())
    # A scenario's own gates stay unless --features names them.
    assert seen["vf-bandwidth"].shared_consumable_capacity
    assert "--features: every scenario runs with DRADeviceCompatibilityGroups=false" in out.getvalue()


@pytest.mark.slow
def test_features_change_the_outcome_and_progress_is_printed() -> None:
    out = io.StringIO()
    code = demo.run(_args(scenario=["vf-bandwidth"], features="DRASharedConsumableCapacity=false"), out)
    text = out.getvalue()
    # Without valueFrom each VF owns a static 12.5G share: the 60G request is refused, so checks fail.
    assert code == 1
    assert re.search(r"^  FAIL  vf-bandwidth \(\d+/\d+ checks, \d+\.\d s\)$", text, re.M), text
    assert all(len(line) <= 100 for line in text.splitlines())


def test_step_lines_say_what_is_requested() -> None:
    from driver.e2e.scenario import load_scenarios

    (tour,) = load_scenarios(names=["tour"])
    lines = demo.step_lines(tour)
    assert lines[0] == '  1. claim train: request gpu: 1 x mig where profile == "3g.20gb" && parentUUID == <uuid of gpu-0>'
    assert any(line.startswith(" 11. claim vf-storage: request vf: 1 x vf with bandwidth 60G") for line in lines)
    assert any("pod skewed uses claim mig-next-to-vgpu (scheduled by a scheduler that ignores" in line for line in lines)
    assert all(len(line) <= 100 for line in "\n".join(lines).splitlines())


def test_the_demo_says_which_gates_a_scenario_changes() -> None:
    from driver.e2e.scenario import load_scenarios
    from driver.features import Features

    by_name = {s.name: s for s in load_scenarios()}
    assert demo.gate_note(by_name["vf-bandwidth"].features) == ", with DRASharedConsumableCapacity=true"
    assert demo.gate_note(by_name["two-mig-share-gpu"].features) == ""
    assert "DRADeviceCompatibilityGroups=false" in demo.gate_note(by_name["gate-off-single-mode"].features)
    assert demo.gate_note(Features()) == ""
