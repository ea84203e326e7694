"""NVIDIA's opaque config API `resource.nvidia.com/v1beta1`: types, defaults, normalization, validation.

Mirrors kubernetes-sigs/dra-driver-nvidia-gpu api/nvidia.com/resource/v1beta1 (api.go, gpuconfig.go,
migconfig.go, vfiodeviceconfig.go, iommu.go, sharing.go, validate.go): the same fields (decoded
strictly by driver.personality.gojson), the same implied defaults (Normalize, which depends on the
driver's TimeSlicingSettings and MPSSupport gates) and the same checks with the same messages
(Validate). A config is carried as its kind and a plain dict of its fields.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.personality.gojson import BOOL, INT, QUANTITY, STRING, MapOf, Scalar, Scheme, Struct, compact

GROUP_VERSION = "resource.nvidia.com/v1beta1"
GPU_CONFIG, MIG_CONFIG, VFIO_CONFIG = "GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"
TIME_SLICING, MPS = "TimeSlicing", "MPS"
INTERVALS = ("Default", "Short", "Medium", "Long")
LEGACY_ONLY, PREFER_IOMMUFD = "LegacyOnly", "PreferIommuFD"

_MPS = Struct("MpsConfig", {
    "defaultActiveThreadPercentage": INT,
    "defaultPinnedDeviceMemoryLimit": QUANTITY,
    "defaultPerDevicePinnedMemoryLimit": MapOf(QUANTITY, "v1beta1.MpsPerDevicePinnedMemoryLimit"),
    "multiUser": BOOL,
})
_STRATEGY = Scalar("string", "v1beta1.GpuSharingStrategy")
_TIME_SLICING = Struct("TimeSlicingConfig", {"interval": Scalar("string", "v1beta1.TimeSliceInterval")})
SCHEME = Scheme(
    group_version=GROUP_VERSION,
    kinds={
        GPU_CONFIG: Struct(GPU_CONFIG, {"sharing": Struct("GpuSharing", {
            "strategy": _STRATEGY, "timeSlicingConfig": _TIME_SLICING, "mpsConfig": _MPS})}),
        MIG_CONFIG: Struct(MIG_CONFIG, {"sharing": Struct("MigDeviceSharing", {"strategy": _STRATEGY, "mpsConfig": _MPS})}),
        VFIO_CONFIG: Struct(VFIO_CONFIG, {"iommu": Struct("IOMMUConfig", {
            "backendPolicy": Scalar("string", "v1beta1.IOMMUBackendPolicy"), "enableAPIDevice": BOOL})}),
        "ComputeDomainChannelConfig": Struct("ComputeDomainChannelConfig", {"domainID": STRING, "allocationMode": STRING}),
        "ComputeDomainDaemonConfig": Struct("ComputeDomainDaemonConfig", {"domainID": STRING}),
        # CRD types of the compute-domain driver, registered in the same scheme; never a device config.
        "ComputeDomain": None,
        "ComputeDomainClique": None,
    },
    # runtime.NewScheme() names a scheme after the line that created it (api.go's init).
    name="sigs.k8s.io/dra-driver-nvidia-gpu/api/nvidia.com/resource/v1beta1/api.go:63",
)
DEVICE_CONFIG_KINDS = (GPU_CONFIG, MIG_CONFIG, VFIO_CONFIG)


class ConfigInvalid(Exception):
    """A Validate() error, worded as NVIDIA's."""


@dataclass(frozen=True)
class NvidiaConfig:
    """A decoded config: its kind and fields (apiVersion/kind not included)."""

    kind: str
    fields: Mapping[str, Any]

    def canonical(self) -> str:
        """The normalized object as JSON: two configs are the same iff these are (reflect.DeepEqual)."""
        return compact({"apiVersion": GROUP_VERSION, "kind": self.kind, **_sorted(self.fields)})

    @property
    def sharing(self) -> Mapping[str, Any] | None:
        return self.fields.get("sharing")


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return value


def default(kind: str) -> NvidiaConfig:
    """DefaultGpuConfig / DefaultMigDeviceConfig / DefaultVfioDeviceConfig (with PassthroughSupport)."""
    if kind == VFIO_CONFIG:
        return NvidiaConfig(kind, {"iommu": {"backendPolicy": LEGACY_ONLY, "enableAPIDevice": False}})
    return NvidiaConfig(kind, {})


def normalize(config: NvidiaConfig, gates: Mapping[str, bool]) -> NvidiaConfig:
    """Normalize(): implied defaults (a copy; the decoded config stays as the user wrote it)."""
    fields = copy.deepcopy(dict(config.fields))
    if config.kind == VFIO_CONFIG:
        iommu = fields.get("iommu")
        if iommu is None:
            fields["iommu"] = {"backendPolicy": LEGACY_ONLY, "enableAPIDevice": False}
        else:
            iommu.setdefault("backendPolicy", LEGACY_ONLY)
            if not iommu["backendPolicy"]:
                iommu["backendPolicy"] = LEGACY_ONLY
            iommu.setdefault("enableAPIDevice", False)
        return NvidiaConfig(config.kind, fields)
    sharing = fields.get("sharing")
    if config.kind not in (GPU_CONFIG, MIG_CONFIG) or sharing is None:
        return NvidiaConfig(config.kind, fields)
    strategy = sharing.get("strategy", "")
    if config.kind == GPU_CONFIG and gates["TimeSlicingSettings"] and strategy == TIME_SLICING:
        sharing.setdefault("timeSlicingConfig", {"interval": "Default"})
    if gates["MPSSupport"] and strategy == MPS:
        sharing.setdefault("mpsConfig", {})
    return NvidiaConfig(config.kind, fields)


def validate(config: NvidiaConfig, gates: Mapping[str, bool]) -> None:
    """Validate(): ConfigInvalid with NVIDIA's message."""
    if config.kind == VFIO_CONFIG:
        iommu = config.fields.get("iommu")
        policy = (iommu or {}).get("backendPolicy", "")
        if iommu is not None and policy not in (LEGACY_ONLY, PREFER_IOMMUFD):
            raise ConfigInvalid(f"unknown IOMMU backend policy: {policy}, supported IOMMU backend policies: "
                                f"{LEGACY_ONLY}, {PREFER_IOMMUFD}")
        return
    if config.kind == "ComputeDomainChannelConfig" or config.kind == "ComputeDomainDaemonConfig":
        if not config.fields.get("domainID"):
            raise ConfigInvalid("domainID cannot be empty")
        return
    sharing = config.sharing
    if sharing is None:
        return
    strategy = sharing.get("strategy", "")
    _validate_strategy(strategy, gates)
    if gates["TimeSlicingSettings"] and strategy == TIME_SLICING:
        if config.kind == MIG_CONFIG:
            return
        ts = sharing.get("timeSlicingConfig")
        if ts is None or "interval" not in ts:
            # NVIDIA's TimeSlicingConfig.Validate dereferences the interval: `timeSlicingConfig: {}` makes
            # the real plugin panic (nil pointer) instead of answering; refused here with a message.
            raise ConfigInvalid("timeSlicingConfig.interval is not set (NVIDIA's plugin dereferences it without a "
                                "check and crashes on this config; set interval: Default, Short, Medium or Long)")
        interval = ts["interval"]
        if interval not in INTERVALS:
            raise ConfigInvalid(f"unknown time-slice interval: {interval}, supported time-slice intervals: "
                                f"{', '.join(INTERVALS)}")
        return
    if gates["MPSSupport"] and strategy == MPS:
        mps = sharing.get("mpsConfig") or {}
        percentage = mps.get("defaultActiveThreadPercentage")
        if percentage is not None and percentage < 0:
            raise ConfigInvalid("active thread percentage must not be negative")
        if percentage is not None and percentage > 100:
            raise ConfigInvalid("active thread percentage must not be greater than 100")
        return
    what = "GPU" if config.kind == GPU_CONFIG else "MIG device"
    raise ConfigInvalid(f"invalid {what} sharing settings: {sharing}")  # pragma: no cover - unreachable upstream too


def _validate_strategy(strategy: str, gates: Mapping[str, bool]) -> None:
    for name, gate in ((TIME_SLICING, "TimeSlicingSettings"), (MPS, "MPSSupport")):
        if strategy == name:
            if gates[gate]:
                return
            raise ConfigInvalid(f'"{name}" is selected as the GPU sharing strategy, but the "{gate}" feature gate '
                                "is not enabled")
    raise ConfigInvalid(f"unknown GPU sharing strategy: {strategy}, supported GPU sharing strategies: "
                        f"{TIME_SLICING}, {MPS}")
