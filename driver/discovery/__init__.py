"""Reads a sysfs tree under a configurable root into an Inventory (plus fake trees and fault files).

Public API:
- `discover(root, catalog) -> Inventory` (driver.discovery.sysfs)
- `make_sysfs(profile, out)`, `PROFILES`, `profile_named(name, flag)`, `set_fault(root, bdf, message|None)`
  (driver.discovery.fakesysfs; the health model's driver.state.health.read_fault reads the fault files)
- `inventory_to_dict(inventory)` JSON-able view (driver.discovery.report)
"""

from driver.discovery.fakesysfs import FAULT_FILE, PROFILES, make_sysfs, profile_named, set_fault, write_profile
from driver.discovery.report import inventory_to_dict
from driver.discovery.sysfs import discover

__all__ = [
    "FAULT_FILE", "PROFILES", "discover", "inventory_to_dict", "make_sysfs", "profile_named", "set_fault",
    "write_profile",
]
