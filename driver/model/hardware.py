"""Capabilities of GPU models: memory, SMs, MIG profiles with placements, vGPU profiles.

These are plain values; the tables that fill them (with their public sources) live in
driver/hardware, and a driver config file may add or override models for simulated hardware.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile, e.g. `1g.5gb` on A100-40GB.

    `placements` are the valid start indices on the memory slices; a placement at start s
    occupies memory slices [s, s + memory_slices).
    """

    name: str  # NVIDIA's name, e.g. "1g.5gb", "1g.10gb+me"
    compute_slices: int  # the "Ng" part
    memory_slices: int  # memory slices occupied by one instance
    multiprocessors: int
    memory_mib: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    placements: tuple[int, ...]


@dataclass(frozen=True)
class VgpuProfile:
    """One NVIDIA vGPU type, e.g. `A100-4C` (4 GB framebuffer, time-sliced)."""

    name: str  # e.g. "A100-4C" (profile attribute); the mdev name is "GRID A100-4C" or "NVIDIA A100-4C"
    framebuffer_mib: int
    max_instances: int


@dataclass(frozen=True)
class GpuModel:
    """A GPU product keyed by PCI device ID (vendor 0x10de)."""

    device_id: int
    name: str  # short model key, e.g. "a100-40gb"
    product_name: str  # NVIDIA product name as nvidia-smi shows it, e.g. "NVIDIA A100-SXM4-40GB"
    architecture: str  # e.g. "Ampere"
    memory_mib: int
    multiprocessors: int
    copy_engines: int = 0
    decoders: int = 0
    encoders: int = 0
    jpeg_engines: int = 0
    ofa_engines: int = 0
    mig_memory_slices: int = 0  # 0: no MIG support
    mig_profiles: tuple[MigProfile, ...] = ()
    vgpu_profiles: tuple[VgpuProfile, ...] = ()
    source: str = ""  # public source the numbers come from

    @property
    def mig_capable(self) -> bool:
        return self.mig_memory_slices > 0 and bool(self.mig_profiles)


@dataclass(frozen=True)
class NicModel:
    """A NIC product keyed by (vendor, device) for naming; link speed is read from sysfs."""

    vendor_id: int
    device_id: int
    name: str
    product_name: str
    source: str = ""


@dataclass(frozen=True)
class HardwareCatalog:
    """All known models: built-in tables plus any driver-config additions/overrides."""

    gpus: dict[int, GpuModel] = field(default_factory=dict)
    nics: dict[tuple[int, int], NicModel] = field(default_factory=dict)

    def gpu(self, device_id: int) -> GpuModel | None:
        return self.gpus.get(device_id)
