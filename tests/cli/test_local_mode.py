"""`run` without directory flags: one local state directory per node, never /var/lib/kubelet or /var/run/cdi
unless in a cluster or told --kubelet-root (docs/cli.md "Local mode")."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from driver.commands import common
from driver.errors import InputError
from waiting import GENEROUS_S

DRIVER = "fake-dra.example.com"


def _ns(**kw) -> argparse.Namespace:
    base = dict(kubelet_root=None, kubelet_plugins_dir=None, kubelet_registry_dir=None, cdi_root=None, state_dir=None)
    base.update(kw)
    return argparse.Namespace(**base)


def test_local_defaults_go_under_one_state_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(common, "in_cluster", lambda: False)
    dirs = common.node_dirs(_ns(), DRIVER, "n1")
    root = tmp_path / "fake-dra" / "nodes" / "n1"
    assert dirs.local_root == root and dirs.origin == "local"
    assert (dirs.plugins, dirs.registry, dirs.cdi, dirs.state) == (
        root / "plugins", root / "plugins_registry", root / "cdi", root / "plugins" / DRIVER)


def test_in_a_cluster_and_with_kubelet_root_the_kubelet_paths(monkeypatch):
    monkeypatch.setattr(common, "in_cluster", lambda: True)
    dirs = common.node_dirs(_ns(), DRIVER, "n1")
    assert (dirs.plugins, dirs.registry, dirs.cdi) == (
        Path("/var/lib/kubelet/plugins"), Path("/var/lib/kubelet/plugins_registry"), Path("/var/run/cdi"))
    assert dirs.local_root is None and dirs.origin == "in-cluster"
    monkeypatch.setattr(common, "in_cluster", lambda: False)
    dirs = common.node_dirs(_ns(kubelet_root="/srv/kubelet"), DRIVER, "n1")
    assert (dirs.plugins, dirs.registry, dirs.cdi, dirs.origin) == (
        Path("/srv/kubelet/plugins"), Path("/srv/kubelet/plugins_registry"), Path("/var/run/cdi"), "--kubelet-root")


def test_explicit_flags_win_and_need_no_node(monkeypatch):
    monkeypatch.setattr(common, "in_cluster", lambda: False)
    dirs = common.node_dirs(_ns(kubelet_plugins_dir="/p", kubelet_registry_dir="/r", cdi_root="/c", state_dir="/s"),
                            DRIVER, None)
    assert (dirs.plugins, dirs.registry, dirs.cdi, dirs.state, dirs.local_root) == (
        Path("/p"), Path("/r"), Path("/c"), Path("/s"), None)
    probe = common.node_dirs(_ns(kubelet_plugins_dir="/p", kubelet_registry_dir="/r"), DRIVER, None, sockets_only=True)
    assert (probe.plugins, probe.registry) == (Path("/p"), Path("/r"))


def test_local_mode_needs_a_node_name_that_names_a_directory(monkeypatch):
    monkeypatch.setattr(common, "in_cluster", lambda: False)
    with pytest.raises(InputError, match="--node-name is required"):
        common.node_dirs(_ns(), DRIVER, None)
    for bad in ("..", "a/b", "../etc"):
        with pytest.raises(InputError, match="--node-name"):
            common.node_dirs(_ns(), DRIVER, bad)


@pytest.fixture
def short_state_home():
    # AF_UNIX socket paths are limited to 107 bytes: keep the state home short.
    root = Path(tempfile.mkdtemp(prefix="fdl-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_run_without_directory_flags_stays_in_the_state_directory(short_state_home):
    from driver.discovery import make_sysfs

    sysfs = short_state_home / "sys"
    make_sysfs("demo", sysfs)
    system_paths = [Path("/var/lib/kubelet/plugins") / DRIVER, Path("/var/lib/kubelet/plugins_registry"),
                    Path("/var/run/cdi")]
    existed = {p: p.exists() for p in system_paths}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_DRA_", "KUBE", "NODE_NAME"))}
    env["XDG_STATE_HOME"] = str(short_state_home)
    log = short_state_home / "run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "driver", "run", "--sysfs-root", str(sysfs), "--node-name", "n1",
                                 "--no-publish"], stdout=out, stderr=subprocess.STDOUT, env=env)
    node_dir = short_state_home / "fake-dra" / "nodes" / "n1"
    try:
        deadline = time.monotonic() + GENEROUS_S
        while not (node_dir / "plugins_registry" / f"{DRIVER}-reg.sock").exists():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        probe = subprocess.run([sys.executable, "-m", "driver", "probe", "--node-name", "n1"], env=env,
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode == 0, probe.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(GENEROUS_S) == 0
    text = log.read_text()
    assert f"local mode: sockets, CDI specs and checkpoint under {node_dir}" in text
    assert "inventory: 2 GPUs, 1 SR-IOV NIC with 8 VFs; devices by mode: 2 gpu," in text
    assert "restored 0 prepared claims" in text
    assert (node_dir / "plugins" / DRIVER).is_dir() and (node_dir / "cdi").is_dir()
    assert {p: p.exists() for p in system_paths} == existed


@pytest.mark.parametrize("command", ["run", "probe"])
def test_a_too_long_default_socket_path_names_what_made_it_long(tmp_path, monkeypatch, capsys, command):
    from driver.cli import main

    monkeypatch.setattr(common, "in_cluster", lambda: False)
    long_home = tmp_path / ("s" * 90)
    monkeypatch.setenv("XDG_STATE_HOME", str(long_home))
    assert main([command, "--node-name", "n1", "--sysfs-root", str(tmp_path)] if command == "run"
                else [command, "--node-name", "n1"]) == 2
    err = capsys.readouterr().err
    assert f"fake-dra {command}: socket path {long_home}/fake-dra/nodes/n1/" in err
    assert "over the AF_UNIX limit of 107" in err
    assert f"XDG_STATE_HOME={long_home}" in err and "--kubelet-root" in err and "shorter XDG_STATE_HOME" in err
    assert f"fake-dra {command}: --kubelet-plugins-dir:" not in err, "the user gave no such flag"
    assert not (long_home / "fake-dra" / "nodes" / "n1" / "plugins").exists()


def test_a_too_long_socket_path_under_kubelet_root_names_kubelet_root(tmp_path, capsys):
    from driver.cli import main

    root = tmp_path / ("k" * 100)
    assert main(["probe", "--kubelet-root", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"it is under --kubelet-root {root}; give a shorter --kubelet-root" in err


def test_a_too_long_socket_path_from_a_flag_still_names_the_flag(tmp_path, capsys):
    from driver.cli import main

    assert main(["probe", "--node-name", "n1", "--kubelet-plugins-dir", str(tmp_path / ("p" * 100))]) == 2
    assert "fake-dra probe: --kubelet-plugins-dir: socket path" in capsys.readouterr().err
