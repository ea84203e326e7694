"""Hand-built hardware for slice tests, independent of the hardware tables and fake sysfs.

The numbers are the A100-40GB MIG table of seeds/kep-4815-partitionable-devices.md, so tests pin
the rendering rules, not whatever the catalog happens to contain.
"""

from __future__ import annotations

from driver.model.hardware import GpuModel, MigProfile, VgpuProfile
from driver.model.inventory import Gpu, Inventory, MdevType, NicPF, PciDevice, VirtualFunction


def mig(name, cs, ms, sms, mib, ce, dec, jpeg, ofa, placements):
    return MigProfile(name=name, compute_slices=cs, memory_slices=ms, multiprocessors=sms, memory_mib=mib,
                      copy_engines=ce, decoders=dec, encoders=0, jpeg_engines=jpeg, ofa_engines=ofa,
                      placements=tuple(placements))


A100_40GB = GpuModel(
    device_id=0x20B0, name="a100-40gb", product_name="NVIDIA A100-SXM4-40GB", architecture="Ampere",
    memory_mib=40960, multiprocessors=108, copy_engines=7, decoders=5, encoders=0, jpeg_engines=1,
    ofa_engines=1, mig_memory_slices=8,
    mig_profiles=(
        mig("1g.5gb", 1, 1, 14, 4864, 1, 0, 0, 0, range(7)),
        mig("1g.5gb+me", 1, 1, 14, 4864, 1, 1, 1, 1, range(7)),
        mig("1g.10gb", 1, 2, 14, 9856, 1, 1, 0, 0, [0, 2, 4, 6]),
        mig("2g.10gb", 2, 2, 28, 9856, 2, 1, 0, 0, [0, 2, 4]),
        mig("3g.20gb", 3, 4, 42, 19968, 3, 2, 0, 0, [0, 4]),
        mig("4g.20gb", 4, 4, 56, 19968, 4, 2, 0, 0, [0]),
        mig("7g.40gb", 7, 8, 98, 40192, 7, 5, 1, 1, [0]),
    ),
    vgpu_profiles=(VgpuProfile("A100-4C", 4096, 10), VgpuProfile("A100-8C", 8192, 5),
                   VgpuProfile("A100-40C", 40960, 1)),
)

T4 = GpuModel(device_id=0x1EB8, name="t4", product_name="Tesla T4", architecture="Turing", memory_mib=15360,
              multiprocessors=40, copy_engines=3, decoders=2, encoders=1,
              vgpu_profiles=(VgpuProfile("T4-4C", 4096, 4), VgpuProfile("T4-16C", 16384, 1)))


def pci(address: str, numa: int | None = 0, root: str | None = "pci0000:00", device_id: int = 0x20B0) -> PciDevice:
    return PciDevice(address=address, vendor_id=0x10DE, device_id=device_id, class_code=0x030200,
                     numa_node=numa, pcie_root=root, sysfs_path=f"/sys/bus/pci/devices/{address}")


def gpu(index: int, model: GpuModel = A100_40GB, mdev: tuple[str, ...] = (), numa: int | None = 0) -> Gpu:
    types = tuple(MdevType(type_id=f"nvidia-{470 + k}", name=f"NVIDIA {n}", available_instances=1,
                           device_api="vfio-pci") for k, n in enumerate(mdev))
    return Gpu(index=index, pci=pci(f"0000:{0x07 + index:02x}:00.0", numa=numa), model=model, mdev_types=types)


def nic(index: int, vfs: int = 8, speed: int | None = 100000, total: int = 16) -> NicPF:
    bus = 0x40 + index
    pf = PciDevice(address=f"0000:{bus:02x}:00.0", vendor_id=0x15B3, device_id=0x101D, class_code=0x020000,
                   numa_node=1, pcie_root="pci0000:40", sysfs_path="")
    vf_list = tuple(
        VirtualFunction(index=k, pci=PciDevice(address=f"0000:{bus:02x}:00.{k + 1}" if k < 7 else
                                               f"0000:{bus:02x}:{(k + 1) // 8:02x}.{(k + 1) % 8}",
                                               vendor_id=0x15B3, device_id=0x101E, class_code=0x020000,
                                               numa_node=1, pcie_root="pci0000:40", sysfs_path=""),
                        interface=f"ens{index}f0v{k}")
        for k in range(vfs))
    return NicPF(index=index, pci=pf, interface=f"ens{index}f0", speed_mbps=speed, total_vfs=total, num_vfs=vfs,
                 vfs=vf_list, product_name="MT2892 Family [ConnectX-6 Dx]")


def demo_like() -> Inventory:
    """2x A100-40GB (one vGPU-capable) + one 100G PF with 8 VFs: the `demo` profile's shape."""
    return Inventory(gpus=(gpu(0), gpu(1, mdev=("A100-4C", "A100-8C", "A100-40C"))), nics=(nic(0),))
