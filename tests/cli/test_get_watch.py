"""`get -w` as `kubectl get --watch`: the list, then each change to what it lists (a deletion too),
until --request-timeout; refusals for what kubectl refuses with a watch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.test_object_commands import cli
from driver.store import ObjectStore
from waiting import wait_for_text

ROOT = Path(__file__).resolve().parents[2]


def _class(name: str, **labels: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name, "labels": labels}}


def test_watch_prints_the_list_then_every_change_that_matches(tmp_path):
    store = ObjectStore(tmp_path / "s")
    store.create("deviceclasses", _class("a", team="ml"))
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        watcher = subprocess.Popen([sys.executable, "-m", "driver", "get", "deviceclasses", "-w", "-l", "team=ml",
                                    "-o", "name", "--request-timeout", "120s", "--store", str(tmp_path / "s")],
                                   cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for_text(out.read_text, "deviceclass.resource.k8s.io/a\n")
        store.create("deviceclasses", _class("b", team="ml"))
        store.create("deviceclasses", _class("other", team="web"))  # not selected: never printed
        store.delete("deviceclasses", None, "a")
        text = wait_for_text(out.read_text, "deviceclass.resource.k8s.io/b\ndeviceclass.resource.k8s.io/a\n")
    finally:
        watcher.kill()
        watcher.wait()
    assert text.splitlines() == ["deviceclass.resource.k8s.io/a", "deviceclass.resource.k8s.io/b",
                                 "deviceclass.resource.k8s.io/a"], "the deleted object is printed once more"


def test_watch_ends_at_the_request_timeout(tmp_path, capsys):
    ObjectStore(tmp_path / "s").create("deviceclasses", _class("a"))
    code, out, _ = cli(capsys, "get", "deviceclasses", "--watch-only", "--request-timeout", "0.3",
                       "--store", str(tmp_path / "s"))
    assert (code, out) == (0, ""), "--watch-only prints no list, and nothing changed"


@pytest.mark.parametrize("argv, message", [
    (("get", "deviceclasses,pods", "-w"), "--watch: watch is only supported on individual resources"),
    (("get", "pods", "-w", "-o", "jsonpath={.items}"), "--watch: -o jsonpath is not supported with --watch"),
    (("get", "pods", "-w", "--sort-by", ".metadata.name"), "--watch: --sort-by cannot be used with --watch"),
    (("get", "pods", "-w", "--request-timeout", "soon"), "invalid duration 'soon'"),
])
def test_what_kubectl_refuses_with_a_watch(tmp_path, capsys, argv, message):
    code, _, err = cli(capsys, *argv, "--store", str(tmp_path / "s"))
    assert code == 2 and message in err, err
