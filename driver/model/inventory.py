"""What discovery found on one node: PCI devices, GPUs with their model, NIC PFs with VFs.

An Inventory is the single input of slice rendering besides features and driver config; it is
hashable and ordered so rendering is byte-identical across runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from driver.model.hardware import GpuModel


@dataclass(frozen=True)
class PciDevice:
    """A PCI function as sysfs describes it."""

    address: str  # BDF, e.g. "0000:07:00.0"
    vendor_id: int
    device_id: int
    class_code: int  # 24-bit, e.g. 0x030200
    numa_node: int | None  # None when sysfs says -1 or does not say
    pcie_root: str | None  # e.g. "pci0000:00" (resource.kubernetes.io/pcieRoot), None if unresolvable
    sysfs_path: str  # resolved path under the sysfs root (informational)
    driver: str | None = None  # bound kernel driver (the `driver` link), e.g. "nvidia", "mlx5_core", "vfio-pci"
    iommu_group: int | None = None  # the `iommu_group` link; VFIO passthrough hands out whole groups


@dataclass(frozen=True)
class MdevType:
    """One entry of <BDF>/mdev_supported_types (NVIDIA vGPU type)."""

    type_id: str  # directory name, e.g. "nvidia-471"
    # contents of `name`, e.g. "GRID A100X-4C" (R510), "NVIDIA A100X-4C", "NVIDIA RTX Pro 6000 Blackwell DC-48C"
    name: str
    available_instances: int
    device_api: str  # e.g. "vfio-pci"
    description: str = ""
    # PCI functions that offer this type: the PF on pre-Ampere GPUs, the SR-IOV VFs on Ampere+
    # (available_instances is then the sum over them; cap it with VgpuProfile.max_instances).
    parents: tuple[str, ...] = ()
    # How instances are created: "mdev" (write a UUID to <parent>/mdev_supported_types/<type>/create) or
    # "vendor-vfio" (NVIDIA R580+ on Linux >= 6.8: write the numeric type id to <VF>/nvidia/current_vgpu_type).
    framework: str = "mdev"

    @property
    def profile(self) -> str:
        """The vGPU type: the last whitespace-separated word of the name, NVIDIA's own rule (go-nvlib
        nvmdev parseMdevTypeName): "GRID A100X-4C" / "NVIDIA A100X-4C" -> "A100X-4C", and on Blackwell
        RTX PRO boards "NVIDIA RTX Pro 6000 Blackwell DC-48C" -> "DC-48C".

        The one rule that both slice rendering and the discover/show reports use to match a type
        against the table of the GPU's board (found by PCI device ID, never by this name).
        """
        words = self.name.split()
        return words[-1] if words else ""


@dataclass(frozen=True)
class Gpu:
    """A physical NVIDIA GPU with a known model."""

    index: int  # stable node-local index (sorted by PCI address)
    pci: PciDevice
    model: GpuModel
    mdev_types: tuple[MdevType, ...] = ()

    @property
    def vgpu_capable(self) -> bool:
        return bool(self.mdev_types)


@dataclass(frozen=True)
class VirtualFunction:
    """An SR-IOV VF of a NIC physical function."""

    index: int  # N of the PF's virtfnN link
    pci: PciDevice
    interface: str | None = None
    hardware_address: str | None = None  # MAC from net/<interface>/address


@dataclass(frozen=True)
class NicPF:
    """A network physical function: SR-IOV capable (VFs enabled or not) or a plain port.

    Without VFs it is the host's own port; it is only published when the driver config opts it in.
    """

    index: int  # stable node-local index: SR-IOV PFs by PCI address, then the other ports by address
    pci: PciDevice
    interface: str | None  # netdev name, e.g. "ens1f0"
    speed_mbps: int | None  # link speed from class/net/<if>/speed; None if down/unknown
    total_vfs: int
    num_vfs: int
    vfs: tuple[VirtualFunction, ...] = ()
    product_name: str = ""
    sriov: bool = True  # False: no sriov_totalvfs (a plain port, total_vfs = num_vfs = 0)
    hardware_address: str | None = None  # MAC from net/<interface>/address


@dataclass(frozen=True)
class Inventory:
    """Everything discovered on a node, plus the warnings about what was skipped and why."""

    gpus: tuple[Gpu, ...] = ()
    nics: tuple[NicPF, ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)
