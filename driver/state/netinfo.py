"""NetworkDeviceData of a prepared device, read from sysfs when the claim is prepared.

Why at prepare time and not from the published slice: a VF's interface can be renamed (udev,
NetworkManager) after discovery, and its hardware address is not published at all. The result has
the shape of resource.k8s.io/v1 NetworkDeviceData (`interfaceName`, `hardwareAddress`; `ips` stays
empty: addresses come from a CNI plugin, and none runs here), used by the device metadata files and
the claim's status.devices alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from driver.discovery.netdev import netdev_for_pci
from driver.model.deviceattrs import attr
from driver.state.types import NetworkData


def sysfs_network_data(sysfs_root: str | os.PathLike[str], driver_name: str) -> NetworkData:
    """device (as published) -> NetworkDeviceData, or None when its PCI function has no netdev."""

    def lookup(device: Mapping[str, Any]) -> dict[str, str] | None:
        bdf = attr(dict(device), "pciBusID", driver_name)
        nd = netdev_for_pci(sysfs_root, bdf) if isinstance(bdf, str) else None
        if nd is None:
            return None
        out = {"interfaceName": nd.interface}
        if nd.hardware_address:
            out["hardwareAddress"] = nd.hardware_address
        return out

    return lookup
