"""Ready for Kubernetes 1.38: no kind config, overlay or chart default names a gate the target
release lacks (1.38 removed DynamicResourceAllocation, kubernetes/kubernetes#141946), and
hack/kind-create.sh refuses, before creating anything, a config whose gates the node image's release
does not have (hack/kind_gates.py, the tables of driver/features.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from driver.features import KUBERNETES_VERSIONS, gates_of, parse_gates

from .kustomize import OVERLAYS, ROOT, overlay_names, plugin_env, render

KIND_CONFIG = ROOT / "hack" / "kind-config.yaml"
SCRIPT = ROOT / "hack" / "kind_gates.py"


def _kind_gates(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("version", ["1.37", "1.38"])
def test_the_kind_config_fits_1_37_and_1_38(version: str) -> None:
    gates = yaml.safe_load(KIND_CONFIG.read_text())["featureGates"]
    assert set(gates) <= set(gates_of(version))
    done = _kind_gates("--version", version, str(KIND_CONFIG))
    assert done.returncode == 0, done.stderr


def test_the_kind_config_is_refused_for_1_36_naming_each_gate() -> None:
    done = _kind_gates("--image", "kindest/node:v1.36.4@sha256:abc", str(KIND_CONFIG))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert any(ln.startswith(f"{KIND_CONFIG}: featureGates.DRADeviceCompatibilityGroups: not a feature gate of Kubernetes 1.36")
               for ln in lines), done.stderr
    assert any("featureGates.DRAFractionalCapacityRange" in ln for ln in lines)


def test_a_config_naming_dynamic_resource_allocation_is_refused_for_1_38(tmp_path: Path) -> None:
    config = tmp_path / "kind.yaml"
    config.write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nfeatureGates:\n"
                      "  DynamicResourceAllocation: true  # fine up to 1.37\n  DRAPartitionableDevices: true\nnodes: []\n")
    assert _kind_gates("--version", "v1.37.1", str(config)).returncode == 0
    done = _kind_gates("--version", "v1.38.0", str(config))
    assert done.returncode == 2
    assert f"{config}: featureGates.DynamicResourceAllocation: not a feature gate of Kubernetes 1.38" in done.stderr
    assert "#141946" in done.stderr


def test_flow_style_gates_and_locked_values(tmp_path: Path) -> None:
    config = tmp_path / "kind.yaml"
    config.write_text("featureGates: {DRADeviceTaints: false, DRAPartitionableDevices: true}\n")
    done = _kind_gates("--version", "1.38", str(config))
    assert done.returncode == 2 and "featureGates.DRADeviceTaints: locked to true in Kubernetes 1.38" in done.stderr
    assert _kind_gates("--version", "1.37", str(config)).returncode == 0


@pytest.mark.parametrize(("args", "said"), [
    (["--image", "kindest/node:latest"], "no version in the tag; feature gates not checked"),
    (["--version", "1.41"], "no gate table for Kubernetes 1.41"),
])
def test_unknown_releases_are_said_and_not_blocked(args: list[str], said: str) -> None:
    done = _kind_gates(*args, str(KIND_CONFIG))
    assert done.returncode == 0 and said in done.stderr


def test_bad_input_is_one_line() -> None:
    done = _kind_gates("--version", "one.thirty", str(KIND_CONFIG))
    assert done.returncode == 2 and "is not a Kubernetes version" in done.stderr and "Traceback" not in done.stderr
    done = _kind_gates("--version", "1.37", "/nonexistent/kind.yaml")
    assert done.returncode == 2 and "/nonexistent/kind.yaml" in done.stderr and "Traceback" not in done.stderr


def test_kind_create_checks_the_gates_before_creating_a_cluster(tmp_path: Path) -> None:
    """A 1.36 node image with the project's config: refused, and `kind create` never runs."""
    calls = tmp_path / "calls"
    kind = tmp_path / "kind"
    kind.write_text(f"#!/usr/bin/env bash\necho \"$*\" >> {calls}\n")
    kind.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIND", "FAKE_DRA_"))}
    env.update(KIND=str(kind), KUBECTL="true", KIND_NODE_IMAGE="kindest/node:v1.36.2", PYTHON=sys.executable)
    done = subprocess.run(["bash", "hack/kind-create.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "featureGates.DRADeviceCompatibilityGroups: not a feature gate of Kubernetes 1.36" in done.stderr
    assert "create" not in (calls.read_text() if calls.exists() else "")


def _named_gates() -> dict[str, dict[str, bool]]:
    """Every place the project hands gates to a cluster or the plugin: the kind config, each overlay's
    FAKE_DRA_FEATURES and the chart's default featureGates."""
    out = {"hack/kind-config.yaml": yaml.safe_load(KIND_CONFIG.read_text())["featureGates"]}
    for overlay in overlay_names():
        out[f"deploy/overlays/{overlay}"] = parse_gates(plugin_env(render(OVERLAYS / overlay)).get("FAKE_DRA_FEATURES"))
    out["deploy/helm/fake-dra/values.yaml"] = yaml.safe_load(
        (ROOT / "deploy" / "helm" / "fake-dra" / "values.yaml").read_text())["featureGates"]
    return out


@pytest.mark.parametrize("version", [v for v in KUBERNETES_VERSIONS if v >= "1.37"])
def test_nothing_shipped_names_a_gate_the_release_lacks(version: str) -> None:
    for where, gates in _named_gates().items():
        missing = set(gates) - set(gates_of(version))
        assert not missing, f"{where} names {sorted(missing)}, which Kubernetes {version} does not have"


def test_no_script_or_config_names_the_removed_gate() -> None:
    """The kind scripts, configs and manifests never pass DynamicResourceAllocation (a 1.38 component
    refuses to start with it); prose may mention it, configs may not."""
    for path in [*ROOT.glob("hack/*.sh"), *ROOT.glob("hack/*.yaml"), *(ROOT / "deploy").rglob("*.yaml")]:
        for line in path.read_text().splitlines():
            if line.lstrip().startswith("#"):
                continue
            assert not re.search(r"DynamicResourceAllocation\s*[:=]", line), f"{path.relative_to(ROOT)}: {line.strip()}"
