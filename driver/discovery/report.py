"""JSON-able view of an Inventory, shared by `fake-dra discover -o json` and tools that diff inventories.

Hex IDs are printed the way lspci/sysfs show them ("0x20b0") so output can be compared with a real host.
"""

from __future__ import annotations

from typing import Any

from driver.model.inventory import Inventory, PciDevice


def _pci(p: PciDevice) -> dict[str, Any]:
    return {
        "address": p.address,
        "vendor": f"0x{p.vendor_id:04x}",
        "device": f"0x{p.device_id:04x}",
        "class": f"0x{p.class_code:06x}",
        "numaNode": p.numa_node,
        "pcieRoot": p.pcie_root,
        "driver": p.driver,
        "iommuGroup": p.iommu_group,
    }


def inventory_to_dict(inv: Inventory) -> dict[str, Any]:
    return {
        "gpus": [
            {
                "index": g.index,
                **_pci(g.pci),
                "model": g.model.name,
                "productName": g.model.product_name,
                "memoryMiB": g.model.memory_mib,
                "multiprocessors": g.model.multiprocessors,
                "migCapable": g.model.mig_capable,
                "migProfiles": [p.name for p in g.model.mig_profiles],
                "mdevTypes": [
                    {
                        "type": t.type_id, "name": t.name, "profile": t.profile,
                        "availableInstances": t.available_instances, "deviceAPI": t.device_api,
                        "parents": list(t.parents),
                    }
                    for t in g.mdev_types
                ],
            }
            for g in inv.gpus
        ],
        "nics": [
            {
                "index": n.index,
                **_pci(n.pci),
                "productName": n.product_name,
                "interface": n.interface,
                "hardwareAddress": n.hardware_address,
                "speedMbps": n.speed_mbps,
                "sriov": n.sriov,
                "totalVFs": n.total_vfs,
                "numVFs": n.num_vfs,
                "vfs": [{"index": v.index, **_pci(v.pci), "interface": v.interface,
                         "hardwareAddress": v.hardware_address} for v in n.vfs],
            }
            for n in inv.nics
        ],
        "warnings": list(inv.warnings),
    }
