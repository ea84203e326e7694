"""Start-up faults and process-level holes: each is a clear error (exit 2, naming the path) or is
handled, never a traceback; sockets, modes and leftovers of a previous process are dealt with."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from driver.state.checkpoint import CheckpointStore
from plugin.harness import DRIVER, Plugin, request
from waiting import GENEROUS_S, wait_for_text


def _fails_cleanly(plugin: Plugin, *needles: str, env: dict[str, str] | None = None, preexec=None) -> str:
    proc = plugin.spawn(env) if preexec is None else _spawn_with(plugin, preexec, env)
    return plugin.refused(proc, *needles)


def _spawn_with(plugin: Plugin, preexec, env=None):
    import subprocess

    from plugin.harness import REPO

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_DRA_", "KUBE"))}
    clean.update(env or {})
    with open(plugin.log, "ab") as log:
        plugin.proc = subprocess.Popen(plugin.command(), stdout=log, stderr=subprocess.STDOUT, env=clean, cwd=REPO,
                                       preexec_fn=preexec)
    return plugin.proc


# -- a directory that is a file, checkpoint.json that is a directory -----------------------------

@pytest.mark.parametrize("which", ["state", "cdi", "plugins-parent"])
def test_a_file_where_a_directory_should_be(make_plugin, which):
    plugin = make_plugin()
    target = {"state": plugin.root / "statefile", "cdi": plugin.cdi, "plugins-parent": plugin.root / "pp"}[which]
    target.write_text("not a directory\n")
    if which == "state":
        plugin.extra_args = ("--state-dir", str(target))
    if which == "plugins-parent":
        plugin.extra_args = ("--kubelet-plugins-dir", str(target / "plugins"))
    _fails_cleanly(plugin, str(target))


def test_checkpoint_json_that_is_a_directory(make_plugin):
    plugin = make_plugin()
    (plugin.state / "checkpoint.json").mkdir(parents=True)
    _fails_cleanly(plugin, "checkpoint.json is a directory", str(plugin.state))
    assert (plugin.state / "checkpoint.json").is_dir(), "a directory is not 'corrupt': leave it for the user"


def test_read_only_state_directory(make_plugin):
    plugin = make_plugin()
    plugin.state.mkdir(parents=True)
    if os.geteuid() != 0:
        plugin.state.chmod(0o500)
        _fails_cleanly(plugin, str(plugin.state))
        return
    # root ignores modes: make it a read-only bind mount in a private mount namespace of the child.
    if not _can_unshare_mounts():
        pytest.skip("root without a private mount namespace: cannot make a read-only directory")
    ro = f"mount --bind {plugin.state} {plugin.state} && mount -o remount,bind,ro {plugin.state} && exec \"$@\""
    command = plugin.command
    plugin.command = lambda: ["unshare", "-m", "sh", "-c", ro, "sh", *command()]
    _fails_cleanly(plugin, str(plugin.state), "Read-only file system")


def _can_unshare_mounts() -> bool:
    import subprocess

    if shutil.which("unshare") is None:
        return False
    d = tempfile.mkdtemp(prefix="fda-ro-", dir="/tmp")
    try:
        probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {d} {d} && mount -o remount,bind,ro {d}"],
                               capture_output=True, timeout=GENEROUS_S)
        return probe.returncode == 0
    finally:
        os.rmdir(d)


# -- sockets -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_live_socket_is_a_start_up_error_and_stays(make_plugin):
    first = make_plugin()
    client = first.start()
    # A second instance with the same kubelet directories but its own state and CDI directories.
    second = make_plugin(root=first.root, extra_args=("--state-dir", str(first.root / "state2"),
                                                      "--cdi-root", str(first.root / "cdi2"), "--no-publish"))
    _fails_cleanly(second, f"socket {first.dra_sock} is in use by another running process")
    assert not (first.root / "cdi2").exists(), "the loser must not touch anything before the socket check"
    # The first instance still serves on its own sockets (before the fix they were replaced).
    ref = first.allocate("g", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    with first.client() as fresh:
        assert fresh.register().endpoint == str(first.dra_sock)
    assert first.stop() == 0


def test_a_dead_socket_is_removed(make_plugin):
    plugin = make_plugin()
    for path in (plugin.dra_sock, plugin.reg_sock):
        path.parent.mkdir(parents=True, exist_ok=True)
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))  # bound, never listening, closed: what a SIGKILLed process leaves
    plugin.start()
    assert plugin.log_text().count("removed stale socket") == 2
    assert plugin.stop() == 0


def test_shutdown_leaves_a_socket_that_is_no_longer_ours(make_plugin):
    plugin = make_plugin(extra_args=("--no-publish",))
    plugin.start()
    # A successor's socket took the path meanwhile (as after a hand-over): it must survive our exit.
    other = plugin.root / "other.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(other))
        os.replace(other, plugin.dra_sock)
        assert plugin.stop() == 0
        assert stat.S_ISSOCK(plugin.dra_sock.lstat().st_mode)
    assert not plugin.reg_sock.exists(), "our own registration socket is removed"


def test_socket_probe_tells_live_from_dead(tmp_path):
    from driver.plugin.server import socket_is_live

    path = tmp_path / "s.sock"
    assert socket_is_live(path) is False  # nothing there
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert socket_is_live(path) is False  # bound, nobody listening: a dead process's leftover
        s.listen(1)
        assert socket_is_live(path) is True


def test_a_socket_staged_by_another_container_under_our_pid_is_left_alone(tmp_path):
    # Issue 18 item 7: two containers, both PID 1, share the registry directory. Staging names were
    # `.<pid>`: gRPC unlinked the other plugin's staged socket and bound ours in its place, and the
    # other process then "served" a registration socket that was ours, or a dead one.
    import threading

    from driver.plugin.client import KubeletClient
    from driver.plugin.metrics import PluginMetrics
    from driver.plugin.server import PluginServer, SocketPaths

    root = Path(tempfile.mkdtemp(prefix="fda-st-", dir="/tmp"))
    try:
        paths = SocketPaths.for_driver(root / "p", root / "r", DRIVER)
        (root / "r").mkdir()
        theirs = root / "r" / f".{os.getpid():x}"  # the other container's plugin, between bind and link
        other = socket.socket(socket.AF_UNIX)
        other.bind(str(theirs))
        other.listen(1)
        inode = theirs.lstat().st_ino
        server = PluginServer(driver_name=DRIVER, paths=paths, state=None, health=lambda: [],
                              metrics=PluginMetrics.create())
        starting = threading.Thread(target=server.start)
        starting.start()
        starting.join(GENEROUS_S)
        assert not starting.is_alive(), "the server never finished starting"
        try:
            assert theirs.lstat().st_ino == inode and stat.S_ISSOCK(theirs.lstat().st_mode), \
                "the other process's staged socket was replaced"
            with KubeletClient(root / "r", DRIVER, timeout_s=GENEROUS_S) as kubelet:
                assert kubelet.register().endpoint == str(paths.dra)
            assert sorted(p.name for p in (root / "r").iterdir()) == sorted([theirs.name, paths.registration.name])
        finally:
            server.stop_serving(0)
            server.finish_stop()
            other.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("value, message", [("bogus:1", "FAKE_DRA_PAUSE_AT: unknown step 'bogus'"),
                                            ("prepare-started:x", "FAKE_DRA_PAUSE_AT seconds: expected seconds")])
def test_bad_pause_hook_is_rejected(make_plugin, value, message):
    plugin = make_plugin()
    _fails_cleanly(plugin, message, env={"FAKE_DRA_TEST_MODE": "1", "FAKE_DRA_PAUSE_AT": value})


# -- signals -------------------------------------------------------------------------------------

def _wait_log(plugin: Plugin, needle: str) -> None:
    wait_for_text(plugin.log_text, needle)


def test_sighup_with_no_publish_rescans_and_keeps_serving(make_plugin):
    plugin = make_plugin(extra_args=("--no-publish",))
    client = plugin.start()
    plugin.proc.send_signal(signal.SIGHUP)
    _wait_log(plugin, "re-scanning the inventory")
    assert plugin.proc.poll() is None, "SIGHUP killed the plugin"
    uid = "11111111-1111-1111-1111-111111111111"
    assert client.unprepare([("default", "x", uid)]) == {uid: ""}
    # A re-scan that fails (the sysfs root vanished) keeps the last inventory and the process.
    plugin.sysfs.rename(plugin.root / "sys.gone")
    plugin.proc.send_signal(signal.SIGHUP)
    _wait_log(plugin, "re-scan failed; keeping the previous inventory")
    assert plugin.proc.poll() is None
    assert client.unprepare([("default", "x", uid)]) == {uid: ""}
    plugin.root.joinpath("sys.gone").rename(plugin.sysfs)
    assert plugin.stop() == 0


# -- leftovers of an interrupted write ------------------------------------------------------------

def test_temp_files_of_interrupted_writes_are_removed_at_start(make_plugin):
    plugin = make_plugin()
    plugin.state.mkdir(parents=True)
    plugin.cdi.mkdir(parents=True)
    ours = [plugin.state / ".checkpoint.json.4242.tmp",
            plugin.cdi / f".k8s.{DRIVER}_device_0d6c1f3e-5f3c-4b1e-9e7a-2b1d3c4e5f60.json.4242.tmp"]
    theirs = [plugin.cdi / ".k8s.other.example.com_device_x.json.1.tmp", plugin.state / "notes.tmp"]
    for p in ours + theirs:
        p.write_text("{half")
    plugin.start()
    assert [p for p in ours if p.exists()] == []
    assert all(p.exists() for p in theirs), "only our own temp files may be removed"
    assert plugin.stop() == 0


# -- modes do not depend on the umask ---------------------------------------------------------------

def _umask(mask: int):
    return lambda: os.umask(mask)


@pytest.mark.slow
@pytest.mark.parametrize("mask", [0o000, 0o077])
def test_modes_do_not_depend_on_the_umask(make_plugin, mask):
    plugin = make_plugin()
    plugin.extra_args = ("--cdi-root", str(plugin.root / "cdi-parent" / "cdi"),
                         "--state-dir", str(plugin.root / "var" / "state"))
    proc = _spawn_with(plugin, _umask(mask))
    client = plugin.wait_registered()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.stop() == 0 and proc.returncode == 0
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    cdi, state = plugin.root / "cdi-parent" / "cdi", plugin.root / "var" / "state"
    assert (mode(cdi), mode(cdi.parent)) == (0o755, 0o755)
    assert (mode(state), mode(state.parent)) == (0o700, 0o755)
    assert mode(state / "checkpoint.json") == 0o600 and mode(state / "lock") == 0o600
    assert [mode(p) for p in cdi.glob("*.json")] == [0o644]
    assert mode(plugin.dra_sock.parent) == 0o750 and mode(plugin.registry) == 0o750


def test_an_existing_world_writable_cdi_root_is_tightened(make_plugin):
    plugin = make_plugin()
    plugin.cdi.mkdir(parents=True)
    plugin.cdi.chmod(0o777)
    plugin.start()
    assert stat.S_IMODE(plugin.cdi.stat().st_mode) == 0o755
    assert "CDI root was group/world-writable" in plugin.log_text()
    assert plugin.stop() == 0


def test_a_sticky_world_writable_cdi_root_is_refused(make_plugin):
    plugin = make_plugin()
    plugin.cdi.mkdir(parents=True)
    plugin.cdi.chmod(0o1777)  # like /tmp: not ours to change
    _fails_cleanly(plugin, f"CDI root {plugin.cdi} is group/world-writable (mode 1777)")
    assert stat.S_IMODE(plugin.cdi.stat().st_mode) == 0o1777


# -- corrupt checkpoints -----------------------------------------------------------------------------

def test_two_corrupt_checkpoints_in_the_same_second_are_both_kept(monkeypatch):
    import driver.state.checkpoint as checkpoint

    monkeypatch.setattr(checkpoint.time, "time", lambda: 1_700_000_000.25)
    d = Path(tempfile.mkdtemp(prefix="fda-cp-", dir="/tmp"))
    try:
        store = CheckpointStore(d, driver_name=DRIVER, node_name="n1", boot_id="b")
        for body in (b"{first", b"{second"):
            store.path.unlink(missing_ok=True)  # replaced, as the plugin's atomic writes do
            store.path.write_bytes(body)
            assert store.load().checkpoint is None
            kept = store.keep_aside()
            assert store.keep_aside() == kept, "an interrupted start's copy is reused, not copied again"
        copies = sorted(d.glob("checkpoint.json.corrupt-*"))
        assert [p.name for p in copies] == ["checkpoint.json.corrupt-1700000000",
                                            "checkpoint.json.corrupt-1700000000-1"]
        assert [p.read_bytes() for p in copies] == [b"{first", b"{second"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
