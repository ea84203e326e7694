"""The network interface of a PCI function: its name and hardware (MAC) address, read from sysfs.

Why a module of its own: discovery needs it for the inventory, and the kubelet plugin needs it at
prepare time for the VF network data it reports (device metadata, ResourceClaim status.devices),
when the interface may have been renamed since the last discovery pass. Both read the same files
the kernel provides: `<pci device>/net/<ifname>/` for each netdev bound to the function, with
`address` holding the hardware address as lower-case colon-separated hex (6 bytes for Ethernet,
20 for InfiniBand). A function bound to vfio-pci has no `net/` directory: no interface, no error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from os.path import join

from driver.discovery.reader import BDF, read_attribute

# Linux prints dev->dev_addr with "%pM"-style colon-separated hex; NetworkDeviceData.hardwareAddress
# allows up to 128 characters, so the 20-byte InfiniBand address (59 characters) fits.
_HW_ADDRESS = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){1,31}$")
# IFNAMSIZ is 16 including the terminating NUL.
_IFNAME = re.compile(r"^[^/\s:]{1,15}$")

Warn = Callable[[str, str], None]


@dataclass(frozen=True)
class NetDev:
    """One network interface bound to a PCI function."""

    interface: str
    hardware_address: str | None  # None when `address` is missing, unreadable or not an address


def _ignore(path: str, problem: str) -> None:
    return None


def interface_names(device_path: str, warn: Warn = _ignore) -> list[str]:
    """Sorted netdev names under `<device_path>/net` ([] when the function has none)."""
    net = join(device_path, "net")
    try:
        names = sorted(os.listdir(net))
    except FileNotFoundError:
        return []
    except OSError as exc:
        warn(net, f"unreadable ({exc}); interface unknown")
        return []
    bad = [n for n in names if not _IFNAME.fullmatch(n)]
    for name in bad:
        warn(join(net, name), "not a valid interface name; ignored")
    return [n for n in names if n not in bad]


def hardware_address(device_path: str, interface: str, warn: Warn = _ignore) -> str | None:
    """`<device_path>/net/<interface>/address`, validated; None (with a warning) when unusable."""
    path = join(device_path, "net", interface, "address")
    try:
        raw = read_attribute(path)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        warn(path, f"unreadable ({exc.__class__.__name__}: {exc}); hardware address unknown")
        return None
    value = raw.lower()
    if not _HW_ADDRESS.fullmatch(value):
        warn(path, f"garbled value {raw[:40]!r} (want colon-separated hex bytes); hardware address unknown")
        return None
    return value


def netdev_of(device_path: str, warn: Warn = _ignore) -> NetDev | None:
    """The first (by name) interface of the PCI function at `device_path`, or None."""
    names = interface_names(device_path, warn)
    if not names:
        return None
    return NetDev(names[0], hardware_address(device_path, names[0], warn))


def netdev_for_pci(sysfs_root: str | os.PathLike[str], pci_address: str) -> NetDev | None:
    """The interface of PCI function `pci_address` under `sysfs_root` (via bus/pci/devices), or None.

    For the plugin at prepare time: problems are not warnings here (discovery reports them every
    pass); a device that vanished or has no netdev simply has no network data."""
    if not isinstance(pci_address, str) or not BDF.fullmatch(pci_address):
        return None
    return netdev_of(join(os.fspath(sysfs_root), "bus", "pci", "devices", pci_address))
