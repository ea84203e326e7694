"""MdevType.profile: the one rule mapping an mdev/vGPU type name to a hardware-table profile name."""

from __future__ import annotations

import pytest

from driver.model.inventory import MdevType


@pytest.mark.parametrize(
    ("name", "profile"),
    [
        ("GRID A100-4C", "A100-4C"),
        ("NVIDIA A100-4C", "A100-4C"),
        ("grid A100-4C", "A100-4C"),
        ("  NVIDIA  A100-8C ", "A100-8C"),
        ("A100-40C", "A100-40C"),
        ("GRIDA100-4C", "GRIDA100-4C"),  # no separating blank: not a prefix
    ],
)
def test_profile_drops_the_driver_prefix(name: str, profile: str) -> None:
    assert MdevType("nvidia-471", name, 1, "vfio-pci").profile == profile
