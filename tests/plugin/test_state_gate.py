"""The DRA servicer bounds how many calls work on the state at once (tail latency under the GIL)."""

from __future__ import annotations

import threading
import time

from driver.plugin.gen import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
)
from driver.plugin.metrics import PluginMetrics
from driver.plugin.services import dra_servicer
from driver.state.types import PreparedDevice, PrepareResult


class SlowState:
    """Records how many calls are inside prepare/unprepare at the same time."""

    def __init__(self) -> None:
        self.inside = self.peak = 0
        self.lock = threading.Lock()

    def _enter(self) -> None:
        with self.lock:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
        time.sleep(0.05)
        with self.lock:
            self.inside -= 1

    def prepare(self, refs, timeout_s=None):
        self._enter()
        return {r.uid: PrepareResult(devices=(PreparedDevice(("r",), "n1", "gpu-0", (f"k8s.x/device={r.uid}-gpu-0",)),))
                for r in refs}

    def unprepare(self, refs, timeout_s=None):
        self._enter()
        return {r.uid: "" for r in refs}

    def count(self) -> int:
        return 0


def test_calls_beyond_the_gate_wait_and_all_versions_share_it():
    state = SlowState()
    gate = threading.BoundedSemaphore(2)
    metrics = PluginMetrics.create()
    servers = [dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc, "v1", state, metrics, gate),
               dra_servicer(dra_v1beta1_pb2, dra_v1beta1_pb2_grpc, "v1beta1", state, metrics, gate)]
    answers: list[object] = []

    def call(i: int) -> None:
        pb2, srv = ((dra_v1_pb2, servers[0]), (dra_v1beta1_pb2, servers[1]))[i % 2]
        claim = pb2.Claim(namespace="default", name=f"c{i}", uid=f"u{i}")
        if i % 3:
            resp = srv.NodePrepareResources(pb2.NodePrepareResourcesRequest(claims=[claim]), None)
            answers.append(resp.claims[f"u{i}"].devices[0].cdi_device_ids[0])
        else:
            resp = srv.NodeUnprepareResources(pb2.NodeUnprepareResourcesRequest(claims=[claim]), None)
            answers.append(resp.claims[f"u{i}"].error)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state.peak == 2
    assert sorted(a for a in answers if a) == sorted(f"k8s.x/device=u{i}-gpu-0" for i in range(12) if i % 3)
    assert len(answers) == 12
