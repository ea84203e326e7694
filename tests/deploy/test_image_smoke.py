"""hack/image_smoke.py turns the rendered DaemonSet into podman flags; refuses what it cannot reproduce.

The smoke itself (podman) is opt-in; this checks, without a container engine, that what it runs is
the DaemonSet's pod: same security settings, env, mounts, limits, args and liveness command.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from .kustomize import OVERLAYS, ROOT, _render_text

_spec = importlib.util.spec_from_file_location("image_smoke", ROOT / "hack" / "image_smoke.py")
smoke = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke)

IMAGE = "localhost/fake-dra:dev"


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    path = tmp_path / "rendered.yaml"
    path.write_text(_render_text(str(OVERLAYS / "kind")))
    return path


def _edit(path: Path, fn) -> Path:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    fn(ds["spec"]["template"]["spec"])
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_plugin_runs_with_the_daemonsets_settings(rendered: Path, tmp_path: Path) -> None:
    work = tmp_path / "w"
    args = smoke.podman_args(rendered, "plugin", work, IMAGE, "n1")
    i = args.index(IMAGE)
    flags, cmd = args[:i], args[i + 1:]
    assert cmd == ["run"]
    assert {"--network=none", "--read-only", "--read-only-tmpfs=false", "--security-opt=no-new-privileges",
            "--cap-drop=ALL", "--memory=256m", "--tmpfs=/tmp:rw,size=16m", "--env=NODE_NAME=n1",
            "--env=FAKE_DRA_SYSFS_ROOT=/fake-sysfs", "--env=FAKE_DRA_METRICS_ADDR=0.0.0.0:9090",
            "--env=FAKE_DRA_FEATURES=DRADeviceCompatibilityGroups=true,DRAPartitionableDevices=true"} <= set(flags)
    for path in ("/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi"):
        host = work / "host" / path.lstrip("/")
        assert f"--volume={host}:{path}" in flags and host.is_dir()
    assert f"--volume={work / 'empty' / 'fake-sysfs'}:/fake-sysfs" in flags
    # The one stand-in: claims from a bind-mounted store instead of the API server.
    assert f"--env=FAKE_DRA_STORE={smoke.STORE_IN_CONTAINER}" in flags
    assert not any(f.startswith("--privileged") or f.startswith("--cap-add") for f in flags)


def test_init_container_gets_the_profile_instead_of_the_label_lookup(rendered: Path, tmp_path: Path) -> None:
    args = smoke.podman_args(rendered, "fake-sysfs", tmp_path, IMAGE, "n1")
    cmd = args[args.index(IMAGE) + 1:]
    assert cmd[0] == "node-sysfs" and cmd[-1] == "--profile=demo" and "--out=/fake-sysfs" in cmd
    assert "--memory=128m" in args and "--cap-drop=ALL" in args


def test_probe_command_is_the_manifests(rendered: Path) -> None:
    assert smoke.probe_command(rendered) == (["fake-dra", "probe", "--timeout=5"], 10)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s["containers"][0]["securityContext"].update(runAsUser=1000), "runAsUser"),
    (lambda s: s["containers"][0]["securityContext"].update(privileged=True), "privileged"),
    (lambda s: s.update(securityContext={"seccompProfile": {"type": "Unconfined"}}), "Unconfined"),
    (lambda s: s["containers"][0]["env"].append(
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}), "env X"),
    (lambda s: s["volumes"].append({"name": "cfg", "configMap": {"name": "c"}})
     or s["containers"][0]["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"}), "volume cfg"),
    (lambda s: s["volumes"][-1]["emptyDir"].update(sizeLimit="1.5Gi"), "1.5Gi"),
    (lambda s: s["containers"][0].update(command=["sh"]), "command override"),
    (lambda s: s["containers"][0].update(image="other/fake-dra:x"), "other/fake-dra:x"),
])
def test_what_the_smoke_cannot_reproduce_stops_it(rendered: Path, tmp_path: Path, edit, message: str) -> None:
    _edit(rendered, edit)
    with pytest.raises(smoke.SmokeError, match=message):
        smoke.podman_args(rendered, "plugin", tmp_path, IMAGE, "n1")


def test_missing_pieces_are_named(rendered: Path, tmp_path: Path) -> None:
    with pytest.raises(smoke.SmokeError, match="no container 'nope'"):
        smoke.podman_args(rendered, "nope", tmp_path, IMAGE, "n1")
    _edit(rendered, lambda s: s["containers"][0].pop("livenessProbe"))
    with pytest.raises(smoke.SmokeError, match="no exec livenessProbe"):
        smoke.probe_command(rendered)
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    with pytest.raises(smoke.SmokeError, match="no DaemonSet"):
        smoke.probe_command(empty)


def test_cli_prints_nul_separated_args_and_reports_errors(rendered: Path, tmp_path: Path, capsys) -> None:
    assert smoke.main(["probe-command", "--rendered", str(rendered)]) == 0
    assert capsys.readouterr().out.split("\0") == ["10", "fake-dra", "probe", "--timeout=5", ""]
    assert smoke.main(["podman-args", "--rendered", str(rendered), "--container", "plugin", "--work",
                       str(tmp_path), "--image", "x/y:z", "--node-name", "n"]) == 1
    assert "the smoke built 'x/y:z'" in capsys.readouterr().err


def test_check_names_the_socket_it_waited_for(tmp_path: Path) -> None:
    with pytest.raises(smoke.SmokeError, match=r"registration socket .*fake-dra.example.com-reg.sock"):
        smoke.check(tmp_path, "n1", wait_s=0.3)

