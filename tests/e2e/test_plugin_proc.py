"""The plugin child process: a plugin that cannot start is reported with its own log, not a hang."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.e2e.local import LocalBackend
from driver.e2e.plugin_proc import PluginDirs, PluginProcess, PluginStartError
from driver.e2e.manifests import claim_object
from driver.e2e.runner import run_scenario
from driver.e2e.scenario import parse_scenario
from driver.features import Features


def test_plugin_that_exits_is_reported_with_its_log() -> None:
    dirs = PluginDirs(Path(tempfile.mkdtemp(prefix="fdra-bad-", dir="/tmp")))
    try:
        # No sysfs tree written: `fake-dra run` refuses the missing --sysfs-root and exits 2.
        plugin = PluginProcess(dirs, node_name="n1", driver_name=DEFAULT_DRIVER_NAME, features=Features(),
                               startup_timeout_s=20)
        with pytest.raises(PluginStartError, match=r"plugin exited with code 2: .*sysfs"):
            plugin.start()
        assert not plugin.alive()
    finally:
        shutil.rmtree(dirs.root, ignore_errors=True)


def test_plugin_killed_behind_the_harness_is_named_in_the_result() -> None:
    scenario = parse_scenario({
        "name": "plugin-dies", "reason": "the harness must say the plugin is gone",
        "profile": "no-gpu",
        "steps": [
            {"action": "claim", "name": "vf", "requests": [{"name": "vf", "class": "vf"}]},
            {"action": "pod", "name": "p", "claims": ["vf"], "expect": {"prepared": True}},
        ],
    })
    backend = LocalBackend()
    original = backend.run_pod

    def kill_then_run(*args, **kw):
        backend.plugin.proc.kill()
        backend.plugin.proc.wait()
        return original(*args, **kw)

    backend.run_pod = kill_then_run  # type: ignore[method-assign]
    result = run_scenario(scenario, backend, claim_object)
    assert result.status == "FAIL"
    assert "plugin not running" in (result.error or "")


def test_plugin_that_ignores_sigterm_is_killed_and_reported(tmp_path: Path) -> None:
    import subprocess
    import sys

    plugin = PluginProcess(PluginDirs(tmp_path), node_name="n1", driver_name=DEFAULT_DRIVER_NAME, features=Features())
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                               "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE)
    assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"  # handler installed
    plugin.proc = stubborn
    with pytest.raises(PluginStartError, match=r"ignored SIGTERM for 0 s and was killed"):
        plugin.stop("TERM", timeout_s=0.3)
    assert stubborn.poll() is not None, "the stubborn process must not outlive the harness"
    assert not plugin.alive()
    stubborn.stdout.close()


_VF = {"action": "claim", "name": "vf", "requests": [{"name": "vf", "class": "vf"}]}
_POD = {"action": "pod", "name": "p", "claims": ["vf"]}
BAD_STEPS = {
    "pod-twice": ([_VF, _POD, _POD], "pod p already exists"),
    "delete-unknown-pod": ([_VF, {"action": "delete-pod", "name": "q"}], "delete-pod: pod q does not exist"),
    "delete-claim-in-use": ([_VF, _POD, {"action": "delete-claim", "name": "vf"}], "still used by pods p"),
    "fault-unknown-device": ([{"action": "fault", "device": "nope"}], "no published device 'nope'"),
}


@pytest.mark.slow
def test_local_backend_rejects_impossible_steps_by_name() -> None:
    from driver.e2e.runner import run_all

    scenarios = [parse_scenario({"name": name, "reason": "an impossible step is reported, not ignored",
                                 "profile": "no-gpu", "steps": steps})
                 for name, (steps, _) in BAD_STEPS.items()]
    report = run_all(scenarios, LocalBackend, claim_object, jobs=4)
    assert sorted(r.name for r in report.scenarios) == sorted(BAD_STEPS)
    for result in report.scenarios:
        assert BAD_STEPS[result.name][1] in (result.error or ""), (result.name, result.error)
