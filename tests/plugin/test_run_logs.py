"""What `fake-dra run` tells a person in its text log: inventory at start, each prepare/unprepare with
claim and devices, every health transition with device and message, restored claims after a restart;
values printed as values, never as Python reprs."""

from __future__ import annotations

import re
import subprocess
import sys

from plugin.harness import REPO, request
from waiting import wait_for_text


def _wait_for(plugin, needle: str) -> str:
    return wait_for_text(plugin.log_text, needle)


def test_run_logs_inventory_claims_health_and_restore(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    mig = plugin.allocate("mig", [request("gpu", "mig")])
    out = client.prepare([mig])
    device = out[mig[2]].devices[0].device_name
    text = _wait_for(plugin, "prepared claim")
    assert "inventory: 2 GPUs, 1 SR-IOV NIC with 8 VFs; devices by mode:" in text
    assert re.search(rf"INFO fake-dra\.state: prepared claim claim=default/mig uid={mig[2]} devices={device}\b", text)

    subprocess.run([sys.executable, "-m", "driver", "fault", "--sysfs-root", str(plugin.sysfs), "--device",
                    "0000:0F:00.0", "--message", "XID 79: GPU has fallen off the bus"], check=True, cwd=REPO)
    text = _wait_for(plugin, "devices unhealthy")
    line = next(ln for ln in text.splitlines() if "devices unhealthy" in ln)
    assert "devices=gpu-1," in line and 'reason="0000:0f:00.0: XID 79: GPU has fallen off the bus"' in line
    subprocess.run([sys.executable, "-m", "driver", "fault", "--sysfs-root", str(plugin.sysfs), "--device",
                    "00000000:0f:00.0", "--clear"], check=True, cwd=REPO)
    _wait_for(plugin, "devices healthy again devices=gpu-1,")

    assert plugin.stop() == 0
    plugin.start()
    text = _wait_for(plugin, "restored 1 prepared claims")
    client = plugin.client()
    assert client.unprepare([mig]) == {mig[2]: ""}
    text = _wait_for(plugin, "unprepared claim")
    assert re.search(rf"unprepared claim claim=default/mig uid={mig[2]} devices={device}\b", text)
    assert plugin.stop() == 0
    # Values, not reprs: no list brackets with quotes, no dict braces, in any extra field.
    assert not re.search(r"=\[['\"]|=\{['\"]", plugin.log_text())


def test_run_on_a_tree_without_devices_warns_and_says_what_to_give(tmp_path):
    # A typo'd --sysfs-root (or the real /sys of a laptop) serves an empty pool: say so, and how to
    # get a fake node, instead of a healthy-looking start that fails only at the first claim.
    from plugin.harness import Plugin

    empty = tmp_path / "empty-sys"
    empty.mkdir()
    plugin = Plugin(empty)
    try:
        plugin.start()
        text = _wait_for(plugin, "inventory: 0 GPUs")
        line = next(ln for ln in text.splitlines() if "no GPUs or SR-IOV NICs" in ln)
        assert "WARNING" in line and f"--sysfs-root {plugin.sysfs}" in line and "fake-dra make-sysfs" in line
    finally:
        plugin.stop()
        import shutil

        shutil.rmtree(plugin.root, ignore_errors=True)
