"""Lock waits that end, and say on whom they waited (issue 18 item 4, issue 17's second `run`).

Before: a second `fake-dra run` for a node that another process serves waited silently for ever,
and anyone who could open `STORE/.lock` and flock it made `run` hang at start (it never served) and
`apply`/`delete` hang silently.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from plugin.harness import REPO
from waiting import GENEROUS_S, wait_for_text

pytestmark = pytest.mark.slow


def _hold(path) -> subprocess.Popen[bytes]:
    """Another local user's process that flocks `path` and keeps it (as a hostile or stuck one would)."""
    proc = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
                             "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)", str(path)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
    return proc


def test_a_second_run_for_a_served_node_names_the_holder_and_gives_up_after_its_bound(make_plugin):
    first = make_plugin()
    first.start()
    second = make_plugin(root=first.root, extra_args=("--wait-for-lock", "1"))
    started = time.monotonic()
    text = second.refused(second.spawn(), f"PID {first.proc.pid} (", "gave up after 1 s (--wait-for-lock",
                          "another plugin process owns the state directory")
    assert time.monotonic() - started < GENEROUS_S  # it gave up: it did not wait for ever
    # The holder is named at once, while waiting (a rolling update's successor logs it and waits on).
    waiting = next(line for line in text.splitlines() if "waiting up to 1 s (--wait-for-lock)" in line)
    assert f"PID {first.proc.pid}" in waiting
    assert first.proc.poll() is None and first.client().prepare([]) == {}, "the first process is untouched"
    # What the owner recorded in its lock file (read across PID namespaces, where /proc/locks shows 0).
    assert (first.state / "lock").read_text().startswith(f"pid={first.proc.pid} host=")
    assert first.stop() == 0


def test_wait_for_lock_forever_waits_for_the_predecessor(make_plugin):
    first = make_plugin()
    first.start()
    second = make_plugin(root=first.root, extra_args=("--wait-for-lock", "forever"))
    second.spawn()
    wait_for_text(second.log_text, "waiting without a bound")
    assert second.proc.poll() is None, second.log_text()
    assert first.stop() == 0
    second.wait_registered()
    assert second.stop() == 0


@pytest.mark.parametrize("value,needle", [("nan", "expected a finite number of seconds"),
                                          ("-1", "must be zero, positive or 'forever'"),
                                          ("soon", "expected seconds")])
def test_wait_for_lock_values(make_plugin, value, needle):
    plugin = make_plugin(extra_args=("--wait-for-lock", value))
    plugin.refused(plugin.spawn(), f"--wait-for-lock: {needle}")


def test_a_hostile_store_lock_holder_stalls_neither_run_nor_apply_for_ever(make_plugin, tmp_path):
    plugin = make_plugin()
    plugin.store_dir.mkdir(parents=True)
    holder = _hold(plugin.store_dir / ".lock")
    try:
        manifest = tmp_path / "c.yaml"
        manifest.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: "
                            "default}\nspec: {devices: {requests: []}}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_DRA_", "KUBE"))}
        started = time.monotonic()
        apply = subprocess.Popen([sys.executable, "-m", "driver", "apply", "-f", str(manifest), "--store",
                                  str(plugin.store_dir)], cwd=REPO, env=env, stderr=subprocess.PIPE)
        run = plugin.spawn()  # seeds its DeviceClasses into the store at start
        _, err = apply.communicate(timeout=GENEROUS_S)
        text = plugin.refused(run, f"PID {holder.pid} (", str(plugin.store_dir / ".lock"), "for more than 10 s")
        assert time.monotonic() - started < GENEROUS_S  # both gave up after their 10 s: neither waited for ever
        assert apply.returncode == 2 and f"PID {holder.pid} (" in err.decode(), err.decode()
        assert "Traceback" not in err.decode() and "Traceback" not in text
    finally:
        holder.kill()
        holder.wait()
    assert plugin.start() is not None  # the holder gone, the same store serves at once
    assert plugin.stop() == 0
