"""Inventory + Features + driver config -> the node's desired ResourceSlice pool (pure).

Public API (see contracts.md): `SliceConfig`, `render_pool`, `Pool`, `to_resource_slices`, and
`check_pool` (the apiserver's non-schema rules, for tests and pre-publish checks).
"""

from driver.slices.config import SliceConfig
from driver.slices.limits import check_pool
from driver.slices.pool import Pool, render_pool, slice_name, to_resource_slices

__all__ = ["Pool", "SliceConfig", "check_pool", "render_pool", "slice_name", "to_resource_slices"]
