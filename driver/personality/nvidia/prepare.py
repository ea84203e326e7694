"""What NVIDIA's kubelet plugin checks and decides when it prepares a claim, without the hardware.

Follows cmd/gpu-kubelet-plugin/device_state.go: Prepare (validateNoOverlappingPreparedDevices),
prepareDevices (getConfigResultsMap with getDeviceConfigsWithDefaults and GetOpaqueDeviceConfigs,
the VFIO group limit, Normalize/Validate, applyConfig/applySharingConfig), in that order, and wraps
each error the way the plugin does, so a claim fails with the same text. What the hardware would do
(nvidia-smi time-slice settings, the MPS control daemon, binding vfio-pci, creating MIG devices) is
not simulated; what the container sees of it (MPS's pipe directory) is.

Which config applies to which device: class configs, then claim configs, each in order; the
plugin's defaults (GpuConfig, MigDeviceConfig, and VfioDeviceConfig with PassthroughSupport) come
first with the lowest precedence. Walking the list from the end, a config naming the result's
request must fit the device's type (else an error); a config without requests applies only to
devices of its type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from driver.errors import PrepareError
from driver.model.deviceattrs import attr
from driver.model.quantity import parse_quantity
from driver.personality.base import AppliedConfig, PreparedElsewhere
from driver.personality.gojson import DecodeError
from driver.personality.nvidia import opaque as api
from driver.personality.nvidia.settings import DRIVER, NvidiaSettings
from driver.slices.names import env_token

MPS_PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"
_FITS = {api.GPU_CONFIG: ("gpu",), api.MIG_CONFIG: ("mig", "migdyn"), api.VFIO_CONFIG: ("vfio",)}


class _Fail(Exception):
    """An error of prepareDevices, before the plugin's outer wrapping."""


def device_type(dev: Mapping[str, Any]) -> str:
    """AllocatableDevice.Type(): gpu, mig (static, has a uuid), migdyn (DynamicMIG, no uuid), vfio."""
    kind = str(attr(dev, "type") or "unknown")
    if kind == "mig" and attr(dev, "uuid") is None:
        return "migdyn"
    return kind


def claim_string(claim: Any) -> str:
    """ResourceClaimToString: namespace/name:uid."""
    return f"{claim.namespace}/{claim.name}:{claim.uid}"


def resolve(claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
            devices: Mapping[str, Mapping[str, Any]], elsewhere: Sequence[PreparedElsewhere],
            hidden: frozenset[str], settings: NvidiaSettings) -> list[AppliedConfig]:
    """Per result, the config NVIDIA's plugin would apply; PrepareError with its message otherwise."""
    outer = f"error preparing devices for claim {claim_string(claim)}"
    try:
        _check_overlap(claim, allocation_config, results, devices, elsewhere, hidden, settings)
    except _Fail as exc:
        raise PrepareError(f"{outer}: unable to prepare claim {claim.uid}: {exc}") from None
    try:
        return _prepare_devices(claim, allocation_config, results, devices, hidden, settings)
    except _Fail as exc:
        raise PrepareError(f"{outer}: prepare devices failed: {exc}") from None


# --- getConfigResultsMap ---------------------------------------------------------------------------

def _opaque_configs(allocation_config: Any, settings: NvidiaSettings) -> list[tuple[list[str], api.NvidiaConfig]]:
    """getDeviceConfigsWithDefaults: the defaults, then class configs, then claim configs."""
    entries = allocation_config or []
    if not isinstance(entries, list):
        raise _Fail("error getting opaque device configs: status.allocation.devices.config is not a list")
    by_source: dict[str, list[Mapping[str, Any]]] = {"FromClass": [], "FromClaim": []}
    for entry in entries:
        entry = entry if isinstance(entry, Mapping) else {}
        source = entry.get("source")
        if source not in by_source:
            raise _Fail(f"error getting opaque device configs: invalid config source: {'' if source is None else source}")
        by_source[str(source)].append(entry)
    out: list[tuple[list[str], api.NvidiaConfig]] = [([], api.default(api.GPU_CONFIG)), ([], api.default(api.MIG_CONFIG))]
    if settings.gate("PassthroughSupport"):
        out.append(([], api.default(api.VFIO_CONFIG)))
    for entry in by_source["FromClass"] + by_source["FromClaim"]:
        opaque = entry.get("opaque")
        if not isinstance(opaque, Mapping):
            raise _Fail("error getting opaque device configs: only opaque parameters are supported by this driver")
        if opaque.get("driver") != DRIVER:
            continue
        try:
            kind, fields = api.SCHEME.decode(opaque.get("parameters"))
        except DecodeError as exc:
            raise _Fail(f"error getting opaque device configs: error decoding config parameters: {exc}") from None
        requests = entry.get("requests") or []
        out.append(([str(r) for r in requests] if isinstance(requests, list) else [], api.NvidiaConfig(kind, fields)))
    return out


def _config_results(claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                    devices: Mapping[str, Mapping[str, Any]], hidden: frozenset[str],
                    settings: NvidiaSettings) -> list[tuple[int, api.NvidiaConfig]]:
    """getConfigResultsMap: per result, the index of its config in the list and the config."""
    configs = _opaque_configs(allocation_config, settings)
    chosen: list[tuple[int, api.NvidiaConfig]] = []
    for result in results:
        name = str(result["device"])
        if name not in devices or name in hidden:
            raise _Fail(f'allocatable not found for device "{name}"')
        kind = device_type(devices[name])
        picked = None
        for index in range(len(configs) - 1, -1, -1):
            requests, config = configs[index]
            if str(result.get("request")) in requests:
                if config.kind in _FITS and kind not in _FITS[config.kind]:
                    raise _Fail(f'cannot apply {config.kind} to device "{name}" of type "{kind}" '
                                f"(request: {result.get('request')})")
                picked = (index, config)
                break
            if not requests and kind in _FITS.get(config.kind, ()):
                picked = (index, config)
                break
        if picked is None:  # pragma: no cover - the defaults cover every device type
            raise _Fail(f'no configuration applies to device "{name}"')
        chosen.append(picked)
    return chosen


# --- Prepare ---------------------------------------------------------------------------------------

def _normalized(config: api.NvidiaConfig, settings: NvidiaSettings) -> api.NvidiaConfig:
    if config.kind not in api.DEVICE_CONFIG_KINDS:
        raise _Fail("runtime object is not a recognized configuration")
    config = api.normalize(config, settings.gates)
    try:
        api.validate(config, settings.gates)
    except api.ConfigInvalid as exc:
        raise _Fail(f"error validating GPU config: {exc}") from None
    return config


def _check_overlap(claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                   devices: Mapping[str, Mapping[str, Any]], elsewhere: Sequence[PreparedElsewhere],
                   hidden: frozenset[str], settings: NvidiaSettings) -> None:
    """validateNoOverlappingPreparedDevices: a device (non-admin) prepared for another claim is
    refused, unless consumable shares are on, it is not a VFIO device and both claims configure it
    identically."""
    mine = {str(r["device"]) for r in results if r.get("adminAccess") is not True}
    for other in elsewhere:
        if other.admin_access or other.device not in mine:
            continue
        dev = devices.get(other.device)
        if settings.shares_enabled and dev is not None and device_type(dev) != "vfio":
            try:
                incoming = _normalized(_config_results(claim, allocation_config, [r for r in results
                                                       if r["device"] == other.device][:1], devices, hidden,
                                                       settings)[0][1], settings).canonical()
            except _Fail as exc:
                raise _Fail(f"error resolving config for incoming claim {claim.uid} on device {other.device}: {exc}") from None
            if incoming != other.config:
                raise _Fail(f"requested device {other.device} has conflicting configuration with already prepared "
                            f"claim {other.claim}")
            continue
        raise _Fail(f"requested device {other.device} is already allocated to different claim {other.claim}")


def _prepare_devices(claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                     devices: Mapping[str, Mapping[str, Any]], hidden: frozenset[str],
                     settings: NvidiaSettings) -> list[AppliedConfig]:
    chosen = _config_results(claim, allocation_config, results, devices, hidden, settings)
    groups: dict[int, list[int]] = {}  # config index -> result positions (one device group per config)
    for position, (index, _) in enumerate(chosen):
        groups.setdefault(index, []).append(position)
    configs = {index: config for index, config in chosen}
    if settings.gate("PassthroughSupport"):
        vfio_groups = sum(1 for index in groups if configs[index].kind == api.VFIO_CONFIG)
        if vfio_groups > 1:
            raise _Fail(f"claim {claim_string(claim)} contains {vfio_groups} VFIO device groups, but at most one is "
                        "supported per claim")
    normalized = {index: _normalized(configs[index], settings) for index in groups}
    env: dict[int, tuple[str, ...]] = {}
    for index, positions in groups.items():
        env[index] = _apply(claim, normalized[index], [results[p] for p in positions],
                            [devices[str(results[p]["device"])] for p in positions], settings)
    out = []
    for index, _ in chosen:
        config = normalized[index]
        out.append(AppliedConfig(kind=config.kind, params=config.fields, canonical=config.canonical(),
                                 env=dict(line.split("=", 1) for line in env[index])))
    return out


def _apply(claim: Any, config: api.NvidiaConfig, results: Sequence[Mapping[str, Any]],
           devs: Sequence[Mapping[str, Any]], settings: NvidiaSettings) -> tuple[str, ...]:
    """applyConfig: what a sharing config does besides the hardware (errors, the MPS env)."""
    sharing = config.sharing
    if config.kind == api.VFIO_CONFIG or sharing is None:
        return ()
    requests = "[" + " ".join(str(r.get("request")) for r in results) + "]"
    strategy = sharing.get("strategy", "")
    if settings.gate("TimeSlicingSettings") and strategy == api.TIME_SLICING and config.kind == api.GPU_CONFIG:
        if sharing.get("mpsConfig") is not None:
            raise _Fail(f"error applying config: error getting timeslice config for requests '{requests}' in claim "
                        f"'{claim.uid}': cannot use MpsConfig with the '{api.TIME_SLICING}' strategy")
    if settings.gate("MPSSupport") and strategy == api.MPS:
        if settings.shares_enabled:
            raise _Fail("error applying config: MPS sharing is not supported when consumable shares is enabled")
        if settings.gate("DynamicMIG"):  # pragma: no cover - the gates' exclusivity rule forbids it first
            raise _Fail("error applying config: MPS is not yet supported when using featureGates.DynamicMIG=true")
        if config.kind == api.GPU_CONFIG and sharing.get("timeSlicingConfig") is not None:
            raise _Fail(f"error applying config: error getting MPS configuration: cannot use TimeSlicingConfig with "
                        f"the '{api.MPS}' strategy")
        _pinned_limits(sharing.get("mpsConfig") or {}, sorted(str(attr(d, "uuid")) for d in devs))
        return (MPS_PIPE_ENV,)
    return ()


def _pinned_limits(mps: Mapping[str, Any], uuids: list[str]) -> dict[str, str]:
    """MpsPerDevicePinnedMemoryLimit.Normalize: the per-device limits the MPS daemon would get."""
    where = "error applying config: error starting MPS control daemon: error transforming " \
            "DefaultPerDevicePinnedMemoryLimit into string"
    limits: dict[str, str] = {}
    default = mps.get("defaultPinnedDeviceMemoryLimit")
    if default is not None and uuids:
        megabytes = int(parse_quantity(default)) // 2**20
        if megabytes <= 0:
            raise _Fail(f"{where}: invalid limit: default value set too low: {default}")
        limits = {u: f"{megabytes}M" for u in uuids}
    for key, value in (mps.get("defaultPerDevicePinnedMemoryLimit") or {}).items():
        if key in uuids:
            target = key
        else:
            try:
                index = int(key)
            except ValueError:
                raise _Fail(f"{where}: invalid device: unable to parse key as an integer: {key}") from None
            if not 0 <= index < len(uuids):
                raise _Fail(f"{where}: invalid device: invalid device index: {index}")
            target = uuids[index]
        megabytes = int(parse_quantity(value)) // 2**20
        if megabytes <= 0:
            raise _Fail(f"{where}: invalid limit: value set too low: {key}: {value}")
        limits[target] = f"{megabytes}M"
    return limits


def hint_env(claim: Any, result: Mapping[str, Any], device: Mapping[str, Any], config: AppliedConfig | None) -> dict[str, str]:
    """fake-dra's own hints beside what NVIDIA's spec sets (no device node exists to inspect):
    FAKE_DRA_<DEVICE>_<FIELD> from the published attributes and the config that applied."""
    prefix = f"FAKE_DRA_{env_token(str(result['device']))}_"
    env = {prefix + "CLAIM": f"{claim.namespace}/{claim.name}", prefix + "REQUEST": str(result.get("request", ""))}
    for key, name in (("TYPE", "type"), ("PROFILE", "profile"), ("UUID", "uuid"), ("PARENT_UUID", "parentUUID"),
                      ("PCI_BUS_ID", "resource.kubernetes.io/pciBusID"), ("PRODUCT_NAME", "productName")):
        value = attr(device, name)
        if value is not None:
            env[prefix + key] = str(value)
    if config is not None:
        env[prefix + "CONFIG_KIND"] = config.kind
        env[prefix + "CONFIG"] = json.dumps(dict(config.params), sort_keys=True, separators=(",", ":"))
    return env
