"""--personality on the commands: slices, publish (one pool per driver), show, demo, e2e --list,
make-sysfs --gpus; and the two-driver `run` through the e2e scenario that uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from driver.cli import main
from driver.discovery import make_sysfs
from driver.store import ObjectStore


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pers") / "sys"
    make_sysfs("h100", root, 2)
    return root


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_slices_prints_every_driver_of_the_personality(sysfs: Path, capsys) -> None:
    code, out, _ = _run(capsys, "slices", "--sysfs-root", str(sysfs), "--node-name", "n1", "--personality", "nvidia")
    docs = list(yaml.safe_load_all(out))
    assert code == 0 and [d["metadata"]["name"] for d in docs] == [
        "00000-gpu.nvidia.com-n1", "00000-sriovnetwork.k8snetworkplumbingwg.io-n1"]
    code, out, _ = _run(capsys, "slices", "--sysfs-root", str(sysfs), "--node-name", "n1", "--personality", "nvidia",
                        "--driver-name", "sriovnetwork.k8snetworkplumbingwg.io", "-o", "json")
    assert [s["spec"]["driver"] for s in json.loads(out)["items"]] == ["sriovnetwork.k8snetworkplumbingwg.io"]


def test_sections_a_personality_does_not_read_are_named(sysfs: Path, tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("nvidia:\n  featureGates: {DynamicMIG: true}\n")
    code, _, err = _run(capsys, "slices", "--sysfs-root", str(sysfs), "--node-name", "n1", "--driver-config", str(config))
    assert code == 0
    assert "section 'nvidia' is not read by personality 'fake-dra'" in err


def test_publish_once_reconciles_one_pool_per_driver(sysfs: Path, tmp_path: Path, capsys) -> None:
    argv = ("publish", "--once", "--sysfs-root", str(sysfs), "--node-name", "n1", "--store", str(tmp_path / "store"),
            "--personality", "nvidia")
    code, out, _ = _run(capsys, *argv, "-o", "json")
    stats = json.loads(out)
    assert code == 0 and [s["driver"] for s in stats] == ["gpu.nvidia.com", "sriovnetwork.k8snetworkplumbingwg.io"]
    assert [s["devices"] for s in stats] == [2, 32]  # --gpus trims GPUs only: 4 ConnectX-7 x 8 VFs stay
    code, out, _ = _run(capsys, *argv)
    assert out.startswith("driver=gpu.nvidia.com\nbackend=store slices=1 devices=2")
    stored = ObjectStore(tmp_path / "store").names("resourceslices")
    assert stored == ["00000-gpu.nvidia.com-n1", "00000-sriovnetwork.k8snetworkplumbingwg.io-n1"]


def test_show_lists_what_the_personality_publishes(sysfs: Path, capsys) -> None:
    code, out, _ = _run(capsys, "show", "--sysfs-root", str(sysfs), "--personality", "nvidia")
    assert code == 0 and "As the nvidia personality publishes it on node node-1:" in out
    assert "gpu.nvidia.com: 1 slice, 2 devices" in out and "0000-1d-00-1" in out


def test_demo_inventory_as_the_personality(capsys) -> None:
    code, out, _ = _run(capsys, "demo", "--personality", "nvidia", "--inventory-only")
    assert code == 0 and "as the nvidia personality publishes them" in out
    assert "gpu.nvidia.com: 1 slices in pool 'node-1'" in out and "GPU partition map" not in out


def test_e2e_lists_a_personalitys_scenarios(capsys) -> None:
    code, out, _ = _run(capsys, "e2e", "--list", "--personality", "nvidia")
    assert code == 0 and out.startswith("nvidia-passthrough-sibling") and "[nvidia]" in out
    assert len(out.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_passthrough_scenario_runs_both_plugins(capsys) -> None:
    """The local e2e backend runs `fake-dra run --personality nvidia` (the GPU and SR-IOV plugins in one
    process, each with its own sockets and --state-dir subdirectory) and plays the kubelet."""
    code, out, _ = _run(capsys, "e2e", "--scenario", "nvidia-passthrough-sibling")
    assert code == 0, out


def test_make_sysfs_keeps_the_first_gpus(tmp_path: Path, capsys) -> None:
    code, out, _ = _run(capsys, "make-sysfs", "--profile", "dgx-a100", "--gpus", "3", "--out", str(tmp_path / "s"))
    assert code == 0 and "with its first 3 GPUs" in out
    code, out, _ = _run(capsys, "discover", "--sysfs-root", str(tmp_path / "s"), "-o", "json")
    found = json.loads(out)
    assert [g["address"] for g in found["gpus"]] == ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0"]
    assert len(found["nics"]) == 10  # NICs, switches and the rest stay
