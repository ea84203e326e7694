"""Shared fixtures for the state-layer tests: the `demo` fake node rendered once, in-memory claims."""

from __future__ import annotations

import copy
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from driver.errors import NotFoundError
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.types import ClaimRef

DRIVER = "fake-dra.example.com"
NODE = "n1"


@pytest.fixture(scope="session")
def demo_sysfs():
    from driver.discovery import make_sysfs

    root = Path(tempfile.mkdtemp(prefix="fdra-sys-", dir="/tmp")) / "sys"
    make_sysfs("demo", root)
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture
def sysfs(demo_sysfs):
    """A private, writable copy of the demo tree (health tests inject faults into it)."""
    root = Path(tempfile.mkdtemp(prefix="fdra-h-", dir="/tmp")) / "sys"
    shutil.copytree(demo_sysfs, root, symlinks=True)
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def demo_pool(demo_sysfs: Path):
    from driver.discovery import discover
    from driver.features import Features
    from driver.hardware import load_catalog
    from driver.slices import render_pool

    return render_pool(discover(demo_sysfs, load_catalog()), Features.all_on(), node_name=NODE, driver_name=DRIVER)


@dataclass
class FakeClaims:
    """In-memory ClaimSource: namespace/name -> claim dict."""

    claims: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    reads: int = 0

    def get_claim(self, namespace: str, name: str, deadline: Any = None) -> dict[str, Any]:
        self.reads += 1
        try:
            return copy.deepcopy(self.claims[(namespace, name)])
        except KeyError:
            raise NotFoundError(f"resourceclaim {namespace}/{name} not found") from None

    def add(self, name: str, results: list[dict[str, Any]] | None, *, namespace: str = "default",
            config: list[dict[str, Any]] | None = None, uid: str | None = None) -> ClaimRef:
        uid = uid or str(uuid.uuid4())
        claim: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                 "metadata": {"name": name, "namespace": namespace, "uid": uid}, "spec": {}}
        if results is not None:
            devices: dict[str, Any] = {"results": results}
            if config:
                devices["config"] = config
            claim["status"] = {"allocation": {"devices": devices}}
        self.claims[(namespace, name)] = claim
        return ClaimRef(namespace, name, uid)


def result(device: str, request: str = "req", **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": DRIVER, "pool": NODE, "device": device, **extra}


@dataclass
class Env:
    root: Path
    claims: FakeClaims
    pool: Any
    boot_id: str = "boot-1"
    states: list[DeviceState] = field(default_factory=list)

    @property
    def cdi_root(self) -> Path:
        return self.root / "cdi"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    def state(self, **kw: Any) -> DeviceState:
        """A DeviceState on this env's directories (call again to simulate a plugin restart:
        the previous instance releases the state directory as an exiting process would)."""
        for old in self.states:
            old.close()
        cache = kw.pop("pool_cache", None) or PoolCache(lambda: self.pool)
        st = DeviceState(
            driver_name=DRIVER, claims=self.claims, pool=cache, cdi=CdiWriter(self.cdi_root, DRIVER),
            checkpoint=CheckpointStore(self.state_dir, driver_name=DRIVER, node_name=NODE, boot_id=self.boot_id),
            **kw,
        )
        self.states.append(st)
        return st

    def cdi_files(self) -> list[str]:
        return sorted(p.name for p in self.cdi_root.glob("*.json")) if self.cdi_root.exists() else []


@pytest.fixture
def env(demo_pool) -> Env:
    e = Env(root=Path(tempfile.mkdtemp(prefix="fdra-st-", dir="/tmp")), claims=FakeClaims(), pool=demo_pool)
    yield e
    for st in e.states:
        st.close()
    shutil.rmtree(e.root, ignore_errors=True)
