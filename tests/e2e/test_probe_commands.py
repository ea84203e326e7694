"""`fake-dra probe --prepare/--unprepare/--health` against the real plugin process, as the kubelet calls it,
and what `run` puts into the local store before it opens its sockets."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.cli import main
from driver.discovery import make_sysfs
from driver.personality.fakedra.classes import CLASSES
from driver.e2e.plugin_proc import PluginDirs, PluginProcess
from driver.features import Features
from driver.store import ObjectStore

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: mig.fake-dra.example.com
        selectors:
        - cel:
            expression: device.attributes["fake-dra.example.com"].profile == "1g.5gb"
"""


@pytest.fixture(scope="module")
def plugin():
    dirs = PluginDirs(Path(tempfile.mkdtemp(prefix="fdra-probe-", dir="/tmp")))
    make_sysfs("demo", dirs.sysfs)
    proc = PluginProcess(dirs, node_name="node-1", driver_name=DEFAULT_DRIVER_NAME, features=Features())
    try:
        proc.start()
        # Checked right after the sockets came up, before anything could have waited for a pass.
        dirs.root.joinpath("at-start").write_text(
            f"{len(ObjectStore(dirs.store).list('deviceclasses'))} {len(ObjectStore(dirs.store).list('resourceslices'))}")
        yield dirs
    finally:
        proc.stop("TERM")
        shutil.rmtree(dirs.root, ignore_errors=True)


def flags(dirs: PluginDirs) -> list[str]:
    return ["--kubelet-plugins-dir", str(dirs.plugins), "--kubelet-registry-dir", str(dirs.registry),
            "--store", str(dirs.store), "--cdi-root", str(dirs.cdi)]


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_puts_classes_and_slices_in_the_store_before_its_sockets(plugin):
    classes, slices = map(int, plugin.root.joinpath("at-start").read_text().split())
    assert classes == len(CLASSES) and slices > 0


def test_prepare_and_unprepare_a_claim_of_the_store(plugin, tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(CLAIM.format(name="probe-a"))
    assert main(["apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--store", str(plugin.store)]) == 0
    capsys.readouterr()
    code, out, err = cli(capsys, "probe", "--prepare", "probe-a", *flags(plugin))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "prepared default/probe-a: 1 device"
    device = lines[1].split(": ")[1].split(" ")[0]
    assert device.startswith("gpu-") and "-mig-1g5gb-" in device
    token = device.upper().replace("-", "_")
    assert f"  FAKE_DRA_{token}_PROFILE=1g.5gb" in lines and f"  FAKE_DRA_{token}_CLAIM=default/probe-a" in lines
    uid = ObjectStore(plugin.store).get("resourceclaims", "default", "probe-a")["metadata"]["uid"]
    assert f"  k8s.fake-dra.example.com/device={uid}-{device}" in lines
    spec = plugin.cdi / f"k8s.fake-dra.example.com_device_{uid}.json"
    assert lines[-1] == f"CDI spec: {spec}" and spec.is_file()
    # The kubelet may unprepare after the claim object is gone: the uid then comes from the CDI spec.
    assert main(["delete", "resourceclaim", "probe-a", "--store", str(plugin.store)]) == 0
    capsys.readouterr()
    code, out, _ = cli(capsys, "probe", "--unprepare", "probe-a", *flags(plugin))
    assert code == 0 and out == "unprepared default/probe-a (CDI spec removed)\n" and not spec.exists()
    code, _, err = cli(capsys, "probe", "--unprepare", "probe-a", *flags(plugin))
    assert code == 1 and "neither in the local store nor in a CDI spec" in err


def test_prepare_errors_come_from_the_plugin_or_name_the_claim(plugin, tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(CLAIM.format(name="probe-pending"))
    assert main(["apply", "-f", str(tmp_path / "c.yaml"), "--store", str(plugin.store)]) == 0
    capsys.readouterr()
    code, _, err = cli(capsys, "probe", "--prepare", "probe-pending", *flags(plugin))
    assert code == 1 and "prepare default/probe-pending failed:" in err and "alloc" in err
    code, _, err = cli(capsys, "probe", "--prepare", "nope", *flags(plugin))
    assert code == 1 and 'resourceclaims.resource.k8s.io "nope" not found' in err and "fake-dra apply" in err


def test_health_follows_a_fault(plugin, capsys):
    gpu0 = "0000:07:00.0"
    assert main(["fault", "--sysfs-root", str(plugin.sysfs), "--device", gpu0, "--message", "XID 79"]) == 0
    try:
        code, out, err = cli(capsys, "probe", "--health", "--device", "gpu-0", "--until", "UNHEALTHY",
                             "--timeout", "20", *flags(plugin))
        assert code == 0, err
        assert out.splitlines()[-1].split(None, 2) == ["gpu-0", "UNHEALTHY", f"{gpu0}: XID 79"]
        assert "UNHEALTHY" in out.splitlines()[0]
    finally:
        assert main(["fault", "--sysfs-root", str(plugin.sysfs), "--device", gpu0, "--clear"]) == 0
    code, out, _ = cli(capsys, "probe", "--health", "--device", "gpu-0", "--until", "HEALTHY", "--timeout", "20",
                       *flags(plugin))
    assert code == 0 and out.splitlines()[-1].split()[:2] == ["gpu-0", "HEALTHY"]
    code, _, err = cli(capsys, "probe", "--health", "--device", "gpu-9", *flags(plugin))
    assert code == 2 and "--device: the plugin reports no device 'gpu-9'" in err


def test_until_times_out_with_exit_1(plugin, capsys):
    started = time.monotonic()
    code, out, err = cli(capsys, "probe", "--health", "--device", "gpu-1", "--until", "UNKNOWN", "--timeout", "2",
                         *flags(plugin))
    assert code == 1 and "--until UNKNOWN: not reached within 2 s" in err
    assert "gpu-1" in out and time.monotonic() - started < 10


def test_wait_retries_then_gives_up(tmp_path, capsys):
    started = time.monotonic()
    code, _, err = cli(capsys, "probe", "--wait", "0.6", "--kubelet-plugins-dir", str(tmp_path),
                       "--kubelet-registry-dir", str(tmp_path))
    assert code == 1 and "does not exist (waited 0.6 s)" in err and time.monotonic() - started >= 0.6


@pytest.mark.parametrize(("argv", "message"), [
    (["--timeout", "0"], "--timeout: must be positive"),
    (["--wait", "-1"], "--wait: must be zero or positive"),
    (["--wait", "nan"], "--wait: expected a finite number of seconds"),
    (["--timeout", "inf"], "--timeout: expected a finite number of seconds"),
    (["--until", "HEALTHY"], "--device and --until go with --health"),
])
def test_flag_errors(tmp_path, capsys, argv, message):
    code, _, err = cli(capsys, "probe", *argv, "--kubelet-plugins-dir", str(tmp_path))
    assert code == 2 and message in err


def test_a_dead_plugin_is_one_line_naming_the_socket(capsys):
    import socket

    root = Path(tempfile.mkdtemp(prefix="fdra-dead-", dir="/tmp"))
    try:
        dra = root / DEFAULT_DRIVER_NAME / "dra.sock"
        dra.parent.mkdir()
        for path in (dra, root / f"{DEFAULT_DRIVER_NAME}-reg.sock"):  # left by a SIGKILLed plugin
            with socket.socket(socket.AF_UNIX) as s:
                s.bind(str(path))
        code, out, err = cli(capsys, "probe", "--kubelet-plugins-dir", str(root), "--kubelet-registry-dir", str(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert code == 1 and out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"fake-dra probe: DRA call on {dra} failed: UNAVAILABLE: ")


def test_a_plugin_that_fails_after_the_liveness_call_is_one_line(plugin, capsys, monkeypatch):
    import grpc

    from driver.plugin.client import KubeletClient

    class Gone(grpc.RpcError):
        def code(self):
            return grpc.StatusCode.UNAVAILABLE

        def details(self):
            return "Socket closed\n(the plugin restarted)"

    def fail(self, timeout, version=None):
        raise Gone()
        yield  # a generator, like the real watch_health

    monkeypatch.setattr(KubeletClient, "watch_health", fail)
    code, _, err = cli(capsys, "probe", "--health", *flags(plugin))
    assert code == 1 and err == (f"fake-dra probe: call on {plugin.plugins / DEFAULT_DRIVER_NAME / 'dra.sock'} "
                                 "failed: UNAVAILABLE: Socket closed (the plugin restarted)\n")


VF_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
spec:
  devices:
    requests:
    - name: net
      exactly:
        deviceClassName: vf.fake-dra.example.com
"""


def test_prepare_gives_the_plugin_the_kubelets_deadline_so_vf_status_is_written(plugin, tmp_path, capsys):
    # The status writer starts a status.devices write only with 5 s of the call left; with the old
    # 5 s default of probe --timeout it always skipped it, while probe reported success.
    (tmp_path / "vf.yaml").write_text(VF_CLAIM.format(name="probe-vf"))
    assert main(["apply", "-f", str(tmp_path / "vf.yaml"), "--allocate", "--store", str(plugin.store)]) == 0
    capsys.readouterr()
    code, _, err = cli(capsys, "probe", "--prepare", "probe-vf", *flags(plugin))
    assert code == 0, err
    claim = ObjectStore(plugin.store).get("resourceclaims", "default", "probe-vf")
    (entry,) = (claim.get("status") or {}).get("devices") or [None]
    assert entry is not None, "status.devices was not written: the call had too little time left"
    assert entry["device"].startswith("nic-0-vf-") and entry["conditions"][0]["type"] == "Ready"
    assert entry["networkData"]["interfaceName"].startswith("ens3f0v")
    # describe reads the plugin's own records: prepared, where its files are, the device status.
    where = ["--state-dir", str(plugin.state), "--cdi-root", str(plugin.cdi), "--store", str(plugin.store),
             "--boot-id-file", str(plugin.root / "boot_id")]
    code, out, err = cli(capsys, "describe", "resourceclaim", "probe-vf", *where)
    assert code == 0, err
    text = " ".join(out.split())
    uid = claim["metadata"]["uid"]
    assert "Prepared on node-1: fake-dra.example.com: yes" in text, out
    (tmp_path / "other-boot").write_text("another-boot\n")  # after a reboot the plugin drops the record
    code, out, _ = cli(capsys, "describe", "resourceclaim", "probe-vf", *where[:-1], str(tmp_path / "other-boot"))
    assert "fake-dra.example.com: no (PrepareCompleted in an earlier boot" in " ".join(out.split())
    assert f"CDI spec: {plugin.cdi}/k8s.fake-dra.example.com_device_{uid}.json " in text
    assert f"CDI devices: k8s.fake-dra.example.com/device={uid}-{entry['device']}" in text
    assert f"/dra-device-metadata/{uid}/net/fake-dra.example.com-metadata.json" in text
    assert f"Device Status: fake-dra.example.com/node-1/{entry['device']}: Conditions: Ready=True" in text
    assert f"Network: interface {entry['networkData']['interfaceName']}" in text
    code, out, _ = cli(capsys, "describe", "node", "node-1", *where)
    assert "Prepared claims: fake-dra.example.com: default/probe-vf" in " ".join(out.split())
    code, _, err = cli(capsys, "probe", "--unprepare", "probe-vf", *flags(plugin))
    assert code == 0, err
    assert not (ObjectStore(plugin.store).get("resourceclaims", "default", "probe-vf").get("status") or {}).get("devices")
    code, out, _ = cli(capsys, "describe", "resourceclaim", "probe-vf", *where)
    assert "fake-dra.example.com: no (not in the plugin's checkpoint)" in " ".join(out.split())
