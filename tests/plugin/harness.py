"""Test harness: the real `python -m driver run` over real unix sockets, driven like the kubelet.

Directories live under a short /tmp path (AF_UNIX paths are limited to 107 bytes). Claims are
allocated by the reference allocator (driver.allocator.Allocator) against the ResourceSlices the
plugin itself published into the local object store, then written to the store as the API would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from driver.allocator import Allocator
from driver.features import Features
from driver.plugin.client import KubeletClient
from driver.store.objectstore import ObjectStore
from waiting import GENEROUS_S

DRIVER = "fake-dra.example.com"
NODE = "n1"
REPO = Path(__file__).resolve().parents[2]


def device_classes(driver: str = DRIVER) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": f"{t}.{driver}"},
         "spec": {"selectors": [{"cel": {"expression":
                  f'device.driver == "{driver}" && device.attributes["{driver}"].type == "{t}"'}}]}}
        for t in ("gpu", "mig", "vgpu", "timeshare", "vf")
    ]


class Plugin:
    def __init__(self, sysfs_template: Path, *, extra_args: tuple[str, ...] = (), root: Path | None = None) -> None:
        self.root = root or Path(tempfile.mkdtemp(prefix="fdp-", dir="/tmp"))
        self.sysfs = self.root / "sys"
        if not self.sysfs.exists():
            shutil.copytree(sysfs_template, self.sysfs, symlinks=True)
        self.store_dir = self.root / "store"
        self.plugins = self.root / "p"
        self.registry = self.root / "r"
        self.cdi = self.root / "cdi"
        self.state = self.plugins / DRIVER
        self.boot_id_file = self.root / "boot_id"
        if not self.boot_id_file.exists():
            self.boot_id_file.write_text("boot-1\n")
        self.log = self.root / "plugin.log"
        self.extra_args = extra_args
        self.proc: subprocess.Popen[bytes] | None = None
        self.clients: list[KubeletClient] = []
        self.store = ObjectStore(self.store_dir)

    @property
    def reg_sock(self) -> Path:
        return self.registry / f"{DRIVER}-reg.sock"

    @property
    def dra_sock(self) -> Path:
        return self.plugins / DRIVER / "dra.sock"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "driver", "run", "--sysfs-root", str(self.sysfs), "--node-name", NODE,
                "--store", str(self.store_dir), "--kubelet-plugins-dir", str(self.plugins),
                "--kubelet-registry-dir", str(self.registry), "--cdi-root", str(self.cdi),
                "--boot-id-file", str(self.boot_id_file), "--health-interval", "0.2", "--publish-interval", "5",
                "--grace-period", "2", *self.extra_args]

    def spawn(self, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_DRA_", "KUBE"))}
        clean.update(env or {})
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=clean, cwd=REPO)
        return self.proc

    def start(self, env: dict[str, str] | None = None, timeout: float = GENEROUS_S) -> KubeletClient:
        self.spawn(env)
        return self.wait_registered(timeout)

    def wait_registered(self, timeout: float = GENEROUS_S) -> KubeletClient:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"plugin exited with {self.proc.returncode}:\n{self.log_text()}")
            if self.reg_sock.exists():
                client = self.client()
                try:
                    client.register()
                    return client
                except Exception:  # noqa: BLE001 - not serving yet
                    client.close()
            time.sleep(0.05)
        raise AssertionError(f"plugin did not register in {timeout}s:\n{self.log_text()}")

    def client(self) -> KubeletClient:
        c = KubeletClient(self.registry, DRIVER, timeout_s=20.0)
        self.clients.append(c)
        return c

    def stop(self, sig: int = signal.SIGTERM, timeout: float = GENEROUS_S) -> int:
        for c in self.clients:
            c.close()
        self.clients.clear()
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        self.proc = None
        return rc

    def wait_exit(self, timeout: float = GENEROUS_S) -> int:
        assert self.proc is not None
        rc = self.proc.wait(timeout)
        for c in self.clients:
            c.close()
        self.clients.clear()
        self.proc = None
        return rc

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def refused(self, proc: subprocess.Popen[bytes], *needles: str, timeout: float = GENEROUS_S) -> str:
        """Wait for a start-up refusal: exit 2, no traceback, every needle in the log; returns the log."""
        assert proc.wait(timeout) == 2, self.log_text()
        self.proc = None
        text = self.log_text()
        assert "Traceback" not in text, text
        for needle in needles:
            assert needle in text, text
        return text

    # -- the API side ---------------------------------------------------------------------

    def wait_slices(self, timeout: float = GENEROUS_S) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            slices = [s for s in self.store.list("resourceslices") if s["spec"].get("driver") == DRIVER]
            if slices:  # complete: every slice of the newest generation is there
                gen = max(s["spec"]["pool"]["generation"] for s in slices)
                newest = [s for s in slices if s["spec"]["pool"]["generation"] == gen]
                if len(newest) == newest[0]["spec"]["pool"]["resourceSliceCount"]:
                    return newest
            time.sleep(0.1)
        raise AssertionError(f"plugin published no ResourceSlices:\n{self.log_text()}")

    def allocate(self, name: str, requests: list[dict[str, Any]], config: list[dict[str, Any]] | None = None,
                 namespace: str = "default", scheduler_view=None) -> tuple[str, str, str]:
        """Create a claim, allocate it with the reference allocator, store it; returns (ns, name, uid).

        `scheduler_view(slices) -> slices` lets a test show the allocator what a skewed
        scheduler would see (e.g. slices whose compatibility groups were dropped)."""
        claim: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
            "spec": {"devices": {"requests": requests, **({"config": config} if config else {})}},
        }
        allocated = [c for c in self.store.list("resourceclaims", all_namespaces=True)
                     if (c.get("status") or {}).get("allocation")]
        slices = self.wait_slices()
        if scheduler_view is not None:
            slices = scheduler_view(slices)
        alloc = Allocator(slices=slices, classes=device_classes(), node=NODE, features=Features(),
                          allocated=allocated)
        (allocation,) = alloc.allocate([claim])
        claim["status"] = {"allocation": allocation}
        stored = self.store.create("resourceclaims", claim)
        return namespace, name, stored["metadata"]["uid"]

    def checkpoint(self) -> dict[str, Any]:
        return json.loads((self.state / "checkpoint.json").read_text())

    def metadata_uids(self) -> set[str]:
        """Claims with a device metadata directory under the state dir (driver.state.metadata)."""
        root = self.state / "dra-device-metadata"
        return {p.name for p in root.iterdir()} if root.is_dir() else set()

    def metadata_stream(self, uid: str, request: str) -> list[dict[str, Any]]:
        from driver.state.metadata import decode

        return decode((self.state / "dra-device-metadata" / uid / request / f"{DRIVER}-metadata.json").read_bytes())

    def cdi_uids(self) -> set[str]:
        prefix = f"k8s.{DRIVER}_device_"
        return {p.name[len(prefix):-len(".json")] for p in self.cdi.glob(f"{prefix}*.json")} if self.cdi.exists() else set()


def request(name: str, cls: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": f"{cls}.{DRIVER}", **extra}}
