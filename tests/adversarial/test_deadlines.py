"""No kubelet call outlives its caller: every call ends by its gRPC deadline and never after the
kubelet's 45 s, even when the claim reader is allowed to retry longer (--api-deadline)."""

from __future__ import annotations

import threading
import time

from kubernetes import client

from adversarial.claims import allocated_claim, ref
from driver.kube.claims import KubeClaimSource
from driver.plugin.client import KubeletClient
from driver.plugin.gen import dra_v1_pb2, dra_v1_pb2_grpc
from driver.plugin.metrics import PluginMetrics
from driver.plugin.services import dra_servicer
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.types import ClaimRef
from plugin.harness import DRIVER, NODE


def test_claim_read_retries_end_with_the_grpc_deadline(make_plugin, api, tmp_path):
    plugin = make_plugin(extra_args=("--kubeconfig", str(api.kubeconfig(tmp_path / "kc")), "--no-publish",
                                     "--api-deadline", "30"))
    plugin.start()
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.hold("x")
    with KubeletClient(plugin.registry, DRIVER, timeout_s=3.0) as kubelet:
        t0 = time.monotonic()
        answer = kubelet.prepare([ref(x)])[ref(x)[2]]  # before the fix: DEADLINE_EXCEEDED, the read went on
        took = time.monotonic() - t0
    assert took < 3.0 and "deadline passed" in answer.error
    time.sleep(1.0)
    assert max(t for t, _ in api.reads_of("x")) < t0 + 3.0, "the plugin kept reading after the caller gave up"
    assert not (plugin.state / "checkpoint.json").exists() and plugin.cdi_uids() == set()
    assert plugin.stop() == 0


def test_no_call_runs_longer_than_its_cap_even_without_a_grpc_deadline(api, tmp_path, demo_pool):
    # max_call_s stands in for the kubelet's 45 s so the test does not wait that long.
    source = KubeClaimSource(client.ApiClient(client.Configuration(host=api.url)), deadline_s=30.0)
    state = DeviceState(driver_name=DRIVER, claims=source, pool=PoolCache(lambda: demo_pool),
                        cdi=CdiWriter(tmp_path / "cdi", DRIVER), max_call_s=1.5,
                        checkpoint=CheckpointStore(tmp_path / "state", driver_name=DRIVER, node_name=NODE, boot_id="b"))
    x = allocated_claim("x", ["gpu-0"])
    api.add(x)
    api.hold("x")
    t0 = time.monotonic()
    (out,) = state.prepare([ClaimRef(*ref(x))]).values()
    assert time.monotonic() - t0 < 2.5
    assert "deadline passed" in out.error and "default/x" in out.error
    assert state.prepared() == {}
    state.close()


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def time_remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def abort(self, code, details):  # pragma: no cover - not expected here
        raise AssertionError(details)


class _Stuck:
    """A state whose first call holds the gate for a long time."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def prepare(self, refs, timeout_s=None):
        self.release.wait(10)
        return {}

    def count(self) -> int:
        return 0


def test_waiting_for_the_state_gate_counts_against_the_call_deadline():
    state = _Stuck()
    gate = threading.BoundedSemaphore(1)
    servicer = dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc, "v1", state, PluginMetrics.create(), gate)
    req = dra_v1_pb2.NodePrepareResourcesRequest(claims=[dra_v1_pb2.Claim(namespace="default", name="c", uid="u")])
    holder = threading.Thread(target=servicer.NodePrepareResources, args=(req, _Deadline(20)))
    holder.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    resp = servicer.NodePrepareResources(req, _Deadline(0.5))
    assert time.monotonic() - t0 < 1.5
    assert "timed out waiting for other calls" in resp.claims["u"].error
    state.release.set()
    holder.join()
