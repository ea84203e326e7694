"""gRPC servicers: registration, DRA v1/v1beta1 and health v1/v1beta1/v1alpha1.

Why one generic class per service: the versions have identical messages in different proto
packages, so each servicer is parameterised by its generated module instead of duplicated.
Per-claim problems travel in the response (`error`), which makes the kubelet retry only that
claim; an unexpected exception fails the whole call with INTERNAL (the kubelet retries it all).
Error texts are bounded (ErrorBudget): they may echo claim fields of any size, and a response over
the kubelet's 4 MiB message limit (grpc-go's default receive size, which the kubelet's DRA client
keeps) would fail the whole call, the good claims included. Every DRA call is bounded by the
earliest of its gRPC deadline and the kubelet's 45 s, and observes its own cancellation: when the
kubelet cancels it (its gRPC context ends), the state layer keeps nothing it has not committed
(driver.state.prepare). Health streams are long-lived and each holds a worker thread, so they
get their own budget of threads (MAX_HEALTH_STREAMS, driver.plugin.server sizes the pool to it plus
the DRA workers): a stream beyond it is refused with RESOURCE_EXHAUSTED (the kubelet retries),
and however many streams are open, prepare always finds a thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType

import grpc

from driver.deadline import Alarm
from driver.plugin.gen import pluginregistration_v1_pb2 as reg_pb2
from driver.plugin.grpclog import quiet_undecodable_requests
from driver.plugin.gen import pluginregistration_v1_pb2_grpc as reg_grpc
from driver.plugin.metrics import PluginMetrics
from driver.state.names import shorten
from driver.state.prepare import DeviceState
from driver.state.types import ClaimRef, DeviceHealthStatus

log = logging.getLogger("fake-dra.plugin")
DRA_VERSIONS = ("v1", "v1beta1")  # the kubelet takes the first it supports: newest first
HEALTH_VERSIONS = ("v1", "v1beta1", "v1alpha1")
MAX_HEALTH_STREAMS = 64  # the kubelet opens one per plugin connection; the rest is headroom
MAX_ERROR_CHARS = 1024  # per claim: what a kubelet event shows of a message anyway
ERROR_BUDGET_CHARS = 256 * 1024  # all error texts of one response; far below the kubelet's 4 MiB
CUT_ERROR_CHARS = 96  # each error once the budget is spent


class ErrorBudget:
    """Cuts the error texts of one response: each to MAX_ERROR_CHARS, and every one to
    CUT_ERROR_CHARS once ERROR_BUDGET_CHARS are spent, so no number of bad claims pushes the
    answers of the good ones past the kubelet's message limit."""

    def __init__(self) -> None:
        self.left = ERROR_BUDGET_CHARS

    def fit(self, error: str) -> str:
        limit = MAX_ERROR_CHARS if self.left >= MAX_ERROR_CHARS else CUT_ERROR_CHARS
        if len(error) > limit:
            tail = f"... ({len(error)} characters in all)"
            error = error[:limit - len(tail)] + tail
        self.left -= len(error)
        return error


def _time_left(context: grpc.ServicerContext | None) -> float | None:
    """The call's gRPC deadline (None: none); the state layer caps it at the kubelet's 45 s."""
    return context.time_remaining() if context is not None else None


def _abandoned(context: grpc.ServicerContext | None) -> threading.Event:
    """Set when the call ends before we answer: the kubelet cancelled it (a pod deleted while its
    prepare was in flight, a kubelet restart) or its deadline passed. gRPC runs the callbacks of a
    call when it terminates, cancellation included; one that has already ended is set at once."""
    event = Alarm()  # also wakes the call where it is queued (driver.deadline.Alarm)
    add_callback = getattr(context, "add_callback", None)
    if add_callback is not None and not add_callback(event.set):
        event.set()
    return event


class RegistrationServicer(reg_grpc.RegistrationServicer):
    def __init__(self, driver_name: str, endpoint: str, supported: list[str], metrics: PluginMetrics) -> None:
        self.info = reg_pb2.PluginInfo(type="DRAPlugin", name=driver_name, endpoint=endpoint, supported_versions=supported)
        self.metrics = metrics
        self.registered = threading.Event()

    def GetInfo(self, request: reg_pb2.InfoRequest, context: grpc.ServicerContext) -> reg_pb2.PluginInfo:  # noqa: N802
        return self.info

    def NotifyRegistrationStatus(self, request, context):  # noqa: N802
        if request.plugin_registered:
            log.info("kubelet registered the plugin", extra={"driver": self.info.name})
            self.metrics.registered.set(1)
            self.registered.set()
        else:
            log.error("kubelet rejected the plugin registration", extra={"driver": self.info.name, "error": request.error})
            self.metrics.registered.set(0)
            self.registered.clear()
        return reg_pb2.RegistrationStatusResponse()


def dra_servicer(pb2: ModuleType, grpc_mod: ModuleType, version: str, state: DeviceState, metrics: PluginMetrics):
    """The DRA service of one version; every version shares `state` (and so its state gate,
    driver.state.ownership.StateGate, which bounds how many calls work on the state at once)."""
    quiet_undecodable_requests()
    # Label children resolved once: labels() costs a lock and a dict walk on every call.
    prepare_calls = metrics.requests.labels("NodePrepareResources", version)
    unprepare_calls = metrics.requests.labels("NodeUnprepareResources", version)
    prepare_ok, prepare_err = metrics.claims.labels("prepare", "ok"), metrics.claims.labels("prepare", "error")
    unprepare_ok, unprepare_err = metrics.claims.labels("unprepare", "ok"), metrics.claims.labels("unprepare", "error")
    prepare_s, unprepare_s = metrics.duration.labels("prepare"), metrics.duration.labels("unprepare")
    device = pb2.Device

    class DRAPluginServicer(grpc_mod.DRAPluginServicer):
        def NodePrepareResources(self, request, context):  # noqa: N802
            prepare_calls.inc()
            start = time.perf_counter()
            refs = [ClaimRef(c.namespace, c.name, c.uid) for c in request.claims]
            try:
                results = state.prepare(refs, timeout_s=_time_left(context), abandoned=_abandoned(context))
            except Exception as exc:
                log.exception("NodePrepareResources failed")
                context.abort(grpc.StatusCode.INTERNAL, f"prepare failed: {shorten(str(exc), MAX_ERROR_CHARS)}")
            resp = pb2.NodePrepareResourcesResponse()
            errors = ErrorBudget()
            for uid, res in results.items():
                entry = resp.claims[uid]
                if res.error:
                    entry.error = errors.fit(res.error)
                    prepare_err.inc()
                    log.warning("prepare failed for claim", extra={"uid": shorten(uid), "error": shorten(res.error, 1024)})
                    continue
                prepare_ok.inc()
                entry.devices.extend(device(request_names=d.request_names, pool_name=d.pool, device_name=d.device,
                                            cdi_device_ids=d.cdi_device_ids) for d in res.devices)
            prepare_s.observe(time.perf_counter() - start)
            metrics.prepared.set(state.count())
            return resp

        def NodeUnprepareResources(self, request, context):  # noqa: N802
            unprepare_calls.inc()
            start = time.perf_counter()
            refs = [ClaimRef(c.namespace, c.name, c.uid) for c in request.claims]
            try:
                results = state.unprepare(refs, timeout_s=_time_left(context), abandoned=_abandoned(context))
            except Exception as exc:
                log.exception("NodeUnprepareResources failed")
                context.abort(grpc.StatusCode.INTERNAL, f"unprepare failed: {shorten(str(exc), MAX_ERROR_CHARS)}")
            resp = pb2.NodeUnprepareResourcesResponse()
            errors = ErrorBudget()
            for uid, error in results.items():
                resp.claims[uid].error = errors.fit(error)
                (unprepare_err if error else unprepare_ok).inc()
            unprepare_s.observe(time.perf_counter() - start)
            metrics.prepared.set(state.count())
            return resp

    return DRAPluginServicer()


class HealthHub:
    """Latest device-health list plus a condition the stream servicers wait on.

    A background thread (driver.plugin.server) calls `publish` every interval; streams send the
    full list at least that often and immediately when something changed.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._cond = threading.Condition()
        self._devices: list[DeviceHealthStatus] = []
        self._seq = 0
        self._wakes = 0
        self._stopped = False

    def publish(self, devices: list[DeviceHealthStatus]) -> None:
        with self._cond:
            self._devices = devices
            self._seq += 1
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def wake(self) -> None:
        """Let every stream re-check whether its client is still there (called when an RPC ends)."""
        with self._cond:
            self._wakes += 1
            self._cond.notify_all()

    def stream(self, alive: Callable[[], bool]) -> Iterator[list[DeviceHealthStatus]]:
        """The full list now, then on every change and at least every interval, while alive()."""
        seq = -1
        while True:
            due = time.monotonic() + self.interval_s
            with self._cond:
                while True:
                    wakes = self._wakes
                    self._cond.wait_for(
                        lambda last=seq, w=wakes: self._stopped or self._seq != last or self._wakes != w,
                        timeout=max(0.0, due - time.monotonic()))
                    if self._stopped or not alive():
                        return
                    if self._seq != seq or time.monotonic() >= due:
                        break  # a change, or the periodic refresh (a mere wake() does not delay it)
                seq, devices = self._seq, self._devices
            yield devices


def health_servicer(pb2: ModuleType, grpc_mod: ModuleType, version: str, hub: HealthHub, metrics: PluginMetrics,
                    slots: threading.Semaphore | None = None):
    """`slots` bounds the open streams (shared by every health version); see the module docstring."""
    slots = slots if slots is not None else threading.BoundedSemaphore(MAX_HEALTH_STREAMS)

    class HealthServicer(grpc_mod.DRAResourceHealthServicer):
        def NodeWatchResources(self, request, context):  # noqa: N802
            metrics.requests.labels("NodeWatchResources", version).inc()
            if not slots.acquire(blocking=False):
                log.warning("health stream refused: too many open", extra={"version": version, "max": MAX_HEALTH_STREAMS})
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"too many open health streams (at most {MAX_HEALTH_STREAMS}); retry later")
            try:
                yield from self._stream(context)
            finally:
                slots.release()

        def _stream(self, context):
            context.add_callback(hub.wake)  # a client that goes away frees its slot at once
            log.info("health stream opened", extra={"version": version})
            for devices in hub.stream(context.is_active):
                yield pb2.NodeWatchResourcesResponse(devices=[
                    pb2.DeviceHealth(
                        device=pb2.DeviceIdentifier(pool_name=d.pool, device_name=d.device),
                        health=pb2.HealthStatus.Value(d.health),
                        last_updated_time=d.last_updated,
                        message=d.message,
                    )
                    for d in devices
                ])
            log.info("health stream closed", extra={"version": version})

    return HealthServicer()
