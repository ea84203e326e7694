"""GPU and NIC model tables with their public sources, plus config-file overrides.

Public API: `load_catalog(overrides)` -> HardwareCatalog (see driver.hardware.catalog).
"""

from driver.hardware.catalog import builtin_tables, load_catalog

__all__ = ["builtin_tables", "load_catalog"]
