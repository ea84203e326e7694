"""The driver config's `nvidia:` section: NVIDIA's own knobs, spelled as NVIDIA spells them.

Why NVIDIA's spelling: the people who set these up know the Helm chart's `featureGates` and the
kubelet plugin's `--consumable-shares` flag; the same names, defaults, rules and messages here mean a
values file translates one to one (kubernetes-sigs/dra-driver-nvidia-gpu pkg/featuregates/featuregates.go,
cmd/gpu-kubelet-plugin/main.go). What NVML would report about the node (which GPUs have MIG mode on,
which MIG devices mig-parted created, the driver version) is said here too, since sysfs cannot::

    nvidia:
      featureGates: {DynamicMIG: true}     # NVIDIA's gate names and defaults; their exclusivity rules
      consumableShares: memory             # disabled | memory | unlimited | <N> (needs ConsumableShares)
      migDevices:                          # static MIG: GPU minor (or "all") -> "<profile>@<start>" devices
        0: [1g.5gb@0, 1g.5gb@1, 2g.10gb@2, 3g.20gb@4]
      migEnabled: [1]                      # MIG mode on without devices (also implied by migDevices)
      driverVersion: 580.126.20            # what NVML reports (attributes driverVersion, cudaDriverVersion)
      cudaDriverVersion: "13.0"
      iommuFD: false                       # /dev/iommu present (VFIO devices' iommuFDEnabled)
      addressingMode: HMM                  # what nvmlDeviceGetAddressingMode answers on this host (default: the board's)
      models: {...}                        # NVML facts for boards not in driver/hardware/data/nvml.yaml
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.errors import ConfigError
from driver.hardware.nvml import ADDRESSING_MODES, NvmlTable, load_nvml_table
from driver.model.hardware import GpuModel, MigProfile

DRIVER = "gpu.nvidia.com"  # cmd/gpu-kubelet-plugin/main.go DriverName
# NVIDIA's driver gates and their defaults (featuregates.go, defaultFeatureGates), plus the Kubernetes
# logging gates its gate set also registers (logsapi.AddFeatureGates; ContextualLogging forced on).
GATE_DEFAULTS: dict[str, bool] = {
    "TimeSlicingSettings": False,
    "MPSSupport": False,
    "IMEXDaemonsWithDNSNames": True,
    "PassthroughSupport": False,
    "NVMLDeviceHealthCheck": False,
    "DynamicMIG": False,
    "ComputeDomainCliques": True,
    "CrashOnNVLinkFabricErrors": True,
    "DeviceMetadata": False,
    "FabricManagerPartitioning": False,
    "HostManagedIMEXDaemon": False,
    "DRAListTypeAttributes": False,
    "ConsumableShares": False,
    "ContextualLogging": True,
    "LoggingAlphaOptions": False,
    "LoggingBetaOptions": True,
}
# Gates whose behaviour fake-dra does not simulate: accepted (a values file stays valid), with a warning.
NOT_SIMULATED = {
    "FabricManagerPartitioning": "Fabric Manager partitions (gpuModuleID, partitionN attributes) are not simulated",
    "NVMLDeviceHealthCheck": "NVML health events (device taints) are not simulated; fake-dra's health stream "
                             "reports faults instead",
    "DeviceMetadata": "NVIDIA's VFIO device metadata is not simulated (fake-dra writes its own KEP-5304 files)",
}
DEFAULT_DRIVER_VERSION = "580.126.20"  # the value in NVIDIA's ResourceSlice attribute reference
DEFAULT_CUDA_DRIVER_VERSION = "13.0"
SHARES_DISABLED = "disabled"
_KEYS = ("featureGates", "consumableShares", "migDevices", "migEnabled", "driverVersion", "cudaDriverVersion",
         "iommuFD", "addressingMode", "models")
_MIG_DEVICE = re.compile(r"^(?P<profile>[^@\s]+)@(?P<start>\d+)$")
_VERSION = re.compile(r"^\d+(\.\d+){0,2}$")
ALL = "all"
# nvmlDeviceGetAddressingMode answering NVML_ERROR_NOT_SUPPORTED: NVIDIA's plugin publishes no attribute.
NOT_SUPPORTED = "NotSupported"


@dataclass(frozen=True)
class NvidiaSettings:
    """The parsed `nvidia:` section (defaults: a plain install of NVIDIA's Helm chart)."""

    gates: Mapping[str, bool] = field(default_factory=lambda: dict(GATE_DEFAULTS))
    consumable_shares: str = SHARES_DISABLED
    mig_devices: Mapping[int | str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    mig_enabled: tuple[int | str, ...] = ()
    driver_version: str = DEFAULT_DRIVER_VERSION
    cuda_driver_version: str = DEFAULT_CUDA_DRIVER_VERSION
    iommu_fd: bool = False
    # The host's answer for every GPU (HMM, ATS, None, NotSupported); None: each board's own (nvml.yaml).
    addressing_mode: str | None = None
    nvml: NvmlTable = field(default_factory=load_nvml_table)
    warnings: tuple[str, ...] = ()

    def addressing_mode_of(self, board_mode: str | None) -> str | None:
        """The addressingMode attribute's value for a GPU whose board reports `board_mode` (None: none)."""
        mode = self.addressing_mode if self.addressing_mode is not None else board_mode
        return None if mode == NOT_SUPPORTED else mode

    def gate(self, name: str) -> bool:
        return bool(self.gates[name])

    @property
    def shares_enabled(self) -> bool:
        """isConsumableSharesEnabled: the gate on and a mode other than disabled."""
        return self.gate("ConsumableShares") and self.consumable_shares not in ("", SHARES_DISABLED)

    def partitioned_by(self) -> tuple[str, str] | None:
        """The knob that makes NVIDIA's plugin publish something other than whole GPUs (and their VFIO
        functions): (its path in the driver config, what it publishes); None when every device is whole."""
        if self.gate("DynamicMIG"):
            return "nvidia.featureGates.DynamicMIG", "every MIG placement on counters"
        if self.mig_devices:
            return "nvidia.migDevices", "MIG devices instead of whole GPUs"
        if self.mig_enabled:
            return "nvidia.migEnabled", "GPUs in MIG mode, which offer no whole device"
        if self.shares_enabled:
            return "nvidia.consumableShares", "GPUs shared by consumable capacity"
        return None

    def mig_mode(self, minor: int, mig_capable: bool = True) -> bool:
        """Whether NVML reports MIG mode on for the GPU with this minor ("all" means every MIG-capable GPU)."""
        if minor in self.mig_devices or minor in self.mig_enabled:
            return True
        return mig_capable and (ALL in self.mig_devices or ALL in self.mig_enabled)

    def static_mig(self, minor: int) -> tuple[tuple[str, int], ...]:
        """The MIG devices mig-parted created on this GPU: (profile, placement start)."""
        return self.mig_devices.get(minor, self.mig_devices.get(ALL, ()))

    def check_mig(self, minor: int, model: GpuModel) -> list[tuple[MigProfile, int]]:
        """This GPU's static MIG devices against its model: ConfigError for a profile the model does
        not have, a placement it does not offer, or two devices on one memory slice. Starts are NVML's
        (what `nvidia-smi mig -lgi` prints and NVIDIA's device names carry: 0, 3, 6, 9 for the 1g
        profiles of an RTX PRO 6000 Blackwell); the result gives the catalog's memory-slice starts."""
        key = minor if minor in self.mig_devices else ALL
        where = f"nvidia.migDevices[{key}]"
        if not model.mig_capable:
            if self.mig_mode(minor, mig_capable=False):
                where = f"nvidia.migDevices[{minor}]" if minor in self.mig_devices else "nvidia.migEnabled"
                raise ConfigError(f"{where}: GPU {minor} ({model.product_name}) does not support MIG")
            return []
        facts = self.nvml.facts(model)
        out: list[tuple[MigProfile, int]] = []
        used: dict[int, str] = {}
        for i, (name, start) in enumerate(self.static_mig(minor)):
            profile = model.mig_profile(name)
            if profile is None:
                have = ", ".join(p.name for p in model.mig_profiles)
                raise ConfigError(f"{where}[{i}]: {model.product_name} has no MIG profile {name!r} (profiles: {have})")
            starts = {facts.nvml_placement(s, profile.memory_slices).start: s for s in profile.placements}
            if start not in starts:
                raise ConfigError(f"{where}[{i}]: {name} cannot start at memory slice {start} on {model.product_name} "
                                  f"(placements: {', '.join(map(str, starts))})")
            for k in facts.nvml_placement(starts[start], profile.memory_slices):
                if k in used:
                    raise ConfigError(f"{where}[{i}]: {name}@{start} overlaps {used[k]} on memory slice {k}")
                used[k] = f"{name}@{start}"
            out.append((profile, starts[start]))
        return out


def parse_settings(raw: Any) -> NvidiaSettings:
    """The `nvidia:` section (None: defaults); ConfigError names the key and says what is expected."""
    if raw is None:
        return NvidiaSettings()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"nvidia: expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - set(_KEYS))
    if unknown:
        raise ConfigError(f"nvidia: unknown key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})")
    gates, warnings = _gates(raw.get("featureGates"))
    shares = _consumable_shares(raw.get("consumableShares", SHARES_DISABLED), gates)
    iommu_fd = raw.get("iommuFD", False)
    if not isinstance(iommu_fd, bool):
        raise ConfigError(f"nvidia.iommuFD: expected true or false, got {iommu_fd!r}")
    return NvidiaSettings(
        gates=gates,
        consumable_shares=shares,
        mig_devices=_mig_devices(raw.get("migDevices")),
        mig_enabled=_mig_enabled(raw.get("migEnabled")),
        driver_version=_version(raw.get("driverVersion", DEFAULT_DRIVER_VERSION), "nvidia.driverVersion"),
        cuda_driver_version=_version(raw.get("cudaDriverVersion", DEFAULT_CUDA_DRIVER_VERSION), "nvidia.cudaDriverVersion"),
        iommu_fd=iommu_fd,
        addressing_mode=_addressing_mode(raw.get("addressingMode")),
        nvml=load_nvml_table(raw.get("models")),
        warnings=tuple(warnings),
    )


def _gates(raw: Any) -> tuple[dict[str, bool], list[str]]:
    gates = dict(GATE_DEFAULTS)
    if raw is None:
        return gates, []
    if not isinstance(raw, Mapping):
        raise ConfigError(f"nvidia.featureGates: expected a mapping of gate -> true|false, got {type(raw).__name__}")
    warnings = []
    for name, value in raw.items():
        if name not in GATE_DEFAULTS:
            raise ConfigError(f"nvidia.featureGates: unrecognized feature gate: {name} "
                              f"(known: {', '.join(sorted(GATE_DEFAULTS))})")
        if not isinstance(value, bool):
            raise ConfigError(f"nvidia.featureGates.{name}: expected true or false, got {value!r}")
        gates[name] = value
        if value and name in NOT_SIMULATED:
            warnings.append(f"nvidia.featureGates.{name}: {NOT_SIMULATED[name]}")
    _validate_gates(gates)
    return gates, warnings


def _validate_gates(on: Mapping[str, bool]) -> None:
    """NVIDIA's ValidateFeatureGates, rule for rule and message for message."""
    if on["ComputeDomainCliques"] and not on["IMEXDaemonsWithDNSNames"]:
        raise ConfigError("nvidia.featureGates: feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames "
                          "to also be enabled")
    for first, second in (("DynamicMIG", "PassthroughSupport"), ("DynamicMIG", "NVMLDeviceHealthCheck"),
                          ("DynamicMIG", "MPSSupport"), ("PassthroughSupport", "NVMLDeviceHealthCheck")):
        if on[first] and on[second]:
            raise ConfigError(f"nvidia.featureGates: feature gate {first} is currently mutually exclusive with {second}")
    if on["DeviceMetadata"] and not on["PassthroughSupport"]:
        raise ConfigError("nvidia.featureGates: feature gate DeviceMetadata requires PassthroughSupport to also be enabled")


def _consumable_shares(raw: Any, gates: Mapping[str, bool]) -> str:
    """--consumable-shares: checked like NVIDIA's validateCLIFlags."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise ConfigError(f"nvidia.consumableShares: invalid value {raw!r} (must be 'disabled', 'memory', 'unlimited', "
                          "or a positive integer)")
    value = str(raw).strip()
    if value != SHARES_DISABLED and not gates["ConsumableShares"]:
        raise ConfigError("nvidia.consumableShares: --consumable-shares requires feature gate ConsumableShares to be enabled")
    if value not in (SHARES_DISABLED, "memory", "unlimited") and not (value.isdigit() and int(value) > 0):
        raise ConfigError(f"nvidia.consumableShares: invalid value for --consumable-shares: {value!r} (must be "
                          "'disabled', 'memory', 'unlimited', or a positive integer)")
    return value


def _gpu_key(key: Any, where: str) -> int | str:
    if key == ALL:
        return ALL
    if isinstance(key, bool) or not (isinstance(key, int) or (isinstance(key, str) and key.isdigit())):
        raise ConfigError(f"{where}: key {key!r} is not a GPU minor number or \"all\"")
    return int(key)


def _mig_devices(raw: Any) -> dict[int | str, tuple[tuple[str, int], ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"nvidia.migDevices: expected a mapping of GPU minor -> list of \"<profile>@<start>\", "
                          f"got {type(raw).__name__}")
    out: dict[int | str, tuple[tuple[str, int], ...]] = {}
    for key, devices in raw.items():
        gpu = _gpu_key(key, "nvidia.migDevices")
        where = f"nvidia.migDevices[{gpu}]"
        if not isinstance(devices, list):
            raise ConfigError(f"{where}: expected a list of \"<profile>@<start>\" such as 1g.5gb@0, got {devices!r}")
        parsed = []
        for i, item in enumerate(devices):
            m = _MIG_DEVICE.fullmatch(item) if isinstance(item, str) else None
            if m is None:
                raise ConfigError(f"{where}[{i}]: expected \"<profile>@<start memory slice>\" such as 1g.5gb@0, "
                                  f"got {item!r}")
            parsed.append((m["profile"], int(m["start"])))
        out[gpu] = tuple(parsed)
    return out


def _mig_enabled(raw: Any) -> tuple[int | str, ...]:
    if raw is None:
        return ()
    if raw == ALL:
        return (ALL,)
    if not isinstance(raw, list):
        raise ConfigError(f"nvidia.migEnabled: expected a list of GPU minors or \"all\", got {raw!r}")
    return tuple(_gpu_key(k, "nvidia.migEnabled") for k in raw)


def _addressing_mode(raw: Any) -> str | None:
    """NVML's addressing mode is the host's (kernel HMM, ATS on Grace, the driver's modules), so a node
    may say it; the default leaves each board's (ATS on Grace GPUs, nothing elsewhere)."""
    if raw is None:
        return None
    allowed = (*ADDRESSING_MODES, NOT_SUPPORTED)
    if raw not in allowed:
        raise ConfigError(f"nvidia.addressingMode: expected one of {', '.join(allowed)}, got {raw!r}")
    return str(raw)


def _version(raw: Any, where: str) -> str:
    text = str(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else raw
    if not isinstance(text, str) or not _VERSION.fullmatch(text):
        raise ConfigError(f"{where}: expected a version such as 580.126.20 (quote it in YAML), got {raw!r}")
    return text


def semver(version: str) -> str:
    """Masterminds semver's canonical form of a short version: "13.0" -> "13.0.0", "8" -> "8.0.0"."""
    parts = [str(int(p)) for p in version.split(".")]
    return ".".join(parts + ["0"] * (3 - len(parts)))
