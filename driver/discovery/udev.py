"""pyudev on real hosts: enumerate PCI functions and watch hotplug events (the only pyudev importer).

libudev always reads the real /sys, so it can only *trigger* work: the inventory itself is always read
by driver.discovery.sysfs under the configured root (which also works on fake trees). The watcher tells
the publisher "something changed, re-discover" when a GPU/NIC appears or disappears or VFs are created.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("fake-dra.discovery")

WATCHED_SUBSYSTEMS = ("pci", "net")


@dataclass(frozen=True)
class HotplugEvent:
    action: str  # "add", "remove", "change", "bind", "unbind", ...
    subsystem: str
    name: str  # sys_name: a PCI address or an interface name


class _Monitor(Protocol):
    def poll(self, timeout: float | None = None) -> Any: ...


def udev_usable(root: str | Path) -> bool:
    """True when `root` is the host's /sys and pyudev can open a udev context there."""
    if Path(root).resolve() != Path("/sys").resolve():
        return False
    try:
        import pyudev

        pyudev.Context()
    except Exception as exc:  # noqa: BLE001 - missing libudev shows up as several exception types
        log.info("udev unavailable", extra={"error": str(exc)})
        return False
    return True


def udev_pci_addresses() -> list[str]:
    """PCI addresses libudev knows (host /sys only), sorted; used to cross-check sysfs discovery."""
    import pyudev

    return sorted(d.sys_name for d in pyudev.Context().list_devices(subsystem="pci"))


def _netlink_monitor(subsystems: tuple[str, ...]) -> _Monitor:
    import pyudev

    monitor = pyudev.Monitor.from_netlink(pyudev.Context())
    for subsystem in subsystems:
        monitor.filter_by(subsystem)
    monitor.start()
    return monitor


class HotplugWatcher:
    """Background thread calling `on_event` for each udev event of the watched subsystems.

    `monitor` is injectable (anything with `poll(timeout)` returning an object with action, subsystem,
    sys_name, or None on timeout) so the loop is tested without netlink.
    """

    def __init__(
        self,
        on_event: Callable[[HotplugEvent], None],
        *,
        subsystems: tuple[str, ...] = WATCHED_SUBSYSTEMS,
        monitor: _Monitor | None = None,
        poll_interval_s: float = 0.5,
    ) -> None:
        self._on_event = on_event
        self._subsystems = subsystems
        self._monitor = monitor
        self._interval = poll_interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._monitor is None:
            self._monitor = _netlink_monitor(self._subsystems)
        self._thread = threading.Thread(target=self._loop, name="fake-dra-udev", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        assert self._monitor is not None
        while not self._stop.is_set():
            try:
                device = self._monitor.poll(timeout=self._interval)
            except Exception:  # noqa: BLE001 - a broken monitor must not kill the driver silently
                log.exception("udev monitor failed; hotplug watching stopped")
                return
            if device is None:
                continue
            event = HotplugEvent(str(device.action), str(device.subsystem), str(device.sys_name))
            if event.subsystem not in self._subsystems:
                continue
            try:
                self._on_event(event)
            except Exception:  # noqa: BLE001 - keep watching after a failing callback
                log.exception("hotplug callback failed", extra={"event": event.action, "device": event.name})
