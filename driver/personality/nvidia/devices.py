"""NVIDIA's devices, one at a time: full GPU, MIG device (static or DynamicMIG), VFIO passthrough.

Each builder returns the device exactly as kubernetes-sigs/dra-driver-nvidia-gpu's kubelet plugin
publishes it (cmd/gpu-kubelet-plugin/deviceinfo.go GetDevice/Attributes, mig.go
CommonAttributesMig/CommonCapacitiesMig, partitions.go PartGetDevice/PartConsumesCounters,
consumable_shares.go applyConsumableShares): names, attribute names and value types, capacity
names, counter names. Values NVML would report come from the hardware tables (driver/hardware).
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.hardware.nvml import NvmlFacts
from driver.model.hardware import MigProfile
from driver.model.inventory import Gpu, PciDevice
from driver.model.quantity import format_quantity, parse_quantity
from driver.personality.nvidia.settings import NvidiaSettings, semver
from driver.slices.common import device
from driver.slices.names import NODE_IDENTITIES, Identities, mib_quantity

PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"
MIG_CAPACITIES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "memory")
MIB = 2**20


def intcap(n: int) -> dict[str, str]:
    """NVIDIA's intcap: a BinarySI quantity of a count, in its canonical form."""
    return {"value": format_quantity(Fraction(n), like="1Ki")}


def counter_set_name(minor: int) -> str:
    """GetSharedCounterSetName: `gpu-<minor>-counter-set`."""
    return f"gpu-{minor}-counter-set"


def memslice_counter(i: int) -> str:
    return f"memory-slice-{i}"


def camel_to_dns(name: str) -> str:
    """camelToDNSName: `copyEngines` -> `copy-engines` (counter names derived from capacity names)."""
    out = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", name)
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", out)
    return rfc1123(out)


def rfc1123(name: str) -> str:
    """toRFC1123Compliant: lower case, every char outside [a-z0-9-.] -> '-', outer '-' and a final '.' cut."""
    out = re.sub(r"[^a-z0-9\-.]", "-", name.lower()).strip("-")
    return out.removesuffix(".")[:253]


def mig_device_name(minor: int, profile: str, gi_profile_id: int, start: int) -> str:
    """MigSpecTuple.ToCanonicalName: `gpu-<minor>-mig-<profile without dots>-<GI profile ID>-<start>`."""
    return f"gpu-{minor}-mig-{rfc1123(profile.replace('.', ''))}-{gi_profile_id}-{start}"


@dataclass(frozen=True)
class GpuInfo:
    """What the plugin knows about one physical GPU (its GpuInfo): NVML's view plus sysfs's."""

    gpu: Gpu
    facts: NvmlFacts
    settings: NvidiaSettings
    node_name: str
    # Where node-derived values come from (driver.slices.names.Identities): the GPU's and its static
    # MIG devices' UUIDs, so a fleet can stamp them per node.
    identities: Identities = NODE_IDENTITIES

    @property
    def minor(self) -> int:
        return self.gpu.index

    @property
    def name(self) -> str:
        return f"gpu-{self.minor}"

    @functools.cached_property
    def uuid(self) -> str:
        """`GPU-<uuid>`: stable for this node and GPU, different on every node (a real GPU's UUID is
        burnt in; a simulated one is derived like fake-dra's own, from node, PCI function and name)."""
        return "GPU-" + self.identities.uuid(self.node_name, self.gpu.pci.address, self.name)

    def mig_uuid(self, device_name: str) -> str:
        """`MIG-<uuid>` of an existing (static) MIG device of this GPU."""
        return "MIG-" + self.identities.uuid(self.node_name, self.gpu.pci.address, device_name)

    def mig_profiles(self) -> tuple[MigProfile, ...]:
        return self.gpu.model.mig_profiles if self.gpu.model.mig_capable else ()

    def gi_profile_id(self, profile: MigProfile) -> int:
        return self.settings.nvml.gi_profile_id(self.gpu.model, profile)

    @functools.cached_property
    def _common(self) -> dict[str, dict[str, Any]]:
        return self._attributes()

    def common_attributes(self) -> dict[str, dict[str, Any]]:
        """The attributes a full GPU and its MIG devices share (all but type, uuid, parentUUID, profile);
        computed once per GPU (a DynamicMIG GPU has dozens of devices), a fresh copy each call."""
        return {k: dict(v) for k, v in self._common.items()}

    def _attributes(self) -> dict[str, dict[str, Any]]:
        model, s = self.gpu.model, self.settings
        attrs: dict[str, dict[str, Any]] = {
            "productName": {"string": model.product_name},
            "brand": {"string": self.facts.brand},
            "architecture": {"string": model.architecture},
            "cudaComputeCapability": {"version": self.facts.cuda_version},
            "driverVersion": {"version": semver(s.driver_version)},
            "cudaDriverVersion": {"version": semver(s.cuda_driver_version)},
            **location(self.gpu.pci, s),
        }
        mode = s.addressing_mode_of(self.facts.addressing_mode)
        if mode:  # GetAddressingModeAsString: "" (not supported) publishes nothing
            attrs["addressingMode"] = {"string": mode}
        return attrs

    def full_capacity(self) -> dict[str, dict[str, str]]:
        """fullGpuCapacity: NVML's total memory."""
        return {"memory": {"value": mib_quantity(self.gpu.model.memory_mib)}}

    def max_capacities(self) -> dict[str, dict[str, str]]:
        """Per-dimension maxima over every MIG profile (AddDetailAfterWalkingMigProfiles)."""
        return {k: dict(v) for k, v in self._maxima.items()}

    @functools.cached_property
    def _maxima(self) -> dict[str, dict[str, str]]:
        best: dict[str, int] = {}
        for profile in self.mig_profiles():
            for name, value in mig_values(profile).items():
                best[name] = max(best.get(name, value), value)
        return {name: _capacity(name, value) for name, value in best.items()}

    def memory_slices(self) -> int:
        """The largest placement size seen, in NVML placement units: the memory-slice count NVIDIA infers
        (maxMemSlicesConsumed; 12 on an RTX PRO 6000 Blackwell, whose 4g.96gb placement is {0}:12)."""
        return max((len(self.placement(p, 0)) for p in self.mig_profiles()), default=0)

    def placement(self, profile: MigProfile, start: int) -> range:
        """NVML's placement of `profile` at memory slice `start`: the units its name and counters use."""
        return self.facts.nvml_placement(start, profile.memory_slices)

    def mig_name(self, profile: MigProfile, start: int) -> str:
        nvml_start = self.placement(profile, start).start
        return mig_device_name(self.minor, profile.name, self.gi_profile_id(profile), nvml_start)


def location(pci: PciDevice, settings: NvidiaSettings) -> dict[str, dict[str, Any]]:
    """The standard PCI attributes (deviceattribute) and the NUMA node (addNumaNodeAttribute)."""
    attrs: dict[str, dict[str, Any]] = {PCI_BUS_ID: {"string": pci.address}}
    if pci.pcie_root:
        attrs[PCIE_ROOT] = {"string": pci.pcie_root}
    if pci.numa_node is not None and pci.numa_node >= 0:
        attrs[NUMA_NODE] = ({"ints": [pci.numa_node]} if settings.gate("DRAListTypeAttributes")
                            else {"int": pci.numa_node})
    return attrs


def mig_values(profile: MigProfile) -> dict[str, int]:
    """CommonCapacitiesMig's dimensions as plain numbers (memory in bytes)."""
    return {"multiprocessors": profile.multiprocessors, "copyEngines": profile.copy_engines,
            "decoders": profile.decoders, "encoders": profile.encoders, "jpegEngines": profile.jpeg_engines,
            "ofaEngines": profile.ofa_engines, "memory": profile.memory_mib * MIB}


def _capacity(name: str, value: int) -> dict[str, str]:
    return {"value": mib_quantity(value // MIB)} if name == "memory" else intcap(value)


def mig_capacities(profile: MigProfile) -> dict[str, dict[str, str]]:
    return {name: _capacity(name, value) for name, value in mig_values(profile).items()}


def full_gpu(info: GpuInfo, *, partitionable: bool) -> dict[str, Any]:
    """GetDevice (legacy) or PartGetDevice (DynamicMIG: maxima as capacity, consuming every counter)."""
    attrs = {**info.common_attributes(), "type": {"string": "gpu"}, "uuid": {"string": info.uuid}}
    maxima = info.max_capacities() if partitionable else {}
    if not maxima:
        return device(info.name, attrs, info.full_capacity())
    counters = {camel_to_dns(n): dict(c) for n, c in maxima.items()}
    counters.update({memslice_counter(i): {"value": "1"} for i in range(info.memory_slices())})
    return device(info.name, attrs, maxima, [{"counterSet": counter_set_name(info.minor), "counters": counters}])


def counter_set(info: GpuInfo) -> dict[str, Any] | None:
    """PartSharedCounterSets: the GPU's counters at their maxima (None without MIG profile data)."""
    maxima = info.max_capacities()
    if not maxima:
        return None
    counters = {camel_to_dns(n): dict(c) for n, c in maxima.items()}
    counters.update({memslice_counter(i): {"value": "1"} for i in range(info.memory_slices())})
    return {"name": counter_set_name(info.minor), "counters": dict(sorted(counters.items()))}


def dynamic_mig(info: GpuInfo, profile: MigProfile, start: int) -> dict[str, Any]:
    """MigSpec.PartGetDevice: an abstract MIG device (no uuid), consuming its capacities and slices.
    `start` is a memory slice of the catalog; names and counters carry NVML's placement units."""
    attrs = {**info.common_attributes(), "type": {"string": "mig"}, "parentUUID": {"string": info.uuid},
             "profile": {"string": profile.name}}
    caps = mig_capacities(profile)
    counters = {camel_to_dns(n): dict(c) for n, c in caps.items()}
    counters.update({memslice_counter(i): {"value": "1"} for i in info.placement(profile, start)})
    return device(info.mig_name(profile, start), attrs, caps,
                  [{"counterSet": counter_set_name(info.minor), "counters": counters}])


def static_mig(info: GpuInfo, profile: MigProfile, start: int) -> dict[str, Any]:
    """MigDeviceInfo.GetDevice: an existing MIG device, with uuid and memorySlice<i> capacities."""
    name = info.mig_name(profile, start)
    attrs = {**info.common_attributes(), "type": {"string": "mig"}, "parentUUID": {"string": info.uuid},
             "profile": {"string": profile.name},
             "uuid": {"string": info.mig_uuid(name)}}
    caps = mig_capacities(profile)
    caps.update({f"memorySlice{i}": {"value": "1"} for i in info.placement(profile, start)})
    return device(name, attrs, caps)


def vfio(gpu: Gpu, facts: NvmlFacts, settings: NvidiaSettings) -> dict[str, Any]:
    """VfioDeviceInfo.GetDevice: the GPU as a PCI function for passthrough (`gpu-vfio-<index>`)."""
    pci = gpu.pci
    attrs: dict[str, dict[str, Any]] = {
        "type": {"string": "vfio"},
        # uuid.NewSHA1(uuid.NameSpaceDNS, pciAddress): stable per PCI address, not a GPU- UUID.
        "uuid": {"string": str(uuid.uuid5(uuid.NAMESPACE_DNS, pci.address))},
        "deviceID": {"string": f"0x{pci.device_id:04x}"},
        "vendorID": {"string": f"0x{pci.vendor_id:04x}"},
        "productName": {"string": facts.pci_name},
        "iommuFDEnabled": {"bool": settings.iommu_fd},
        **location(pci, settings),
    }
    capacity = {"addressableMemory": {"value": format_quantity(Fraction(facts.addressable_memory_bytes), like="1Ki")}}
    return device(f"gpu-vfio-{gpu.index}", attrs, capacity)


def apply_consumable_shares(dev: dict[str, Any], settings: NvidiaSettings) -> dict[str, Any]:
    """applyConsumableShares: allowMultipleAllocations, and a request policy on `memory` (plus a
    `shares` capacity for an integer mode); memory rounded down to whole MiB, the policy's step."""
    if not settings.shares_enabled:
        return dev
    mode = settings.consumable_shares
    out: dict[str, Any] = {"name": dev["name"], "allowMultipleAllocations": True}
    out.update({k: v for k, v in dev.items() if k != "name"})
    capacity: Mapping[str, Any] = out.get("capacity") or {}
    memory = capacity.get("memory")
    if memory is None:
        return out
    max_mib = int(parse_quantity(memory["value"])) // MIB
    top = mib_quantity(max_mib)
    policies = {
        "memory": {"default": top, "validRange": {"min": "1Mi", "max": top, "step": "1Mi"}},
        "unlimited": {"default": "0", "validRange": {"min": "0", "max": top, "step": "1Mi"}},
    }
    caps = dict(capacity)
    if mode in policies:
        caps["memory"] = {"value": top, "requestPolicy": policies[mode]}
    else:
        shares = int(mode)
        caps["memory"] = {"value": top, "requestPolicy": policies["unlimited"]}
        caps["shares"] = {"value": str(shares),
                          "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": str(shares), "step": "1"}}}
    out["capacity"] = dict(sorted(caps.items()))
    return out
