"""Reads a sysfs tree under a configurable root into an Inventory (plus fake trees and fault files).

Public API:
- `discover(root, catalog) -> Inventory` (driver.discovery.sysfs)
- `make_sysfs(profile, out)`, `PROFILES`, `set_fault(root, bdf, message|None)`, `read_fault(root, bdf)`
  (driver.discovery.fakesysfs)
- `inventory_to_dict(inventory)` JSON-able view (driver.discovery.report)
"""

from driver.discovery.fakesysfs import FAULT_FILE, PROFILES, make_sysfs, read_fault, set_fault, write_profile
from driver.discovery.report import inventory_to_dict
from driver.discovery.sysfs import discover

__all__ = [
    "FAULT_FILE", "PROFILES", "discover", "inventory_to_dict", "make_sysfs", "read_fault", "set_fault",
    "write_profile",
]
