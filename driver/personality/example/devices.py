"""What dra-example-driver's `gpu` profile publishes (internal/profiles/gpu/gpu.go EnumerateDevices),
from the knobs its chart passes (`example:` section of the driver config; driver.personality.example).

    example:
      numDevices: 8                      # kubeletPlugin.numDevices (NUM_DEVICES)
      gpuPartitions: 0                   # kubeletPlugin.gpuPartitions
      gpuAllowMultipleAllocations: false # gpuAllowMultipleAllocations
      extendedResourceName: ""           # deviceClass.extendedResourceName
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.errors import ConfigError
from driver.model.quantity import format_quantity
from driver.slices.names import Identities
from driver.slices.pool import Pool

MEMORY = Fraction(80 * 2**30)  # resource.MustParse("80Gi")
COMPUTE = Fraction(100)
MODEL, DRIVER_VERSION = "LATEST-GPU-MODEL", "1.0.0"
MAX_DEVICES, MAX_COUNTER_DEVICES = 128, 64  # a slice's limits (resource.k8s.io/v1 ResourceSliceMaxDevices...)
_KEYS = ("numDevices", "gpuPartitions", "gpuAllowMultipleAllocations", "extendedResourceName")


@dataclass(frozen=True)
class ExampleSettings:
    num_devices: int = 8
    gpu_partitions: int = 0
    allow_multiple_allocations: bool = False
    extended_resource_name: str = ""


def _int(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"example.{key}: expected a whole number, 0 or more, got {value!r}")
    return value


def parse_settings(raw: Any) -> ExampleSettings:
    """The `example:` section; ConfigError naming the key for a bad value."""
    if raw is None:
        return ExampleSettings()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"example: expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - set(_KEYS))
    if unknown:
        raise ConfigError(f"example: unknown key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})")
    devices, partitions = _int(raw, "numDevices", 8), _int(raw, "gpuPartitions", 0)
    allow = raw.get("gpuAllowMultipleAllocations", False)
    if not isinstance(allow, bool):
        raise ConfigError(f"example.gpuAllowMultipleAllocations: expected true or false, got {allow!r}")
    name = raw.get("extendedResourceName", "")
    if not isinstance(name, str):
        raise ConfigError(f"example.extendedResourceName: expected a string, got {name!r}")
    total = devices * (partitions + 1) if partitions else devices
    limit = MAX_COUNTER_DEVICES if partitions else MAX_DEVICES
    if total > limit:
        # The driver puts every device in one slice; kube-apiserver refuses more than a slice holds.
        raise ConfigError(f"example: numDevices {devices}" + (f" x (gpuPartitions {partitions} + 1)" if partitions else "")
                          + f" = {total} devices in the driver's one slice; a slice holds at most {limit}"
                          + (" when its devices consume counters" if partitions else ""))
    return ExampleSettings(devices, partitions, allow, name)


def _capacity(value: Fraction, like: str, minimum: str, settings: ExampleSettings) -> dict[str, Any]:
    """memoryCapacity / computeCapacity: the value, and with multiple allocations a request policy."""
    out: dict[str, Any] = {"value": format_quantity(value, like=like)}
    if settings.allow_multiple_allocations:
        whole = format_quantity(value, like=like)
        out["requestPolicy"] = {"default": whole, "validRange": {"min": minimum, "step": minimum, "max": whole}}
    return out


def _device(name: str, attributes: dict[str, Any], memory: Fraction, compute: Fraction,
            settings: ExampleSettings, counters: str | None = None) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name, "attributes": attributes,
                              "allowMultipleAllocations": settings.allow_multiple_allocations,
                              "capacity": {"compute": _capacity(compute, "1", "1", settings),
                                           "memory": _capacity(memory, "1Gi", "1Gi", settings)}}
    if counters is not None:
        device["consumesCounters"] = [{"counterSet": counters, "counters": {
            "compute": {"value": format_quantity(compute, like="1")},
            "memory": {"value": format_quantity(memory, like="1Gi")}}}]
    return device


def render(settings: ExampleSettings, driver: str, node_name: str, identities: Identities) -> Pool:
    """The node's pool: one slice of devices (after one slice of counter sets with partitions)."""
    devices: list[dict[str, Any]] = []
    counter_sets: list[dict[str, Any]] = []
    parts = settings.gpu_partitions
    for i in range(settings.num_devices):
        uuid = "gpu-" + identities.uuid(node_name, "dra-example-driver", f"gpu-{i}")
        attrs: dict[str, Any] = {"driverVersion": {"version": DRIVER_VERSION}, "index": {"int": i},
                                 "model": {"string": MODEL}, "uuid": {"string": uuid}}
        if not parts:
            devices.append(_device(f"gpu-{i}", attrs, MEMORY, COMPUTE, settings))
            continue
        name = f"gpu-{i}-counters"
        counter_sets.append({"name": name, "counters": {"compute": {"value": format_quantity(COMPUTE, like="1")},
                                                        "memory": {"value": format_quantity(MEMORY, like="1Gi")}}})
        # NewQuantity(value/n): whole bytes and whole compute units, rounded down as Go's integer division.
        memory, compute = Fraction(int(MEMORY) // parts), Fraction(int(COMPUTE) // parts)
        for j in range(parts):
            part = {**attrs, "partition": {"int": j}, "partitionable": {"bool": True}}
            devices.append(_device(f"gpu-{i}-partition-{j}", dict(sorted(part.items())), memory, compute, settings, name))
        full = {**attrs, "full": {"bool": True}, "partitionable": {"bool": True}}
        devices.append(_device(f"gpu-{i}-full", dict(sorted(full.items())), MEMORY, COMPUTE, settings, name))
    base: dict[str, Any] = {"driver": driver, "pool": {"name": node_name}, "nodeName": node_name}
    slices: list[dict[str, Any]] = []
    if counter_sets:
        slices.append({**base, "sharedCounters": counter_sets})
    slices.append({**base, "devices": devices} if devices else dict(base))
    return Pool(name=node_name, slices=tuple(slices))
