"""The `fake-dra fleet` command as a user runs it: an interrupted apply, and `fleet run` as a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from driver.cli import main
from driver.store import ObjectStore
from fleet.conftest import fleet_doc, group


def test_ctrl_c_says_the_next_apply_finishes_the_work(tmp_path, monkeypatch, capsys):
    import driver.fleet.apply as apply_mod

    real = apply_mod.apply_fleet

    def interrupted(*args, progress=None, **kw):
        def stop(done, total):
            progress(done, total)
            if done == 2:
                raise KeyboardInterrupt
        return real(*args, progress=stop, **kw)

    monkeypatch.setattr(apply_mod, "apply_fleet", interrupted)
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("a", 4))))
    assert main(["fleet", "apply", "-f", str(path), "--store", str(tmp_path / "s")]) == 130
    assert "fleet lab: interrupted after 2 of 4 nodes; nothing is half-written (the batch of nodes in progress was " \
           "undone whole): `fleet apply` again finishes the rest" in capsys.readouterr().err
    monkeypatch.setattr(apply_mod, "apply_fleet", real)
    assert main(["fleet", "apply", "-f", str(path), "--store", str(tmp_path / "s"), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodesCreated"] == 4  # the interrupted batch was undone


def _wait(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_fleet_run_keeps_the_fleet_and_stops_on_sigterm(tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("a", 2))))
    store = ObjectStore(tmp_path / "store")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_")}
    proc = subprocess.Popen([sys.executable, "-m", "driver", "fleet", "run", "-f", str(path), "--store", str(store.root),
                             "--interval", "0.3"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait(lambda: len(store.names("resourceslices")) == 6), "the fleet was never published"
        victim = store.names("resourceslices")[0]
        store.delete("resourceslices", None, victim)
        assert _wait(lambda: victim in store.names("resourceslices")), "the deleted slice did not come back"
        path.write_text(json.dumps(fleet_doc(group("a", 1))))
        assert _wait(lambda: store.names("nodes") == ["a-0000"]), "the fleet file's change was not followed"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
