"""Data shapes of a fake node (functions, mdev types, profiles) and the PCI IDs/classes they use.

Separate from the writer (fakesysfs) and the named profiles (fakeprofiles) so either can be read alone
and tests or the e2e harness can build custom nodes with dataclasses.replace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NVIDIA, MELLANOX, INTEL, ASPEED, SAMSUNG, REALTEK = 0x10DE, 0x15B3, 0x8086, 0x1A03, 0x144D, 0x10EC
BROADCOM_PLX, AMD = 0x1000, 0x1022
CLASS_3D, CLASS_VGA, CLASS_BRIDGE_OTHER, CLASS_ETH, CLASS_IB, CLASS_NVME, CLASS_PCI_BRIDGE = (
    0x030200, 0x030000, 0x068000, 0x020000, 0x020700, 0x010802, 0x060400,
)


@dataclass(frozen=True)
class FakeMdev:
    """One mdev type directory; `available` instances per parent function."""

    type_id: str
    name: str
    available: int
    framebuffer_mib: int
    max_instance: int


@dataclass(frozen=True)
class FakeFunction:
    """A PCI function to write, with its place in the hierarchy and optional SR-IOV/net/mdev details."""

    bdf: str
    vendor: int
    device: int
    klass: int
    numa: int
    root: str  # root complex, e.g. "0000:00" -> devices/pci0000:00
    bridges: tuple[str, ...] = ()  # bridge BDFs from the root port down to the device's parent
    total_vfs: int = 0
    num_vfs: int = 0
    vf_device: int = 0
    vf_offset: int = 1
    interface: str | None = None
    speed: int | None = None  # Mb/s; -1 written as-is for a down link
    mdev: tuple[FakeMdev, ...] = ()
    mdev_on_vfs: bool = False  # Ampere+ SR-IOV vGPU: types on each VF instead of the PF
    # "mdev", or "vendor-vfio" (R580+/Linux >= 6.8: <VF>/nvidia/creatable_vgpu_types, numeric type ids)
    vgpu_framework: str = "mdev"
    subsystem: tuple[int, int] = (0, 0)
    driver: str | None = None  # bound driver; None: the usual one for vendor/class (see _default_driver)


@dataclass(frozen=True)
class SysfsProfile:
    name: str
    description: str
    functions: tuple[FakeFunction, ...] = field(default_factory=tuple)


def bdf_add(bdf: str, offset: int) -> str:
    """The function `offset` devfn steps after `bdf` (how SR-IOV numbers VFs: offset + i * stride)."""
    domain, bus, devfn = bdf[:4], int(bdf[5:7], 16), int(bdf[8:10], 16) << 3 | int(bdf[11], 16)
    devfn += offset
    bus += devfn >> 8
    devfn &= 0xFF
    return f"{domain}:{bus:02x}:{devfn >> 3:02x}.{devfn & 7}"
