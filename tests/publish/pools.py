"""Test inputs for the publisher: hand-built inventories rendered by the real driver.slices.render_pool.

Hardware models come from the built-in catalog (A100-40GB: MIG + vGPU capable) so the pools have
the real shape: one counter set per GPU, MIG/vGPU/full devices with compatibility groups, and VFs
drawing bandwidth from their PF.
"""

from __future__ import annotations

from dataclasses import replace

from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Gpu, Inventory, MdevType, NicPF, PciDevice, VirtualFunction
from driver.slices import Pool, render_pool

DRIVER = "fake-dra.example.com"
NODE = "node-1"
A100 = 0x20B0


def _pci(address: str, vendor: int, device: int, cls: int) -> PciDevice:
    return PciDevice(address=address, vendor_id=vendor, device_id=device, class_code=cls, numa_node=0,
                     pcie_root="pci0000:00", sysfs_path=f"/sys/bus/pci/devices/{address}")


def gpu(index: int, vgpu: bool = True) -> Gpu:
    model = load_catalog().gpus[A100]
    types = tuple(MdevType(type_id=f"nvidia-{470 + k}", name=f"NVIDIA {p.name}", available_instances=p.max_instances,
                           device_api="vfio-pci") for k, p in enumerate(model.vgpu_profiles[:3])) if vgpu else ()
    return Gpu(index=index, pci=_pci(f"0000:{0x07 + index:02x}:00.0", 0x10DE, A100, 0x030200), model=model,
               mdev_types=types)


def nic(index: int, vfs: int, speed: int = 100000) -> NicPF:
    bus = 0x40 + index
    vf_list = tuple(VirtualFunction(index=k, pci=_pci(f"0000:{bus:02x}:{(k + 1) // 8:02x}.{(k + 1) % 8}", 0x15B3, 0x101E, 0x020000),
                                    interface=f"ens{index}f0v{k}") for k in range(vfs))
    return NicPF(index=index, pci=_pci(f"0000:{bus:02x}:00.0", 0x15B3, 0x101D, 0x020000), interface=f"ens{index}f0",
                 speed_mbps=speed, total_vfs=max(vfs, 16), num_vfs=vfs, vfs=vf_list, product_name="ConnectX-6 Dx")


def inventory(gpus: int = 2, nics: int = 1, vfs: int = 8, vgpu: bool = True) -> Inventory:
    return Inventory(gpus=tuple(gpu(i, vgpu) for i in range(gpus)), nics=tuple(nic(i, vfs) for i in range(nics)))


def render(inv: Inventory, features: Features = Features(), node: str = NODE) -> Pool:
    return render_pool(inv, features, node_name=node, driver_name=DRIVER)


def with_nic_speed(inv: Inventory, index: int, speed: int) -> Inventory:
    nics = tuple(replace(n, speed_mbps=speed) if n.index == index else n for n in inv.nics)
    return replace(inv, nics=nics)


def with_vf_interface(inv: Inventory, nic_index: int, vf_index: int, interface: str) -> Inventory:
    """One VF renamed: changes exactly one device attribute (hotplug-style single-device change)."""
    nics = []
    for n in inv.nics:
        if n.index == nic_index:
            n = replace(n, vfs=tuple(replace(v, interface=interface) if v.index == vf_index else v for v in n.vfs))
        nics.append(n)
    return replace(inv, nics=tuple(nics))
