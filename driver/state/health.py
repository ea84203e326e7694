"""Device health model: the full device list with HEALTHY / UNHEALTHY / UNKNOWN and a message.

Fault convention (shared with driver.discovery's fake sysfs trees): a file
`<sysfs-root>/bus/pci/devices/<BDF>/fake-dra-fault` marks the PCI function <BDF> unhealthy; its
first line (trimmed, at most 1024 characters as the kubelet allows) is the message. A device is
unhealthy when any PCI address it carries (`pciBusID`, `parentPciBusID`, `pfPciBusID`, the standard
`resource.kubernetes.io/pciBusID`, the SR-IOV driver's `pciAddress`/`pfPciAddress`) has a fault,
so a fault on a GPU also marks its MIG/vGPU/time-shared devices, and a fault on a PF its VFs.
Devices seen earlier that disappeared from the inventory, and every device when discovery fails,
are reported UNKNOWN so the kubelet learns about them before its lease runs out.
`fake-dra fault` writes and clears these files.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.discovery import FAULT_FILE
from driver.discovery.sysfs import BDF
from driver.errors import InputError
from driver.model.deviceattrs import attr
from driver.state.types import DeviceHealthStatus

log = logging.getLogger("fake-dra.health")
MAX_MESSAGE = 1024
# fake-dra's own attributes, then the standard one and the SR-IOV driver's (other personalities).
_ADDRESS_ATTRS = ("pciBusID", "parentPciBusID", "pfPciBusID", "resource.kubernetes.io/pciBusID", "pciAddress",
                  "pfPciAddress")


def check_bdf(value: str) -> str:
    if not isinstance(value, str) or not BDF.fullmatch(value):
        raise InputError(f"invalid PCI address {value!r}: expected DDDD:BB:DD.F in lower-case hex")
    return value


def fault_path(sysfs_root: str | Path, bdf: str) -> Path:
    return Path(sysfs_root) / "bus" / "pci" / "devices" / check_bdf(bdf) / FAULT_FILE


def read_fault(sysfs_root: str | Path, bdf: str) -> str | None:
    """The fault message for a PCI function, or None when it is healthy."""
    try:
        text = fault_path(sysfs_root, bdf).read_text(errors="replace")
    except (FileNotFoundError, NotADirectoryError, InputError):
        return None
    except OSError as exc:
        return f"cannot read fault file: {exc}"
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return (line or "fault injected")[:MAX_MESSAGE]


class HealthModel:
    """Computes the device list; `devices` yields (pool name, {device name: device dict})."""

    def __init__(self, sysfs_root: str | Path, devices: Callable[[], tuple[str, dict[str, dict[str, Any]]]],
                 driver_name: str, clock: Callable[[], float] = time.time) -> None:
        self.sysfs_root = Path(sysfs_root)
        self._devices = devices
        self._driver = driver_name
        self._clock = clock
        self._seen: dict[tuple[str, str], None] = {}
        self._last: dict[tuple[str, str], tuple[str, str]] = {}  # device -> (status, message) logged
        self._log_lock = threading.Lock()

    def snapshot(self) -> list[DeviceHealthStatus]:
        out = self._compute()
        with self._log_lock:
            self._log_transitions(out)
        return out

    def _log_transitions(self, statuses: list[DeviceHealthStatus]) -> None:
        """One log line per (new status, message): a GPU fault turns its partitions unhealthy with
        the same message, and a failed discovery turns everything unknown; list them, do not flood.
        Devices first seen healthy are not news."""
        changed: dict[tuple[str, str], list[str]] = {}
        for st in statuses:
            key, now = (st.pool, st.device), (st.health, st.message)
            before = self._last.get(key)
            self._last[key] = now
            if before == now or (before is None and st.health == "HEALTHY"):
                continue
            changed.setdefault(now, []).append(st.device)
        for (health, message), names in sorted(changed.items()):
            if health == "HEALTHY":
                log.info("devices healthy again", extra={"devices": names})
            elif health == "UNHEALTHY":
                log.warning("devices unhealthy", extra={"devices": names, "reason": message})
            else:
                log.warning("device health unknown", extra={"devices": names, "reason": message})

    def _compute(self) -> list[DeviceHealthStatus]:
        now = int(self._clock())
        try:
            pool, devices = self._devices()
        except Exception as exc:  # noqa: BLE001 - any discovery failure means "unknown", not a crash
            msg = f"device discovery failed: {exc}"[:MAX_MESSAGE]
            return [DeviceHealthStatus(p, d, "UNKNOWN", now, msg) for p, d in self._seen]
        out: list[DeviceHealthStatus] = []
        faults: dict[str, str | None] = {}
        current = set()
        for name, dev in sorted(devices.items()):
            current.add((pool, name))
            self._seen[(pool, name)] = None
            message = None
            for key in _ADDRESS_ATTRS:
                bdf = attr(dev, key, self._driver)
                if isinstance(bdf, str):
                    if bdf not in faults:
                        faults[bdf] = read_fault(self.sysfs_root, bdf)
                    if faults[bdf]:
                        message = f"{bdf}: {faults[bdf]}"[:MAX_MESSAGE]
                        break
            out.append(DeviceHealthStatus(pool, name, "UNHEALTHY" if message else "HEALTHY", now, message or ""))
        for p, d in self._seen:
            if (p, d) not in current:
                out.append(DeviceHealthStatus(p, d, "UNKNOWN", now, "device is no longer discovered on this node"))
        return out
