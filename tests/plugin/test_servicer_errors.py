"""Error paths of the DRA servicer: an unexpected exception fails the whole call with INTERNAL
(and releases the state gate); a per-claim error travels in that claim's entry and is counted."""

from __future__ import annotations


import grpc
import pytest

from driver.plugin.gen import dra_v1_pb2, dra_v1_pb2_grpc
from driver.plugin.metrics import PluginMetrics
from driver.plugin.services import dra_servicer
from driver.state.types import PrepareResult


class Aborted(Exception):
    pass


class Context:
    def time_remaining(self) -> float | None:
        return None  # no gRPC deadline: the servicer still bounds the call by the kubelet's 45 s

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code, self.details = code, details
        raise Aborted(details)  # grpc's abort raises too: the handler must not continue


class BrokenState:
    def __init__(self) -> None:
        self.fail = True

    def prepare(self, refs, timeout_s=None, abandoned=None):
        if self.fail:
            raise RuntimeError("disk on fire")
        return {r.uid: PrepareResult(error=f"claim {r.name}: not allocated") for r in refs}

    def unprepare(self, refs, timeout_s=None, abandoned=None):
        raise RuntimeError("disk on fire")

    def count(self) -> int:
        return 0


def _request(uid: str):
    return dra_v1_pb2.NodePrepareResourcesRequest(claims=[dra_v1_pb2.Claim(namespace="default", name="c", uid=uid)])


def test_unexpected_exception_is_internal():
    state, metrics = BrokenState(), PluginMetrics.create()
    srv = dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc, "v1", state, metrics)
    ctx = Context()
    with pytest.raises(Aborted):
        srv.NodePrepareResources(_request("u1"), ctx)
    assert ctx.code == grpc.StatusCode.INTERNAL and "prepare failed: disk on fire" in ctx.details
    with pytest.raises(Aborted):
        srv.NodeUnprepareResources(dra_v1_pb2.NodeUnprepareResourcesRequest(
            claims=[dra_v1_pb2.Claim(namespace="default", name="c", uid="u1")]), ctx)
    assert ctx.code == grpc.StatusCode.INTERNAL and "unprepare failed: disk on fire" in ctx.details


def test_per_claim_error_is_answered_and_counted():
    state, metrics = BrokenState(), PluginMetrics.create()
    state.fail = False
    srv = dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc, "v1", state, metrics)
    resp = srv.NodePrepareResources(_request("u2"), Context())
    assert resp.claims["u2"].error == "claim c: not allocated" and not resp.claims["u2"].devices
    value = metrics.registry.get_sample_value("fake_dra_plugin_claims_total", {"operation": "prepare", "result": "error"})
    assert value == 1


def test_error_texts_are_bounded_per_claim_and_per_response():
    # Issue 18 item 6: however many claims fail with however long a message, the answer stays far
    # below the kubelet's 4 MiB message limit and every claim is still answered.
    class Verbose(BrokenState):
        def prepare(self, refs, timeout_s=None, abandoned=None):
            return {r.uid: PrepareResult(error=f"claim {r.name}: " + "x" * 100_000) for r in refs}

    state = Verbose()
    srv = dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc, "v1", state, PluginMetrics.create())
    req = dra_v1_pb2.NodePrepareResourcesRequest(
        claims=[dra_v1_pb2.Claim(namespace="default", name=f"c{i}", uid=f"u{i}") for i in range(3000)])
    resp = srv.NodePrepareResources(req, Context())
    assert len(resp.claims) == 3000 and all(r.error.startswith(f"claim c{uid[1:]}: x") for uid, r in resp.claims.items())
    assert max(len(r.error) for r in resp.claims.values()) <= 1024
    assert resp.ByteSize() < 1024 * 1024
