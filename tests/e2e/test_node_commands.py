"""The DaemonSet's helper commands: `node-sysfs` (init step) and `probe` (liveness)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.cli import main
from driver.commands.node_sysfs import MARKER, choose_profile, prepare_out
from driver.e2e.plugin_proc import PluginDirs, PluginProcess
from driver.errors import InputError
from driver.features import Features


def test_choose_profile_from_label_or_default() -> None:
    label = "fake-dra.example.com/profile"
    assert choose_profile({label: "dgx-a100"}, label, "demo") == "dgx-a100"
    assert choose_profile({}, label, "demo") == "demo"
    with pytest.raises(InputError, match="names no fake sysfs profile"):
        choose_profile({label: "cray-1"}, label, "demo")


def test_node_sysfs_rewrites_its_own_tree_only(tmp_path: Path) -> None:
    out = tmp_path / "sysfs"
    assert main(["node-sysfs", "--out", str(out), "--profile", "h100"]) == 0
    assert (out / MARKER).read_text() == "h100\n"
    assert main(["node-sysfs", "--out", str(out), "--profile", "demo"]) == 0, "restart regenerates"
    assert (out / MARKER).read_text() == "demo\n"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious").write_text("x")
    with pytest.raises(InputError, match="refusing to overwrite"):
        prepare_out(foreign)
    assert (foreign / "precious").exists()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(InputError, match=r"--out .*file is not a directory"):
        prepare_out(a_file)
    assert a_file.read_text() == "x"


def test_node_sysfs_needs_a_node_name_without_profile(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    monkeypatch.delenv("FAKE_DRA_NODE_NAME", raising=False)
    assert main(["node-sysfs", "--out", str(tmp_path / "o"), "--node-name", ""]) == 2
    assert "--node-name is required" in capsys.readouterr().err


def test_probe_against_a_running_plugin_and_without_one(tmp_path: Path, capsys) -> None:
    from driver.discovery import make_sysfs

    dirs = PluginDirs(Path(tempfile.mkdtemp(prefix="fdra-probe-", dir="/tmp")))
    make_sysfs("no-gpu", dirs.sysfs)
    plugin = PluginProcess(dirs, node_name="n1", driver_name=DEFAULT_DRIVER_NAME, features=Features())
    flags = ["--kubelet-plugins-dir", str(dirs.plugins), "--kubelet-registry-dir", str(dirs.registry)]
    try:
        plugin.start()
        assert main(["probe", *flags]) == 0
    finally:
        plugin.stop("TERM")
    try:
        assert main(["probe", *flags]) == 1
    finally:
        shutil.rmtree(dirs.root, ignore_errors=True)
    assert "does not exist" in capsys.readouterr().err
