"""Fixtures: pristine fake sysfs trees per profile (built once per session) and fresh copies to damage."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from driver.discovery import PROFILES, make_sysfs
from driver.discovery.fakesysfs import SysfsProfile, write_profile
from driver.hardware import load_catalog
from driver.model.hardware import HardwareCatalog


@pytest.fixture(scope="session")
def catalog() -> HardwareCatalog:
    return load_catalog()


def _mini() -> SysfsProfile:
    """The demo node with 2 vGPU VFs carrying 2 mdev types: same addresses, ~6x fewer files to copy."""
    fns = []
    for fn in PROFILES["demo"].functions:
        if fn.mdev:
            fn = dataclasses.replace(fn, num_vfs=2, mdev=fn.mdev[-2:])
        fns.append(fn)
    return SysfsProfile("mini", "demo, smaller", tuple(fns))


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Read-only trees: profile name -> root (do not modify; use `tree` for that)."""
    cache: dict[str, Path] = {}

    def get(profile: str) -> Path:
        if profile not in cache:
            root = tmp_path_factory.mktemp(f"pristine-{profile}") / "sys"
            if profile == "mini":
                write_profile(_mini(), root)
            else:
                make_sysfs(profile, root)
            cache[profile] = root
        return cache[profile]

    return get


@pytest.fixture
def tree(tmp_path: Path, pristine: Callable[[str], Path]) -> Callable[[str], Path]:
    """A private copy of a profile's tree that a test may damage."""

    def get(profile: str = "mini") -> Path:
        root = tmp_path / profile
        shutil.copytree(pristine(profile), root, symlinks=True)
        return root

    return get
