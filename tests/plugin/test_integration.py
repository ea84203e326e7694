"""The plugin process driven like the kubelet: registration, prepare/unprepare, health, shutdown."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request

import grpc
import pytest

from plugin.harness import DRIVER, REPO, request
from waiting import GENEROUS_S, wait_for_text


def _mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_registration_advertises_v1_first_and_health(make_plugin):
    plugin = make_plugin()
    plugin.spawn()
    # The DRA socket must exist (and serve) by the time the registration socket appears.
    deadline = time.monotonic() + GENEROUS_S
    while not plugin.reg_sock.exists():
        assert time.monotonic() < deadline and plugin.proc.poll() is None, plugin.log_text()
        time.sleep(0.005)
    assert plugin.dra_sock.exists()
    client = plugin.wait_registered()
    info = client.register()
    assert info.type == "DRAPlugin" and info.name == DRIVER
    assert info.endpoint == str(plugin.dra_sock)
    assert info.supported_versions == ("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                                       "v1beta1.DRAResourceHealth", "v1alpha1.DRAResourceHealth")
    assert client.dra_version == "v1"
    assert _mode(plugin.dra_sock) == 0o600 and _mode(plugin.reg_sock) == 0o600
    assert "kubelet registered the plugin" in plugin.log_text()


def test_prepare_and_unprepare_claims_allocated_by_the_reference_allocator(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    mig = plugin.allocate("mig", [request("gpu", "mig")])
    vf = plugin.allocate("vf", [request("net", "vf", capacity={"requests": {"bandwidth": "10G"}})])
    ts = plugin.allocate("ts", [request("gpu", "timeshare")])
    out = client.prepare([mig, vf, ts])
    assert {uid: r.error for uid, r in out.items()} == {mig[2]: "", vf[2]: "", ts[2]: ""}
    for ref in (mig, vf, ts):
        (dev,) = out[ref[2]].devices
        claim = plugin.store.get("resourceclaims", "default", ref[1])
        (res,) = claim["status"]["allocation"]["devices"]["results"]
        assert (dev.pool_name, dev.device_name) == (res["pool"], res["device"])
        assert dev.cdi_device_ids == (f"k8s.{DRIVER}/device={ref[2]}-{res['device']}",)
    assert plugin.cdi_uids() == {mig[2], vf[2], ts[2]}
    spec = json.loads((plugin.cdi / f"k8s.{DRIVER}_device_{vf[2]}.json").read_text())
    env = spec["devices"][0]["containerEdits"]["env"]
    assert any(e.endswith("_TYPE=vf") for e in env) and any("_BANDWIDTH=" in e for e in env)

    # The same claims again: same answer, nothing new written.
    assert client.prepare([mig, vf, ts]) == out
    assert client.unprepare([mig, vf, ts]) == {mig[2]: "", vf[2]: "", ts[2]: ""}
    assert plugin.cdi_uids() == set() and plugin.checkpoint()["claims"] == {}
    assert plugin.stop() == 0


def test_v1beta1_kubelet_is_served_too(make_plugin):
    plugin = make_plugin()
    plugin.start()
    client = plugin.client()
    client.register(prefer=("v1beta1",))
    assert client.dra_version == "v1beta1"
    ref = plugin.allocate("full", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert client.unprepare([ref]) == {ref[2]: ""}


def test_revalidation_refuses_a_skewed_allocation_over_grpc(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    mig = plugin.allocate("mig", [request("gpu", "mig")])
    assert client.prepare([mig])[mig[2]].error == ""
    # A scheduler without the groups gate could hand out the whole GPU under a prepared MIG slice.
    dev = client.prepare([mig])[mig[2]].devices[0].device_name
    gpu = dev.split("-mig-")[0]
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "skewed", "namespace": "default", "uid": "skewed-uid"},
             "status": {"allocation": {"devices": {"results": [
                 {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": gpu}]}}}}
    plugin.store.create("resourceclaims", claim)
    error = client.prepare([("default", "skewed", "skewed-uid")])["skewed-uid"].error
    assert "preparation-time revalidation failed" in error and f"{gpu}-counters" in error and dev in error
    assert "skewed-uid" not in plugin.cdi_uids()


def test_health_stream_reports_injected_faults(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    stream = client.watch_health(timeout=GENEROUS_S)
    first = next(stream)
    assert {d.health for d in first} == {"HEALTHY"} and len(first) > 50
    assert {d.pool_name for d in first} == {"n1"}
    bdf = "0000:07:00.0"
    subprocess.run([sys.executable, "-m", "driver", "fault", "--sysfs-root", str(plugin.sysfs), "--device", bdf,
                    "--message", "XID 79: GPU has fallen off the bus"], check=True, cwd=REPO)
    t0 = time.monotonic()
    for devices in stream:
        bad = {d.device_name: d for d in devices if d.health == "UNHEALTHY"}
        if bad:
            break
    assert time.monotonic() - t0 < 30, "health must refresh inside the kubelet's 30 s lease"
    assert "gpu-0" in bad and all(n.startswith("gpu-0") for n in bad)
    assert bad["gpu-0"].message == f"{bdf}: XID 79: GPU has fallen off the bus"
    subprocess.run([sys.executable, "-m", "driver", "fault", "--sysfs-root", str(plugin.sysfs), "--device", bdf,
                    "--clear"], check=True, cwd=REPO)
    for devices in stream:
        if all(d.health == "HEALTHY" for d in devices):
            break
    else:
        pytest.fail("fault was never cleared")
    # Older kubelets use v1alpha1/v1beta1: the same list.
    for version in ("v1alpha1", "v1beta1"):
        lst = next(client.watch_health(timeout=GENEROUS_S, version=version))
        assert len(lst) == len(first)


def test_stale_sockets_are_replaced_and_sigterm_cleans_up(make_plugin):
    plugin = make_plugin()
    plugin.start()
    assert plugin.stop(signal.SIGKILL) == -signal.SIGKILL
    assert plugin.reg_sock.exists() and plugin.dra_sock.exists()  # left behind by the crash
    client = plugin.start()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.stop(signal.SIGTERM) == 0
    assert not plugin.reg_sock.exists() and not plugin.dra_sock.exists()
    assert "kubelet plugin stopped" in plugin.log_text()


def _dead_api_kubeconfig(tmp_path) -> str:
    with socket.socket() as s:  # a port nobody listens on: every claim read retries until the deadline
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {}}],
    }))
    return str(kubeconfig)


def test_sigterm_drains_in_flight_calls(make_plugin, tmp_path):
    # A prepare that takes ~1.5 s (API retries) is in flight when SIGTERM arrives: it must
    # still get its answer (grace period 2 s), and the process must exit 0.
    plugin = make_plugin(extra_args=("--kubeconfig", _dead_api_kubeconfig(tmp_path), "--api-deadline", "1.5",
                                     "--no-publish"))
    client = plugin.start()
    result: dict = {}
    errors: list = []

    def call():
        try:
            result.update(client.prepare([("default", "c1", "u-1")]))
        except grpc.RpcError as exc:
            errors.append(exc)

    t = threading.Thread(target=call)
    t.start()
    wait_for_text(plugin.log_text, "claim read failed, retrying")  # the call is in flight
    plugin.proc.send_signal(signal.SIGTERM)
    t.join(GENEROUS_S)
    assert errors == [], "the in-flight call was cut instead of drained"
    assert "API server unavailable" in result["u-1"].error
    assert plugin.wait_exit() == 0
    assert not plugin.reg_sock.exists()


def test_socket_path_over_af_unix_limit_is_a_clear_error(make_plugin):
    plugin = make_plugin()
    long_dir = plugin.root / ("x" * 100)
    plugin.extra_args = ("--kubelet-plugins-dir", str(long_dir))
    proc = plugin.spawn()
    assert proc.wait(GENEROUS_S) == 2
    log = plugin.log_text()
    assert "over the AF_UNIX limit of 107" in log and "--kubelet-plugins-dir" in log
    plugin.proc = None


def test_bad_kubeconfig_is_a_clear_error(make_plugin):
    plugin = make_plugin(extra_args=("--kubeconfig", "/nonexistent/kubeconfig"))
    assert plugin.spawn().wait(GENEROUS_S) == 2
    assert "--kubeconfig /nonexistent/kubeconfig: cannot load Kubernetes client configuration" in plugin.log_text()
    plugin.proc = None


def test_metrics_endpoint(make_plugin):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    plugin = make_plugin(extra_args=("--metrics-addr", f"127.0.0.1:{port}"))
    client = plugin.start()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    client.prepare([ref])
    client.prepare([("default", "missing", "m-1")])
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'fake_dra_plugin_claims_total{operation="prepare",result="ok"} 1.0' in text
    assert 'fake_dra_plugin_claims_total{operation="prepare",result="error"} 1.0' in text
    assert "fake_dra_plugin_prepared_claims 1.0" in text
    assert 'fake_dra_plugin_requests_total{method="NodePrepareResources",version="v1"} 2.0' in text
    assert "fake_dra_plugin_registered 1.0" in text
    assert 'fake_dra_plugin_request_duration_seconds_count{operation="prepare"} 2.0' in text


def test_api_server_unavailable_is_a_per_claim_error_after_retries(make_plugin, tmp_path):
    plugin = make_plugin(extra_args=("--kubeconfig", _dead_api_kubeconfig(tmp_path), "--api-deadline", "1.5",
                                     "--no-publish"))
    client = plugin.start()
    t0 = time.monotonic()
    out = client.prepare([("default", "c1", "u-1")])
    assert "API server unavailable after" in out["u-1"].error
    assert 1.0 <= time.monotonic() - t0 < 10


def test_grpc_errors_never_fail_the_whole_call(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    refs = [("default", "x" * 300, "u-1"), ("../x", "a", "u-2"), ("default", "a", "../../u")]
    try:
        out = client.prepare(refs)
    except grpc.RpcError as exc:  # pragma: no cover - the assertion below explains
        pytest.fail(f"bad claims must be per-claim errors, got {exc}")
    assert set(out) == {"u-1", "u-2", "../../u"} and all(r.error for r in out.values())


def _without_groups(slices):
    """What a scheduler that lost the compatibilityGroups field (version skew) would see."""
    import copy

    out = copy.deepcopy(slices)
    for s in out:
        for dev in s["spec"].get("devices", ()):
            for cons in dev.get("consumesCounters", ()):
                cons.pop("compatibilityGroups", None)
    return out


def test_skewed_scheduler_co_allocates_mig_and_vgpu_and_the_plugin_refuses(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    def on_gpu1(profile):
        return {"selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].index == 1 && '
                                                     f'device.attributes["{DRIVER}"].profile == "{profile}"'}}]}

    vgpu = plugin.allocate("vgpu", [request("v", "vgpu", **on_gpu1("A100X-5C"))], scheduler_view=_without_groups)
    mig = plugin.allocate("mig", [request("m", "mig", **on_gpu1("1g.5gb"))], scheduler_view=_without_groups)
    assert client.prepare([vgpu])[vgpu[2]].error == ""
    error = client.prepare([mig])[mig[2]].error
    assert "groups incompatible on counter set gpu-1-counters" in error
    assert mig[2] not in plugin.cdi_uids()
    # With the groups visible, the reference allocator itself never makes that placement.
    with pytest.raises(Exception, match="cannot be allocated"):
        plugin.allocate("mig2", [request("m", "mig", **on_gpu1("1g.5gb"))])
