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
    source: str = ""  # where the numbers come from (citation text)
    unconfirmed: str = ""  # non-empty: not confirmed against NVIDIA docs or a real capture, and why


@dataclass(frozen=True)
class VgpuProfile:
    """One NVIDIA vGPU type of one board, e.g. `A100X-4C` (time-sliced, 4 GB framebuffer) or the
    MIG-backed `A100X-1-5C` (runs on a MIG 1g.5gb GPU instance).

    `framebuffer_mib` is what the VM gets (NVIDIA's vGPU guide) and may exceed the GPU's reported
    memory; `max_instances` is the guide's maximum per GPU and the only source of instance counts.
    `max_instances_mixed` is the guide's maximum per GPU in mixed-size mode (time-sliced types of
    different sizes on one GPU), lower than the equal-size figure for the small types of most boards;
    None when the table does not give it (the equal-size figure is used then).
    `vgpus_per_instance` is how many vGPUs of a MIG-backed type share one GPU instance: 1 for the
    classic MIG-backed types, more for NVIDIA's time-sliced MIG-backed types (vGPU 19+, RTX PRO
    Blackwell: `DC-1-12C` puts 2 vGPUs on each of the four 1g.24gb instances, 8 per GPU); the table's
    `per_instance`.
    """

    name: str  # e.g. "A100X-4C" (profile attribute); the host writes "GRID A100X-4C", "NVIDIA A100X-4C" or
    # "NVIDIA RTX Pro 6000 Blackwell DC-48C": the type is the last word
    framebuffer_mib: int
    max_instances: int
    mig_profile: str | None = None  # MIG-backed types: the GPU instance profile, e.g. "1g.5gb"
    source: str = ""
    unconfirmed: str = ""
    max_instances_mixed: int | None = None
    vgpus_per_instance: int = 1

    @property
    def mig_backed(self) -> bool:
        return self.mig_profile is not None

    @property
    def time_sliced_mig_backed(self) -> bool:
        """Several vGPUs of this type share one GPU instance (NVIDIA's time-sliced MIG-backed mode)."""
        return self.mig_backed and self.vgpus_per_instance > 1

    def instances(self, mixed_size: bool) -> int:
        """Most instances of this type one GPU holds, in mixed-size or equal-size mode."""
        if mixed_size and self.max_instances_mixed is not None:
            return self.max_instances_mixed
        return self.max_instances


@dataclass(frozen=True)
class GpuModel:
    """A GPU product keyed by PCI device ID (vendor 0x10de)."""

    device_id: int
    name: str  # short model key, e.g. "a100-40gb"
    product_name: str  # NVIDIA product name as nvidia-smi shows it, e.g. "NVIDIA A100-SXM4-40GB"
    architecture: str  # e.g. "Ampere"
    memory_mib: int  # total as nvidia-smi reports it on bare metal (H100 SXM5: 81559, not 81920)
    multiprocessors: int
    copy_engines: int = 0
    decoders: int = 0
    encoders: int = 0
    jpeg_engines: int = 0
    ofa_engines: int = 0
    mig_memory_slices: int = 0  # 0: no MIG support
    mig_profiles: tuple[MigProfile, ...] = ()
    vgpu_profiles: tuple[VgpuProfile, ...] = ()  # time-sliced and MIG-backed types, table order
    # False for boards whose time-sliced vGPUs must all be one type (no mixed-size mode: the vGPU guide
    # says so for the Turing and Volta boards, e.g. the T4), whatever slices.vgpuHomogeneous says.
    vgpu_mixed_size: bool = True
    source: str = ""  # public source the numbers come from
    unconfirmed: str = ""  # non-empty: model-level numbers not confirmed, and why
    # PCI subsystem (vendor, device) IDs that select this model when several boards share one device ID
    # (A2 and A16 are both 10de:25b6); empty: the model of every board with this device ID.
    subsystems: tuple[tuple[int, int], ...] = ()

    @property
    def mig_capable(self) -> bool:
        return self.mig_memory_slices > 0 and bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


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

    gpus: dict[int, GpuModel] = field(default_factory=dict)  # device ID -> the model of every such board
    nics: dict[tuple[int, int], NicModel] = field(default_factory=dict)
    # Boards told apart by their PCI subsystem: (device ID, subsystem vendor, subsystem device) -> model.
    variants: dict[tuple[int, int, int], GpuModel] = field(default_factory=dict)

    def gpu(self, device_id: int, subsystem: tuple[int, int] | None = None) -> GpuModel | None:
        """The model of a GPU with this device ID and (when known) PCI subsystem IDs: a subsystem
        variant first, else the device ID's plain model."""
        if subsystem is not None:
            variant = self.variants.get((device_id, *subsystem))
            if variant is not None:
                return variant
        return self.gpus.get(device_id)

    def needs_subsystem(self, device_id: int) -> bool:
        """Whether boards with this device ID are told apart by their PCI subsystem IDs."""
        return any(key[0] == device_id for key in self.variants)

    def variants_of(self, device_id: int) -> list[GpuModel]:
        return [m for key, m in sorted(self.variants.items()) if key[0] == device_id]

    def models(self) -> list[GpuModel]:
        """Every model once (plain and subsystem variants), by device ID then name."""
        unique = {m.name: m for m in [*self.gpus.values(), *self.variants.values()]}
        return sorted(unique.values(), key=lambda m: (m.device_id, m.name))
