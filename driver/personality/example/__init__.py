"""The `example` personality: kubernetes-sigs/dra-example-driver's `gpu` profile, as its Helm chart installs it.

kubernetes.io's DRA tutorial ("Install a DRA driver", tasks/configure-pod-container/assign-resources/)
and dra-example-driver's demo specs (demo/examples/) are written for this driver; with this
personality they allocate and prepare as there. Facts, from kubernetes-sigs/dra-example-driver
(commit 31914cea, July 2026):

- driver and DeviceClass `gpu.example.com` (deployments/helm/dra-example-driver: values.yaml
  `deviceProfile: gpu`, `driverName` derived as `<profile>.example.com` in _helpers.tpl; the
  class selects `device.driver == 'gpu.example.com'`, templates/deviceclass.yaml, with
  `extendedResourceName` when `deviceClass.extendedResourceName` is set);
- one pool named after the node with every device in one slice (internal/profiles/gpu/gpu.go
  EnumerateDevices); `numDevices` devices (chart default 8, `kubeletPlugin.numDevices`) named
  `gpu-<i>`, attributes `index` (int), `uuid` (string `gpu-<UUID>`), `model` (`LATEST-GPU-MODEL`),
  `driverVersion` (version 1.0.0), capacity `memory` 80Gi and `compute` 100, and
  `allowMultipleAllocations` written out (false unless `gpuAllowMultipleAllocations`, which also
  gives the capacities request policies: default the whole value, range 1Gi (memory) / 1 (compute)
  up to it in steps of the minimum);
- with `gpuPartitions: N` (chart `kubeletPlugin.gpuPartitions`) each GPU is a counter set
  `gpu-<i>-counters` (memory, compute) in a slice of its own, published before the devices, with
  N devices `gpu-<i>-partition-<j>` (attributes `partition` and `partitionable`, 1/N of each) and
  one `gpu-<i>-full` (`partitionable`, `full`) consuming all of it;
- opaque config `GpuConfig` (gpu.resource.example.com/v1alpha1, api/example.com/resource/gpu),
  decoded strictly; `sharing` defaulted (Normalize: TimeSlicing with interval Default, a
  SpacePartitioning without config has partitionCount 1) and validated (Validate) with the driver's
  messages; per result the config of the highest precedence applies (the claim's over the class's,
  later over earlier, one naming the result's request or none: state.go computeDeviceConfig);
- CDI (cmd/dra-example-kubeletplugin/cdi.go): kind `k8s.gpu.example.com/gpu`, device
  `<claim UID>-<device>`, spec file `k8s.gpu.example.com-gpu_<claim UID>`; the container env
  `GPU_DEVICE_<ID>=<device>` with `_SHARING_STRATEGY`, `_TIMESLICE_INTERVAL` or `_PARTITION_COUNT`,
  `_MEMORY`/`_COMPUTE` for consumed capacity (gpu.go applyGpuConfig; ID the device name without
  `gpu-`, upper case, `-` as `_`), `GPU_DEVICE_<NAME>_RESOURCE_CLAIM=<claim UID>`,
  `DRA_ADMIN_ACCESS`, and the common edits `KUBERNETES_NODE_NAME`, `DRA_RESOURCE_DRIVER_NAME`.

Not reproduced: the UUIDs' values (the driver seeds Go's math/rand with a hash of the node name;
these are fake-dra's stable UUIDs of the same form), binding conditions, `gpuDeviceStatus`, and the
`cpu` and `net` profiles. The node's hardware does not matter: the driver invents its GPUs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from driver.errors import ConfigError, PrepareError
from driver.features import Features
from driver.model.inventory import Inventory
from driver.personality.base import AppliedConfig, CdiNaming, DriverProfile, Personality, PreparedElsewhere
from driver.personality.example.config import resolve, sharing_env
from driver.personality.example.devices import ExampleSettings, parse_settings, render
from driver.slices.names import NODE_IDENTITIES, Identities
from driver.slices.pool import Pool

NAME = "example"
DRIVER = "gpu.example.com"  # _helpers.tpl: print .Values.deviceProfile ".example.com"
CDI_CLASS = "gpu"  # the device profile names the CDI class (state.go NewCDIHandler)


def device_classes(settings: ExampleSettings = ExampleSettings()) -> list[dict[str, Any]]:
    """templates/deviceclass.yaml, as the chart renders it for resource.k8s.io/v1."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}
    if settings.extended_resource_name:
        spec["extendedResourceName"] = settings.extended_resource_name
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER}, "spec": spec}]


def _env_key(device: str) -> str:
    """cdi.go: the device name upper case, runs of non-alphanumerics as `_`."""
    out, gap = [], False
    for ch in device:
        if ch.isascii() and ch.isalnum():
            out.append(ch.upper())
            gap = False
        elif not gap:
            out.append("_")
            gap = True
    return "".join(out)


class ExampleGpuDriver(DriverProfile):
    name = DRIVER
    cdi = CdiNaming(vendor=f"k8s.{DRIVER}", cls=CDI_CLASS, file_prefix=f"k8s.{DRIVER}-{CDI_CLASS}_",
                    common_env=(f"DRA_RESOURCE_DRIVER_NAME={DRIVER}",))

    def __init__(self, settings: ExampleSettings = ExampleSettings()) -> None:
        self.settings = settings

    def render(self, inventory: Inventory, features: Features, *, node_name: str,
               hidden: frozenset[str] = frozenset(), identities: Identities = NODE_IDENTITIES) -> Pool:
        # The driver publishes what its flags say whatever the cluster's gates or the node's hardware.
        return render(self.settings, DRIVER, node_name, identities)

    def device_classes(self) -> list[dict[str, Any]]:
        return device_classes(self.settings)

    def class_name(self, short: str) -> str | None:
        return DRIVER if short == "gpu" else None

    def resolve_configs(self, claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                        devices: Mapping[str, Mapping[str, Any]],
                        elsewhere: Sequence[PreparedElsewhere] = ()) -> list[AppliedConfig | None]:
        try:
            configs = resolve(allocation_config, results, DRIVER)
        except PrepareError as exc:
            raise PrepareError(f"error preparing devices for claim {claim.uid}: prepare failed: {exc}") from None
        return [AppliedConfig(kind="GpuConfig", params=c, canonical=json.dumps(c, sort_keys=True)) for c in configs]

    def device_env(self, claim: Any, result: Mapping[str, Any], device: Mapping[str, Any],
                   config: AppliedConfig | None, unrequested: Mapping[str, str] | None) -> dict[str, str]:
        name = str(result["device"])
        env = sharing_env(name, config.params if config is not None else {}, result)
        env[f"{CDI_CLASS.upper()}_DEVICE_{_env_key(name)}_RESOURCE_CLAIM"] = str(claim.uid)
        env["DRA_ADMIN_ACCESS"] = "true" if result.get("adminAccess") is True else "false"
        env["KUBERNETES_NODE_NAME"] = str(result.get("pool") or "")  # the pool is named after the node
        return env


def _build(config: Mapping[str, Any], driver_name: str | None) -> tuple[DriverProfile, ...]:
    return (ExampleGpuDriver(parse_settings(config.get("example"))),)


def _partitioned_by(config: Mapping[str, Any]) -> tuple[str, str] | None:
    try:
        partitions = parse_settings(config.get("example")).gpu_partitions
    except ConfigError:
        return None
    return ("example.gpuPartitions", f"{partitions} partitions per GPU") if partitions else None


PERSONALITY = Personality(
    name=NAME,
    summary=f"dra-example-driver's gpu profile ({DRIVER}): gpu-0.. with index, uuid, model, driverVersion, "
            "80Gi memory; GpuConfig sharing; knobs in `example:`",
    sections=("example",),
    build=_build,
    fixed_driver_names=(DRIVER,),
    partitioned_by=_partitioned_by,
)
