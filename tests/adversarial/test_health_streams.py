"""Open health streams must not starve prepare: each stream holds a server thread for its lifetime,
and before the fix 32 open streams took every worker, so NodePrepareResources waited forever."""

from __future__ import annotations

import time

import grpc
import pytest

from driver.plugin.client import KubeletClient
from driver.plugin.protos import HEALTH
from driver.plugin.services import MAX_HEALTH_STREAMS
from plugin.harness import DRIVER, request
from waiting import GENEROUS_S

pytestmark = pytest.mark.slow


def _open_streams(endpoint: str, n: int):
    pb2, grpc_mod = HEALTH["v1"]
    channel = grpc.insecure_channel(f"unix://{endpoint}")
    stub = grpc_mod.DRAResourceHealthStub(channel)
    streams = [stub.NodeWatchResources(pb2.NodeWatchResourcesRequest(), timeout=120) for _ in range(n)]
    return channel, streams


def test_prepare_is_answered_promptly_with_40_health_streams_open(make_plugin):
    plugin = make_plugin()
    plugin.start()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    kubelet = KubeletClient(plugin.registry, DRIVER, timeout_s=GENEROUS_S)
    plugin.clients.append(kubelet)
    kubelet.register()
    channel, streams = _open_streams(kubelet.endpoint, 40)  # more than the 32 DRA workers
    try:
        for s in streams:  # each stream's handler runs (holds a server thread) once it has sent this
            assert next(s).devices, "every stream is served too"
        answer = kubelet.prepare([ref])[ref[2]]  # before the fix: DEADLINE_EXCEEDED, no worker left
        assert answer.error == ""
        assert kubelet.unprepare([ref]) == {ref[2]: ""}
    finally:
        for s in streams:
            s.cancel()
        channel.close()
    assert plugin.stop() == 0


def test_streams_beyond_their_budget_are_refused_and_slots_come_back(make_plugin):
    plugin = make_plugin()
    client = plugin.start()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    channel, streams = _open_streams(client.endpoint, MAX_HEALTH_STREAMS + 8)
    try:
        served, refused = 0, 0
        for s in streams:
            try:
                next(s)  # the first full device list: this stream holds a server thread now
                served += 1
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "too many open health streams" in exc.details()
                refused += 1
        assert served == MAX_HEALTH_STREAMS and refused == 8
        answer = client.prepare([ref])[ref[2]]  # within the client's deadline: a DRA worker was free
        assert answer.error == ""
    finally:
        for s in streams:
            s.cancel()
        channel.close()

    # The slots of streams whose client went away are free again (as soon as gRPC ends their calls).
    channel, _ = _open_streams(client.endpoint, 0)
    pb2, grpc_mod = HEALTH["v1"]
    stub = grpc_mod.DRAResourceHealthStub(channel)
    deadline = time.monotonic() + GENEROUS_S
    reopened = []
    try:
        while len(reopened) < MAX_HEALTH_STREAMS:
            s = stub.NodeWatchResources(pb2.NodeWatchResourcesRequest(), timeout=60)
            try:
                next(s)
                reopened.append(s)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        for s in reopened:
            s.cancel()
        channel.close()
    assert plugin.stop() == 0
