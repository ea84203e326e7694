"""Start-up: a command loads what it needs, not every command's dependencies nor the CEL library's shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "allocator" / "fixtures"


def loaded_after(argv: list[str], tmp_path: Path) -> set[str]:
    """The modules loaded once `fake-dra ARGV` ran (in a fresh interpreter)."""
    code = ("import json, sys; from driver.cli import main; code = main(sys.argv[1:]); "
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr); sys.exit(code)")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def test_allocate_evaluates_cel_without_the_cel_shell_or_other_commands(tmp_path):
    claim = tmp_path / "claim.yaml"
    claim.write_text("{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c}, spec: {devices: "
                     "{requests: [{name: r, exactly: {deviceClassName: mig.fake-dra.example.com, selectors: [{cel: "
                     "{expression: 'device.attributes[\"fake-dra.example.com\"].profile.startsWith(\"1g\")'}}]}}]}}}\n")
    modules = loaded_after(["allocate", "--node-name", "node-1", str(FIXTURES / "a100-2gpu.yaml"), str(claim)], tmp_path)
    assert "cel.cel" in modules  # the selector needed the CEL library itself
    assert not {m for m in modules if m.split(".")[0] in ("prompt_toolkit", "rich", "typer", "click")}
    assert "cel.cli" not in modules
    assert not {m for m in modules if m.startswith(("driver.plugin", "driver.commands.run", "driver.slices",
                                                      "driver.discovery", "grpc", "kubernetes"))}


def test_the_cel_package_still_offers_its_shell_to_whoever_asks():
    code = ("from driver.celexpr import compile_selector; compile_selector('device.driver == \"x\"', 'w'); "
            "import cel; print(cel.compile is not None, cel.cli.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "cel.cli"]


def test_help_and_usage_errors_still_list_every_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "driver", "--help"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 0 and "allocate" in out.stdout and "run" in out.stdout and "make-sysfs" in out.stdout
