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


def test_unknown_profile_is_an_input_error(capsys) -> None:
    assert main(["demo", "--profile", "nope", "--inventory-only"]) == 2
    assert "unknown sysfs profile 'nope'" in capsys.readouterr().err
