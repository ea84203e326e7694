"""KubeletClient: plays the kubelet against a running plugin over its real unix sockets.

Used by the integration tests, the e2e harness and hack/bench_plugin.py. It does what the kubelet
does: dial `<registry-dir>/<driver>-reg.sock`, GetInfo, pick the first advertised DRA version it
supports, report the registration status, then call the DRA and health services on the endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from driver.plugin.gen import pluginregistration_v1_pb2 as reg_pb2
from driver.plugin.gen import pluginregistration_v1_pb2_grpc as reg_grpc
from driver.plugin.protos import DRA as _DRA
from driver.plugin.protos import HEALTH as _HEALTH

ClaimTuple = tuple[str, str, str]  # namespace, name, uid


@dataclass(frozen=True)
class PluginInfo:
    type: str
    name: str
    endpoint: str
    supported_versions: tuple[str, ...]


@dataclass(frozen=True)
class DeviceResult:
    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]


@dataclass(frozen=True)
class ClaimResult:
    """One claim's answer to NodePrepareResources: devices, or a non-empty error."""

    devices: tuple[DeviceResult, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class DeviceHealth:
    pool_name: str
    device_name: str
    health: str  # HEALTHY | UNHEALTHY | UNKNOWN
    last_updated_time: int
    message: str = ""


def rpc_error_text(exc: BaseException) -> str | None:
    """A failed gRPC call in one line (`UNAVAILABLE: failed to connect to all addresses; ...`), or
    None when `exc` is not a gRPC error. grpc's own str() spans five lines of debug detail."""
    if not isinstance(exc, grpc.RpcError):
        return None
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    name = code().name if callable(code) and code() is not None else type(exc).__name__
    text = " ".join(str(details() or "").split()) if callable(details) else ""
    return f"{name}: {text}" if text else name


@dataclass
class KubeletClient:
    """`KubeletClient(registry_dir, driver_name)`; call `register()` first (or pass `endpoint`)."""

    registry_dir: str | os.PathLike[str]
    driver_name: str
    timeout_s: float = 45.0  # the kubelet's default per-call timeout
    endpoint: str | None = None
    dra_version: str | None = None
    health_version: str | None = None
    _channels: list[grpc.Channel] = field(default_factory=list, repr=False)
    _dra_stub: object | None = field(default=None, repr=False)

    @property
    def registration_socket(self) -> Path:
        return Path(self.registry_dir) / f"{self.driver_name}-reg.sock"

    def _channel(self, path: str) -> grpc.Channel:
        ch = grpc.insecure_channel(f"unix://{path}")
        self._channels.append(ch)
        return ch

    def register(self, prefer: Sequence[str] = ("v1", "v1beta1")) -> PluginInfo:
        """GetInfo + NotifyRegistrationStatus, choosing the first advertised DRA version in `prefer`."""
        ch = self._channel(str(self.registration_socket))
        stub = reg_grpc.RegistrationStub(ch)
        raw = stub.GetInfo(reg_pb2.InfoRequest(), timeout=self.timeout_s)
        info = PluginInfo(raw.type, raw.name, raw.endpoint, tuple(raw.supported_versions))
        error = ""
        if info.type != "DRAPlugin" or info.name != self.driver_name:
            error = f"unexpected plugin {info.type}/{info.name}"
        chosen = next((s.split(".")[0] for s in info.supported_versions
                       if s.endswith(".DRAPlugin") and s.split(".")[0] in prefer), None)
        if chosen is None and not error:
            error = f"no supported DRA version among {list(info.supported_versions)}"
        stub.NotifyRegistrationStatus(reg_pb2.RegistrationStatus(plugin_registered=not error, error=error),
                                      timeout=self.timeout_s)
        if error:
            raise RuntimeError(f"registration failed: {error}")
        self.endpoint, self.dra_version = info.endpoint, chosen
        self.health_version = next((s.split(".")[0] for s in info.supported_versions
                                    if s.endswith(".DRAResourceHealth") and s.split(".")[0] in _HEALTH), None)
        self._dra_stub = None
        return info

    def _dra(self):
        if self.endpoint is None:
            self.register()
        if self._dra_stub is None:
            _pb2, grpc_mod = _DRA[self.dra_version or "v1"]
            self._dra_stub = grpc_mod.DRAPluginStub(self._channel(self.endpoint))
        return _DRA[self.dra_version or "v1"][0], self._dra_stub

    def prepare(self, claims: Sequence[ClaimTuple]) -> dict[str, ClaimResult]:
        return self.prepare_result(self.start_prepare(claims).result())

    def start_prepare(self, claims: Sequence[ClaimTuple]) -> grpc.Future:
        """NodePrepareResources without waiting: `.cancel()` it as the kubelet does when the pod is
        deleted (or the kubelet restarts) while the call is in flight; `prepare_result(f.result())`."""
        pb2, stub = self._dra()
        req = pb2.NodePrepareResourcesRequest(claims=[pb2.Claim(namespace=n, name=m, uid=u) for n, m, u in claims])
        return stub.NodePrepareResources.future(req, timeout=self.timeout_s)

    @staticmethod
    def prepare_result(resp) -> dict[str, ClaimResult]:  # noqa: ANN001 - a NodePrepareResourcesResponse of any version
        return {
            uid: ClaimResult(
                devices=tuple(DeviceResult(tuple(d.request_names), d.pool_name, d.device_name, tuple(d.cdi_device_ids))
                              for d in r.devices),
                error=r.error,
            )
            for uid, r in resp.claims.items()
        }

    def unprepare(self, claims: Sequence[ClaimTuple]) -> dict[str, str]:
        """claim UID -> error ("" when unprepared)."""
        pb2, stub = self._dra()
        req = pb2.NodeUnprepareResourcesRequest(claims=[pb2.Claim(namespace=n, name=m, uid=u) for n, m, u in claims])
        resp = stub.NodeUnprepareResources(req, timeout=self.timeout_s)
        return {uid: r.error for uid, r in resp.claims.items()}

    def watch_health(self, timeout: float, version: str | None = None) -> Iterator[list[DeviceHealth]]:
        """Yield each full device-health list the plugin streams, until `timeout` seconds pass."""
        if self.endpoint is None:
            self.register()
        v = version or self.health_version or "v1"
        pb2, grpc_mod = _HEALTH[v]
        stub = grpc_mod.DRAResourceHealthStub(self._channel(self.endpoint))
        stream = stub.NodeWatchResources(pb2.NodeWatchResourcesRequest(), timeout=timeout)
        try:
            for resp in stream:
                yield [DeviceHealth(d.device.pool_name, d.device.device_name, pb2.HealthStatus.Name(d.health),
                                    d.last_updated_time, d.message) for d in resp.devices]
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
        finally:
            stream.cancel()

    def close(self) -> None:
        for ch in self._channels:
            ch.close()
        self._channels.clear()
        self._dra_stub = None

    def __enter__(self) -> KubeletClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
