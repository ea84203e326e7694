"""Fixtures: pristine fake sysfs trees per profile (built once per session) and fresh copies to damage."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from driver.discovery import make_sysfs
from driver.hardware import load_catalog
from driver.model.hardware import HardwareCatalog


@pytest.fixture(scope="session")
def catalog() -> HardwareCatalog:
    return load_catalog()


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Read-only trees: profile name -> root (do not modify; use `tree` for that)."""
    cache: dict[str, Path] = {}

    def get(profile: str) -> Path:
        if profile not in cache:
            root = tmp_path_factory.mktemp(f"pristine-{profile}") / "sys"
            make_sysfs(profile, root)
            cache[profile] = root
        return cache[profile]

    return get


@pytest.fixture
def tree(tmp_path: Path, pristine: Callable[[str], Path]) -> Callable[[str], Path]:
    """A private copy of a profile's tree that a test may damage."""

    def get(profile: str = "demo") -> Path:
        root = tmp_path / profile
        shutil.copytree(pristine(profile), root, symlinks=True)
        return root

    return get
