"""dra-example-driver's opaque config, `GpuConfig` (gpu.resource.example.com/v1alpha1), and the env it gives.

Sources (kubernetes-sigs/dra-example-driver): api/example.com/resource/gpu/v1alpha1/{api,sharing,
validate,register}.go for the type, its defaults (Normalize) and checks (Validate);
cmd/dra-example-kubeletplugin/state.go (GetOpaqueDeviceConfigs, computeDeviceConfig) for which
config applies to which result; internal/profiles/gpu/gpu.go applyGpuConfig for the env. Messages
are the driver's, wrapped as its prepare path wraps them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver.errors import PrepareError
from driver.model.quantity import format_quantity, parse_quantity
from driver.personality.gojson import INT, DecodeError, Scalar, Scheme, Struct

GROUP_VERSION = "gpu.resource.example.com/v1alpha1"
KIND = "GpuConfig"
TIME_SLICING, SPACE_PARTITIONING = "TimeSlicing", "SpacePartitioning"
INTERVALS = ("Default", "Short", "Medium", "Long")
SCHEME = Scheme(
    group_version=GROUP_VERSION,
    kinds={KIND: Struct(KIND, {"sharing": Struct("GpuSharing", {
        "strategy": Scalar("string", "v1alpha1.GpuSharingStrategy"),
        "timeSlicingConfig": Struct("TimeSlicingConfig", {"interval": Scalar("string", "v1alpha1.TimeSliceInterval")}),
        "spacePartitioningConfig": Struct("SpacePartitioningConfig", {"partitionCount": INT}),
    })})},
    # runtime.NewScheme() names a scheme after its call site: the plugin's NewDeviceState.
    name="sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin/state.go:107",
)
DEFAULT = {"sharing": {"strategy": TIME_SLICING, "timeSlicingConfig": {"interval": "Default"}}}


def _configs(allocation_config: Any, driver: str) -> list[tuple[list[str], dict[str, Any]]]:
    """GetOpaqueDeviceConfigs: this driver's configs, class ones before claim ones (lowest precedence first)."""
    by_source: dict[str, list[Mapping[str, Any]]] = {"FromClass": [], "FromClaim": []}
    for entry in allocation_config if isinstance(allocation_config, list) else []:
        entry = entry if isinstance(entry, Mapping) else {}
        source = entry.get("source")
        if source not in by_source:
            raise PrepareError(f"error getting opaque device configs: invalid config source: {source or ''}")
        by_source[str(source)].append(entry)
    out = []
    for entry in by_source["FromClass"] + by_source["FromClaim"]:
        opaque = entry.get("opaque")
        if not isinstance(opaque, Mapping):
            raise PrepareError("error getting opaque device configs: only opaque parameters are supported by this driver")
        if opaque.get("driver") != driver:
            continue
        try:
            _, fields = SCHEME.decode(opaque.get("parameters"))
        except DecodeError as exc:
            raise PrepareError(f"error getting opaque device configs: error decoding config parameters: {exc}") from None
        out.append(([str(r) for r in entry.get("requests") or []], fields))
    return out


def normalize(config: Mapping[str, Any]) -> dict[str, Any]:
    """GpuConfig.Normalize: TimeSlicing when no sharing is set, interval Default, partitionCount 1."""
    sharing = dict(config.get("sharing") or {"strategy": TIME_SLICING})
    if sharing.get("strategy") == TIME_SLICING and sharing.get("timeSlicingConfig") is None:
        sharing["timeSlicingConfig"] = {"interval": "Default"}
    if sharing.get("strategy") == SPACE_PARTITIONING and sharing.get("spacePartitioningConfig") is None:
        sharing["spacePartitioningConfig"] = {"partitionCount": 1}
    return {"sharing": sharing}


def validate(config: Mapping[str, Any]) -> None:
    """GpuConfig.Validate, with its messages (PrepareError)."""
    sharing = config.get("sharing") or {}
    strategy = sharing.get("strategy", "")
    if strategy not in (TIME_SLICING, SPACE_PARTITIONING):
        raise PrepareError(f"unknown GPU sharing strategy: {strategy}")
    if strategy == TIME_SLICING:
        interval = (sharing.get("timeSlicingConfig") or {}).get("interval", "")
        if interval not in INTERVALS:
            raise PrepareError(f"unknown time-slice interval: {interval}")
    elif (sharing.get("spacePartitioningConfig") or {}).get("partitionCount", 0) < 0:
        raise PrepareError(f"invalid partition count: {sharing['spacePartitioningConfig']['partitionCount']}")


def resolve(allocation_config: Any, results: Sequence[Mapping[str, Any]], driver: str) -> list[dict[str, Any]]:
    """Per result, the normalized, validated config that applies (computeDeviceConfig: the last
    config naming its request, or naming none, else the default)."""
    configs = [([], DEFAULT), *_configs(allocation_config, driver)]
    out = []
    for result in results:
        chosen = next(c for requests, c in reversed(configs) if not requests or str(result.get("request")) in requests)
        config = normalize(chosen)
        try:
            validate(config)
        except PrepareError as exc:
            raise PrepareError(f"error applying config: error validating GPU config: {exc}") from None
        _check_strategy_config(config, str(result.get("device")))
        out.append(config)
    return out


def _check_strategy_config(config: Mapping[str, Any], device: str) -> None:
    """GetTimeSlicingConfig / GetSpacePartitioningConfig refuse the other strategy's settings."""
    sharing = config["sharing"]
    if sharing["strategy"] == TIME_SLICING and sharing.get("spacePartitioningConfig") is not None:
        raise PrepareError(f"error applying config: unable to get time slicing config for device {device}: cannot use "
                           f"SpacePartitioningConfig with the '{TIME_SLICING}' strategy")
    if sharing["strategy"] == SPACE_PARTITIONING and sharing.get("timeSlicingConfig") is not None:
        raise PrepareError(f"error applying config: unable to get space partitioning config for device {device}: "
                           f"cannot use TimeSlicingConfig with the '{SPACE_PARTITIONING}' strategy")


def sharing_env(device: str, config: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, str]:
    """applyGpuConfig's env for one result (the ID: the device name without `gpu-`, upper case)."""
    env_id = device[4:].replace("-", "_").upper()
    env = {f"GPU_DEVICE_{env_id}": device}
    sharing = config.get("sharing")
    if sharing:
        env[f"GPU_DEVICE_{env_id}_SHARING_STRATEGY"] = str(sharing.get("strategy"))
        if sharing.get("strategy") == TIME_SLICING:
            env[f"GPU_DEVICE_{env_id}_TIMESLICE_INTERVAL"] = str((sharing.get("timeSlicingConfig") or {}).get("interval"))
        elif sharing.get("strategy") == SPACE_PARTITIONING:
            env[f"GPU_DEVICE_{env_id}_PARTITION_COUNT"] = str(
                (sharing.get("spacePartitioningConfig") or {}).get("partitionCount"))
    consumed = result.get("consumedCapacity") or {}
    for name, key in (("memory", "MEMORY"), ("compute", "COMPUTE")):
        if name in consumed:
            text = str(consumed[name])
            env[f"GPU_DEVICE_{env_id}_{key}"] = format_quantity(parse_quantity(text), like=text)
    return env
