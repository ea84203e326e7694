"""The node's `gpu.nvidia.com` pool, laid out as NVIDIA's kubelet plugin publishes it.

Which devices (cmd/gpu-kubelet-plugin/nvlib.go GetPerGpuAllocatableDevices, per GPU in PCI order):
- GPU bound to vfio-pci on the host: invisible to NVML, so no `gpu-N`; only its VFIO device.
- DynamicMIG, MIG-capable GPU (Hopper and newer, or Ampere with MIG mode on): every placement of
  every MIG profile, plus the full GPU unless it is Ampere with MIG mode on (no reset-less toggle).
- otherwise, MIG mode off: the full GPU; MIG mode on: only the MIG devices that exist (static MIG,
  `nvidia.migDevices`), nothing when none do.
- PassthroughSupport: `gpu-vfio-<i>` beside each GPU that has no MIG devices.
ConsumableShares turns every GPU and MIG device into a shared one (not VFIO devices).

Layout (driver.go publishResources): DynamicMIG off, one slice with every device (NVIDIA's order is Go
map order, random between publishes; here PCI order, then name). DynamicMIG on and a MIG-capable GPU
present: the counter slice first (one `gpu-<minor>-counter-set` per GPU that has MIG profile data),
then one slice per GPU in PCI order with its devices sorted by name (generateSplitResourceSlices,
Kubernetes >= 1.35). DynamicMIG on without a MIG-capable GPU: one slice per GPU and no counters
(generateCombinedResourceSlices with nothing to share).
"""

from __future__ import annotations

from typing import Any

from driver.errors import ConfigError
from driver.model.inventory import Gpu, Inventory
from driver.personality.nvidia import devices as nv
from driver.personality.nvidia.settings import DRIVER, NvidiaSettings
from driver.slices.names import NODE_IDENTITIES, Identities
from driver.slices.pool import Pool

VFIO_DRIVER = "vfio-pci"
HOPPER_AND_NEWER = ("Hopper", "Blackwell", "Rubin")  # supportsMIGModeToggle: arch >= Hopper


def _nvml_visible(gpu: Gpu) -> bool:
    return gpu.pci.driver != VFIO_DRIVER


def _toggles_mig(gpu: Gpu) -> bool:
    return gpu.model.architecture in HOPPER_AND_NEWER


def per_gpu_devices(inventory: Inventory, settings: NvidiaSettings, node_name: str,
                    hidden: frozenset[str] = frozenset(),
                    identities: Identities = NODE_IDENTITIES) -> tuple[list[tuple[nv.GpuInfo, list[dict[str, Any]], dict | None]], bool]:
    """Per GPU with something to publish (PCI order): its info, its devices (sorted by name) and its
    counter set; and whether DynamicMIG's partitionable layout is in effect (the gate on and some
    GPU MIG-capable: state.IsMigCapable)."""
    gpus = sorted(inventory.gpus, key=lambda g: g.pci.address)
    _check_minors(settings, {g.index for g in gpus})
    dynamic = settings.gate("DynamicMIG") and any(g.model.mig_capable and _nvml_visible(g) for g in gpus)
    out = []
    for gpu in gpus:
        info = nv.GpuInfo(gpu, settings.nvml.facts(gpu.model), settings, node_name, identities)
        devs: list[dict[str, Any]] = []
        counters = None
        static: list = []
        if _nvml_visible(gpu):
            mig_on = settings.mig_mode(info.minor, gpu.model.mig_capable)
            if dynamic and gpu.model.mig_capable and (_toggles_mig(gpu) or mig_on):  # isDynamicMIGCapable
                if not mig_on or _toggles_mig(gpu):
                    devs.append(nv.full_gpu(info, partitionable=True))
                for profile in info.mig_profiles():
                    devs.extend(nv.dynamic_mig(info, profile, start) for start in profile.placements)
                counters = nv.counter_set(info)
            else:
                static = settings.check_mig(info.minor, gpu.model)
                if not mig_on:
                    devs.append(nv.full_gpu(info, partitionable=False))
                devs.extend(nv.static_mig(info, profile, start) for profile, start in static)
        if settings.gate("PassthroughSupport") and not static:  # vfioEnabled: no MIG devices
            devs.append(nv.vfio(gpu, info.facts, settings))
        if not devs and not _nvml_visible(gpu):
            continue  # neither NVML nor (without PassthroughSupport) nvpci offers it
        devs = [d if d["name"].startswith("gpu-vfio-") else nv.apply_consumable_shares(d, settings)
                for d in devs if d["name"] not in hidden]
        out.append((info, sorted(devs, key=lambda d: d["name"].encode()), counters))
    return out, dynamic


def _check_minors(settings: NvidiaSettings, minors: set[int]) -> None:
    """A GPU minor the node does not have, in `migDevices` or `migEnabled`, is a mistake (a layout
    meant for a bigger node), not something to skip silently."""
    for where, keys in (("nvidia.migDevices", settings.mig_devices), ("nvidia.migEnabled", settings.mig_enabled)):
        for key in keys:
            if isinstance(key, int) and key not in minors:
                have = f"minors 0-{max(minors)}" if minors else "no GPUs"
                raise ConfigError(f"{where}[{key}]: the node has no GPU with minor {key} ({have})")


def render_gpus(inventory: Inventory, settings: NvidiaSettings, *, node_name: str,
                hidden: frozenset[str] = frozenset(), identities: Identities = NODE_IDENTITIES) -> Pool:
    per_gpu, dynamic = per_gpu_devices(inventory, settings, node_name, hidden, identities)
    base = {"driver": DRIVER, "pool": {"name": node_name}, "nodeName": node_name}
    slices: list[dict[str, Any]] = []
    if not settings.gate("DynamicMIG"):
        slices.append({**base, "pool": dict(base["pool"]), "devices": [d for _, devs, _ in per_gpu for d in devs]})
    else:
        if dynamic:
            sets = [c for _, _, c in per_gpu if c is not None]
            counter_slice = {**base, "pool": dict(base["pool"])}
            if sets:
                counter_slice["sharedCounters"] = sets
            slices.append(counter_slice)
        for _, devs, _ in per_gpu:
            spec = {**base, "pool": dict(base["pool"])}
            if devs:
                spec["devices"] = devs
            slices.append(spec)
    if not slices:  # DynamicMIG on a node without GPUs: the helper still publishes an empty pool
        slices.append({**base, "pool": dict(base["pool"])})
    for spec in slices:
        if spec.get("devices") == []:
            del spec["devices"]
    warnings = list(settings.warnings)
    for info, devs, _ in per_gpu:
        if settings.mig_mode(info.minor, info.gpu.model.mig_capable) and not devs and info.gpu.model.mig_capable:
            warnings.append(f"{info.name}: MIG mode is on but no MIG devices exist (nvidia.migDevices); "
                            "NVIDIA's plugin publishes nothing for this GPU")
    _check_limits(slices)
    return Pool(name=node_name, slices=tuple(slices), warnings=tuple(warnings))


def _check_limits(slices: list[dict[str, Any]]) -> None:
    """NVIDIA does not split a slice; one the apiserver would reject is a configuration error here."""
    for spec in slices:
        devs = spec.get("devices") or ()
        limit = 64 if any(d.get("consumesCounters") for d in devs) else 128
        if len(devs) > limit:
            raise ConfigError(f"the gpu.nvidia.com slice would hold {len(devs)} devices, over the API's limit of {limit} "
                              "(NVIDIA's plugin publishes it as one slice, which the apiserver rejects)")
        if len(spec.get("sharedCounters") or ()) > 8:
            raise ConfigError(f"the gpu.nvidia.com counter slice would hold {len(spec['sharedCounters'])} counter sets, "
                              "over the API's limit of 8 (NVIDIA's plugin publishes them in one slice)")

