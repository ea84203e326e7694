"""The real kubelet plugin as a child process, on a fake sysfs tree and a local object store.

The local backend must exercise exactly what runs on a node: `python -m driver run` with its own
sockets, checkpoint and CDI directory, publishing into the store. This module starts it, waits for
registration the way the kubelet does, stops it with SIGTERM (or kills it with SIGKILL, to prove
the checkpoint carries the state), and keeps its log for the report when something goes wrong.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from driver.errors import FakeDraError
from driver.features import Features
from driver.plugin.client import KubeletClient

SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL}


class PluginStartError(FakeDraError):
    """The plugin process exited or never registered; the message carries its log tail."""


@dataclass(frozen=True)
class PluginDirs:
    root: Path
    shared_store: Path | None = None  # several nodes' plugins publish into one store (multi-node scenarios)

    @property
    def sysfs(self) -> Path:
        return self.root / "sysfs"

    @property
    def store(self) -> Path:
        return self.shared_store or self.root / "store"

    @property
    def plugins(self) -> Path:
        return self.root / "plugins"

    @property
    def registry(self) -> Path:
        return self.root / "registry"

    @property
    def cdi(self) -> Path:
        return self.root / "cdi"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def log(self) -> Path:
        return self.root / "plugin.log"


class PluginProcess:
    """Start/stop/restart `fake-dra run` and hand out a registered KubeletClient."""

    def __init__(self, dirs: PluginDirs, *, node_name: str, driver_name: str, features: Features,
                 startup_timeout_s: float = 30.0, personality: str | None = None,
                 driver_config: Path | None = None) -> None:
        """`personality`/`driver_config`: run the plugin as that personality with that config file;
        `driver_name` is then the personality's driver the harness talks to (its first)."""
        self.dirs = dirs
        self.personality = personality
        self.driver_config = driver_config
        self.node_name = node_name
        self.driver_name = driver_name
        self.features = features
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.client: KubeletClient | None = None
        (dirs.root / "boot_id").write_text("e2e-local-boot\n")

    def command(self) -> list[str]:
        d = self.dirs
        return [
            sys.executable, "-m", "driver", "--log-format", "json", "run",
            "--sysfs-root", str(d.sysfs), "--node-name", self.node_name,
            # A personality runs every driver it presents (NVIDIA's GPU and SR-IOV plugins together).
            *(() if self.personality else ("--driver-name", self.driver_name)),
            "--store", str(d.store), "--kubelet-plugins-dir", str(d.plugins),
            "--kubelet-registry-dir", str(d.registry), "--cdi-root", str(d.cdi), "--state-dir", str(d.state),
            "--features", str(self.features), "--health-interval", "3", "--publish-interval", "10",
            "--boot-id-file", str(d.root / "boot_id"), "--grace-period", "2",
        ] + (["--personality", self.personality] if self.personality else []) + (
            ["--driver-config", str(self.driver_config)] if self.driver_config else [])

    def start(self) -> KubeletClient:
        env = {k: v for k, v in os.environ.items()
               if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST") and not k.startswith("FAKE_DRA_")}
        with open(self.dirs.log, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        self.client = self._register()
        return self.client

    def _register(self) -> KubeletClient:
        deadline = time.monotonic() + self.startup_timeout_s
        sock = self.dirs.registry / f"{self.driver_name}-reg.sock"
        last = "registration socket never appeared"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise PluginStartError(f"plugin exited with code {self.proc.returncode}: {self.log_tail()}")
            if sock.exists():
                client = KubeletClient(self.dirs.registry, self.driver_name, timeout_s=10.0)
                try:
                    client.register()
                    return client
                except Exception as exc:  # noqa: BLE001 - socket present but not serving yet
                    last = f"{type(exc).__name__}: {exc}"
                    client.close()
            time.sleep(0.05)
        raise PluginStartError(f"plugin did not register within {self.startup_timeout_s:.0f} s ({last}): "
                               f"{self.log_tail()}")

    def stop(self, sig: str = "TERM", timeout_s: float = 10.0) -> int | None:
        if self.client is not None:
            self.client.close()
            self.client = None
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return None if proc is None else proc.returncode
        proc.send_signal(SIGNALS[sig])
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise PluginStartError(
                f"plugin ignored SIG{sig} for {timeout_s:.0f} s and was killed: {self.log_tail()}") from None

    def restart(self, sig: str = "TERM", features: Features | None = None) -> KubeletClient:
        self.stop(sig)
        if features is not None:
            self.features = features
        return self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.dirs.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no plugin log)"
        return " | ".join(text[-lines:]) or "(empty plugin log)"
