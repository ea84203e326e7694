"""The scripted newcomer: a fresh clone of the committed HEAD, the first hour's commands, the usual
mistakes. No traceback anywhere; every mistake is one line naming what to fix.

Scope (CI has 2 cores and a 15-minute budget): the README's two commands (`hack/demo.sh`,
`hack/test.sh`) would build a second venv and run the whole suite inside the suite, so this test runs
the package from the current venv against the clone's source tree (PYTHONPATH), which is what those
scripts execute after installing. The full demo itself is covered by tests/e2e/test_demo.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from waiting import GENEROUS_S

REPO = Path(__file__).resolve().parents[2]
DRIVER = "fake-dra.example.com"


@pytest.fixture(scope="module")
def newcomer():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    # Short: the plugin's unix sockets live under the state home (AF_UNIX paths <= 107 bytes).
    root = Path(tempfile.mkdtemp(prefix="fdn-", dir="/tmp"))
    subprocess.run(["git", "clone", "-q", str(REPO), str(root / "clone")], check=True, timeout=120)
    (root / "work").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


class Shell:
    """Runs `fake-dra` the way a newcomer does: from the clone, in a work directory, clean environment."""

    def __init__(self, root: Path) -> None:
        self.clone, self.work, self.state = root / "clone", root / "work", root / "state"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("FAKE_DRA_", "KUBE", "NODE_NAME", "PYTHON"))}
        self.env.update(PYTHONPATH=str(self.clone), XDG_STATE_HOME=str(self.state))
        script = Path(sys.executable).parent / "fake-dra"
        self.argv0 = [str(script)] if script.exists() else [sys.executable, "-m", "driver"]

    def __call__(self, *args: str, env: dict[str, str] | None = None, code: int = 0) -> subprocess.CompletedProcess:
        proc = subprocess.run([*self.argv0, *args], cwd=self.work, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
        assert proc.returncode == code, f"fake-dra {' '.join(args)} -> {proc.returncode}:\n{proc.stderr}"
        return proc

    def spawn(self, *args: str) -> tuple[subprocess.Popen, Path]:
        log = self.work / "run.log"
        with open(log, "wb") as out:
            return subprocess.Popen([*self.argv0, *args], cwd=self.work, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT), log


def _wait(what, log: Path, proc: subprocess.Popen, timeout: float = GENEROUS_S) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig.fake-dra.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "fake-dra.example.com" && device.attributes["fake-dra.example.com"].type == "mig"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: first-mig, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: mig.fake-dra.example.com}
"""


def test_the_tour_from_a_fresh_clone(newcomer):
    sh = Shell(newcomer)
    where = subprocess.run([sys.executable, "-c", "import driver; print(driver.__file__)"], env=sh.env,
                           cwd=sh.work, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(sh.clone)), "the test must run the clone's code, not the worktree's"

    assert sh("--version").stdout.startswith("fake-dra ")
    assert "wrote profile demo" in sh("make-sysfs", "--profile", "demo", "--out", "sys").stdout
    assert "GPUs (2)" in sh("discover", "--sysfs-root", "sys").stdout
    assert "MIG placement map" in sh("show", "--sysfs-root", "sys").stdout

    import kubernetes_validate

    slices = sh("slices", "--sysfs-root", "sys", "--node-name", "n1").stdout
    (sh.work / "slices.yaml").write_text(slices)
    for doc in yaml.safe_load_all(slices):  # the default output is what a 1.37 apiserver accepts
        kubernetes_validate.validate(doc, "1.37", strict=True)

    assert "backend=store" in sh("publish", "--once", "--sysfs-root", "sys", "--node-name", "n1").stdout
    (sh.work / "claim.yaml").write_text(CLAIM)
    (allocated,) = yaml.safe_load_all(sh("allocate", "--node-name", "n1", "slices.yaml", "claim.yaml").stdout)
    assert allocated["status"]["allocation"]["devices"]["results"][0]["device"].startswith("gpu-0-mig-")

    proc, log = sh.spawn("run", "--sysfs-root", "sys", "--node-name", "n1")
    node_dir = sh.state / "fake-dra" / "nodes" / "n1"
    try:
        _wait(lambda: (node_dir / "plugins_registry" / f"{DRIVER}-reg.sock").exists(), log, proc)
        sh("probe", "--node-name", "n1")
        sh("fault", "--sysfs-root", "sys", "--device", "00000000:07:00.0", "--message", "XID 79")
        _wait(lambda: "devices unhealthy" in log.read_text(), log, proc)
        sh("fault", "--sysfs-root", "sys", "--device", "0000:07:00.0", "--clear")
        _wait(lambda: "devices healthy again" in log.read_text(), log, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(GENEROUS_S) == 0, log.read_text()
    text = log.read_text()
    assert "Traceback" not in text
    assert f"local mode: sockets, CDI specs and checkpoint under {node_dir}" in text
    assert "inventory: 2 GPUs" in text and "restored 0 prepared claims" in text

    assert "tour" in sh("e2e", "--list").stdout


MISTAKES = [
    (("--log-level", "LOUD", "discover"), {}, ("--log-level", "LOUD")),
    (("discover", "--sysfs-root", "sys", "--log-level", "LOUD"), {}, ("--log-level",)),
    (("allocate", "--node-name", "n1", "binary.yaml"), {}, ("binary.yaml", "not UTF-8")),
    (("allocate", "--node-name", "n9", "slices.yaml"), {}, ("no claims to allocate",)),
    (("e2e", "--scenarios-dir", "binary-scenarios", "--list"), {}, ("binary-scenarios", "not UTF-8")),
    (("e2e", "--scenarios-dir", "empty"), {}, ("--scenarios-dir", "empty")),
    (("e2e", "--scenario", "tour", "--junit", "sys"), {}, ("--junit", "sys", "is a directory")),
    (("e2e", "--scenario", "tour", "--junit", "reports/e2e.xml"), {}, ("--junit", "reports", "not created")),
    (("make-sysfs", "--out", "/proc/sys-copy"), {}, ("--out", "/proc/sys-copy")),
    (("make-sysfs", "--out", "slices.yaml"), {}, ("--out", "slices.yaml")),
    (("probe", "--node-name", "n1", "--timeout", "0"), {}, ("--timeout",)),
    (("fault", "--sysfs-root", "sys", "--device", "0000:07:00.0", "--message", "x" * 1025), {}, ("--message",)),
    (("run", "--sysfs-root", "sys", "--node-name", "n1"), {"FAKE_DRA_NO_PUBLISH": "maybe"}, ("FAKE_DRA_NO_PUBLISH",)),
    (("run", "--sysfs-root", "sys", "--node-name", "n1", "--cdi-root", "/proc/cdi"), {}, ("--cdi-root", "/proc/cdi")),
    (("run", "--sysfs-root", "sys", "--node-name", "n1", "--kubelet-plugins-dir", "slices.yaml"), {},
     ("--kubelet-plugins-dir", "slices.yaml")),
    (("publish", "--once", "--sysfs-root", "sys", "--node-name", "n1"), {"FAKE_DRA_DELETE_SLICES_ON_EXIT": "maybe"},
     ("FAKE_DRA_DELETE_SLICES_ON_EXIT",)),
    (("publish", "--once", "--sysfs-root", "sys", "--node-name", "n1", "--store", "/sys"), {}, ("--store", "/sys")),
]


def test_the_usual_mistakes_from_a_fresh_clone(newcomer):
    sh = Shell(newcomer)
    if not (sh.work / "sys").exists():
        sh("make-sysfs", "--profile", "demo", "--out", "sys")
    if not (sh.work / "slices.yaml").exists():
        (sh.work / "slices.yaml").write_text(sh("slices", "--sysfs-root", "sys", "--node-name", "n1").stdout)
    (sh.work / "binary.yaml").write_bytes(b"kind: ResourceClaim\nmetadata: {name: \xff}\n")
    (sh.work / "binary-scenarios").mkdir(exist_ok=True)
    (sh.work / "binary-scenarios" / "a.yaml").write_bytes(b"\xfe\xff")
    (sh.work / "empty").mkdir(exist_ok=True)
    for args, env, needles in MISTAKES:
        err = sh(*args, env=env, code=2).stderr
        assert len(err.strip().splitlines()) <= 3, err  # a message, not a wall
        for needle in needles:
            assert needle in err, (args, err)
    assert not (sh.work / "reports").exists()
