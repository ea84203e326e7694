"""`fake-dra publish` as a long-running process: SIGHUP re-scans the inventory, SIGTERM leaves slices."""

from __future__ import annotations

import os
import signal
import socket
import urllib.request
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driver.discovery.fakesysfs import make_sysfs
from driver.store import ObjectStore

ROOT = Path(__file__).resolve().parents[2]


def _devices(store: Path) -> set[str]:
    names = set()
    for obj in ObjectStore(store).list("resourceslices"):
        names |= {d["name"] for d in (obj or {}).get("spec", {}).get("devices", [])}
    return names


def _wait(cond, timeout=30.0):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow
def test_sighup_rescans_and_sigterm_leaves_slices(tmp_path):
    make_sysfs("demo", tmp_path / "demo")
    make_sysfs("no-gpu", tmp_path / "nogpu")
    root = tmp_path / "sys"
    root.symlink_to(tmp_path / "demo")
    store = tmp_path / "store"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "driver", "--log-level", "WARNING", "publish", "--sysfs-root", str(root),
         "--node-name", "n1", "--store", str(store), "--interval", "3600", "--metrics-addr", f"127.0.0.1:{port}"],
        cwd=ROOT, env={**os.environ, "KUBECONFIG": ""}, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait(lambda: any(n.startswith("gpu-") for n in _devices(store))), "first publish did not happen"
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'fake_dra_feature_gate_enabled{component="effective",gate="DRADeviceCompatibilityGroups"} 1.0' in metrics
        root.unlink()
        root.symlink_to(tmp_path / "nogpu")  # the GPUs are gone (hot-unplug)
        proc.send_signal(signal.SIGHUP)
        assert _wait(lambda: not any(n.startswith("gpu-") for n in _devices(store))), "SIGHUP did not re-scan"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert ObjectStore(store).names("resourceslices"), "slices must stay after shutdown"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
