"""A real container runtime consumes the CDI specs the plugin writes (opt-in: hack/cdi-runtime-smoke.sh).

The plugin runs in local mode (`fake-dra run`), claims are prepared over its socket as the kubelet
does (`fake-dra probe --prepare`), and podman starts a container with the claim's CDI device IDs
(`podman run --device <kind>=<name>`). Inside, the container must see every env entry of the spec
and each request's device metadata file at the KEP-5304 path, byte for byte what the plugin wrote,
mounted read-only. After unprepare the spec and the files are gone.

Needs root, podman and an image with `sh` and `cat` named by FAKE_DRA_CDI_RUNTIME_IMAGE; skipped
otherwise. Podman up to at least 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi, so the
plugin writes to /var/run/cdi (its own files, named by claim UID, removed again).

Podman 4.3 (Debian 12) vendors a CDI library that knows spec versions up to 0.5.0 and rejects our
0.6.0 specs ("unresolvable CDI devices"); 0.6.0 is the lowest version that allows the spec-level
annotation we keep (container-device-interface specs-go/version.go, requiresV060; containerd 2 and
CRI-O read it). With such a podman the test says so and checks the same devices from a copy of the
spec lowered to 0.5.0 without the annotation (the edits, env and mounts, are identical in both).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from driver import DEFAULT_DRIVER_NAME

IMAGE = os.environ.get("FAKE_DRA_CDI_RUNTIME_IMAGE", "")
CDI_ROOT = Path("/var/run/cdi")
FAKE_DRA = str(Path(sys.executable).with_name("fake-dra"))
LEGACY_KIND = "fake-dra-cdi-test.example.com/legacy"


def _skip_reason() -> str | None:
    if not IMAGE:
        return "FAKE_DRA_CDI_RUNTIME_IMAGE is not set (run hack/cdi-runtime-smoke.sh)"
    if shutil.which("podman") is None:
        return "podman is not installed"
    if os.geteuid() != 0:
        return "needs root (podman reads CDI specs from /var/run/cdi only)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")

CLAIMS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: vf-claim
spec:
  devices:
    requests:
    - name: vf
      exactly:
        deviceClassName: vf.fake-dra.example.com
---
# As the resourceclaim controller makes it from a pod's template claim named "accel".
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: pod-1-accel-x7k2q
  annotations:
    resource.kubernetes.io/pod-claim-name: accel
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: small-mig
        deviceClassName: mig.fake-dra.example.com
        selectors:
        - cel:
            expression: device.attributes["fake-dra.example.com"].profile == "1g.5gb"
    - name: nic
      exactly:
        deviceClassName: vf.fake-dra.example.com
"""


def _run(*args: str, env: dict[str, str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, env=env, cwd=cwd, check=False, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def plugin() -> Iterator[tuple[dict[str, str], Path]]:
    """`fake-dra run` in local mode writing CDI specs to /var/run/cdi; stopped and cleaned up after."""
    work = Path(tempfile.mkdtemp(prefix="fdcdi.", dir="/tmp"))  # short: AF_UNIX socket paths
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_")}
    env.update(FAKE_DRA_NODE_NAME="node-1", FAKE_DRA_KUBELET_ROOT=str(work / "kubelet"),
               FAKE_DRA_CDI_ROOT=str(CDI_ROOT), FAKE_DRA_STORE=str(work / "store"))
    _run(FAKE_DRA, "make-sysfs", "--profile", "demo", "--out", "sys", env=env, cwd=work)
    had_root = CDI_ROOT.is_dir()
    before = set(CDI_ROOT.glob("*")) if had_root else set()
    log = (work / "plugin.log").open("w")
    proc = subprocess.Popen([FAKE_DRA, "run", "--sysfs-root", "sys"], env=env, cwd=work, stdout=log, stderr=log)
    try:
        _run(FAKE_DRA, "probe", "--wait", "30", env=env, cwd=work)
        yield env, work
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        for path in set(CDI_ROOT.glob("*")) - before:
            path.unlink(missing_ok=True)
        if not had_root and not any(CDI_ROOT.iterdir()):
            CDI_ROOT.rmdir()
        shutil.rmtree(work, ignore_errors=True)


def _podman(device_ids: list[str], script: str) -> subprocess.CompletedProcess[str]:
    args = ["podman", "run", "--rm", "--network=none"]
    for device_id in device_ids:
        args += ["--device", device_id]
    # --entrypoint: the fake-dra image itself (entrypoint fake-dra) works as the workload too.
    return subprocess.run([*args, "--entrypoint", "sh", IMAGE, "-c", script],
                          check=False, capture_output=True, text=True, timeout=120)


def _sections(out: str) -> dict[str, str]:
    """`=== name` lines split the container's output; what comes before the first is key ""."""
    sections, current = {"": ""}, ""
    for line in out.splitlines(keepends=True):
        if line.startswith("=== "):
            current = line[4:].rstrip("\n")
            sections[current] = ""
        else:
            sections[current] += line
    return sections


def _legacy_copy(spec: dict, uid: str) -> list[str]:
    """The spec at CDI 0.5.0 (no annotations, a test-only kind) for a podman that rejects 0.6.0."""
    lowered = {k: v for k, v in spec.items() if k != "annotations"} | {"cdiVersion": "0.5.0", "kind": LEGACY_KIND}
    (CDI_ROOT / f"fake-dra-cdi-test_legacy_{uid}.json").write_text(json.dumps(lowered))
    return [f"{LEGACY_KIND}={d['name']}" for d in spec["devices"]]


@pytest.mark.parametrize("claim", ["vf-claim", "pod-1-accel-x7k2q"])
def test_container_sees_env_and_read_only_metadata(plugin, claim: str) -> None:
    env, work = plugin
    (work / "claims.yaml").write_text(CLAIMS)
    _run(FAKE_DRA, "apply", "-f", "claims.yaml", "--allocate", env=env, cwd=work)
    _run(FAKE_DRA, "probe", "--prepare", claim, env=env, cwd=work)
    stored = yaml.safe_load(_run(FAKE_DRA, "get", "resourceclaim", claim, "-o", "yaml", env=env, cwd=work).stdout)
    uid = stored["metadata"]["uid"]
    spec_path = CDI_ROOT / f"k8s.{DEFAULT_DRIVER_NAME}_device_{uid}.json"
    spec = json.loads(spec_path.read_text())
    device_ids = [f"{spec['kind']}={d['name']}" for d in spec["devices"]]
    edits = [d["containerEdits"] for d in spec["devices"]]
    want_env = sorted({e for ed in edits for e in ed["env"]})
    mounts = {m["containerPath"]: m for ed in edits for m in ed.get("mounts", [])}
    # What the claim's shape promises: one file per top-level request, under the pod's claim name
    # for a template claim.
    prefix = "/var/run/kubernetes.io/dra-device-attributes"
    if claim == "vf-claim":
        assert set(mounts) == {f"{prefix}/resourceclaims/vf-claim/vf/{DEFAULT_DRIVER_NAME}-metadata.json"}
    else:
        assert set(mounts) == {f"{prefix}/resourceclaimtemplates/accel/{r}/{DEFAULT_DRIVER_NAME}-metadata.json"
                               for r in ("gpu", "nic")}

    paths = sorted(mounts)
    script = "; ".join([
        "env | grep '^FAKE_DRA_' | sort",
        *(f"echo '=== {p}'; cat '{p}'" for p in paths),
        "echo '=== writable'",
        # access(2) answers EROFS on a read-only mount, even for root: asks without writing.
        *(f"if [ -w '{p}' ]; then echo '{p}'; fi" for p in paths),
        "echo '=== mountinfo'; cat /proc/self/mountinfo",
    ])
    proc = _podman(device_ids, script)
    if proc.returncode != 0 and "unresolvable CDI devices" in proc.stderr:
        version = subprocess.run(["podman", "--version"], check=False, capture_output=True, text=True).stdout.strip()
        warnings.warn(f"{version} rejects CDI {spec['cdiVersion']} specs; checked a 0.5.0 copy instead", stacklevel=1)
        proc = _podman(_legacy_copy(spec, uid), script)
    assert proc.returncode == 0, proc.stderr

    seen = _sections(proc.stdout)
    assert seen[""].splitlines() == want_env
    for p in paths:
        host = Path(mounts[p]["hostPath"]).read_text()
        assert seen[p] == host, f"{p}: the container reads something else than the plugin wrote"
        first = json.loads(host.splitlines()[0])
        assert first["apiVersion"] == "metadata.resource.k8s.io/v1beta1"
        assert first["metadata"]["uid"] == uid and first["metadata"]["generation"] == 1
        request = p.split("/")[-2]
        want_request = "gpu/small-mig" if request == "gpu" else request  # firstAvailable: <request>/<sub>
        assert [r["name"] for r in first["requests"]] == [want_request]
        assert first.get("podClaimName") == (None if claim == "vf-claim" else "accel")
    assert seen["writable"] == "", f"writable inside the container: {seen['writable']}"
    mountinfo = [line.split() for line in seen["mountinfo"].splitlines()]
    for p in paths:
        # /var/run is a symlink to /run in Debian-based images: the kernel reports the target.
        fields = next((f for f in mountinfo if f[4] in (p, p.replace("/var/run/", "/run/", 1))), None)
        assert fields is not None, f"{p} is not a mount point inside the container"
        assert "ro" in fields[5].split(","), fields

    _run(FAKE_DRA, "probe", "--unprepare", claim, env=env, cwd=work)
    assert not spec_path.exists()
    assert not any(Path(m["hostPath"]).exists() for m in mounts.values())
