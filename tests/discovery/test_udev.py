"""The pyudev hotplug watcher loop (with an injected monitor) and the /sys-only guard."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

from driver.discovery.udev import HotplugEvent, HotplugWatcher, udev_usable
from waiting import GENEROUS_S


@dataclass
class FakeDevice:
    action: str
    subsystem: str
    sys_name: str


class FakeMonitor:
    def __init__(self, events: list[FakeDevice]) -> None:
        self.events = queue.Queue()
        for e in events:
            self.events.put(e)

    def poll(self, timeout: float | None = None) -> FakeDevice | None:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None


def test_watcher_reports_watched_subsystems_only_and_survives_callback_errors() -> None:
    seen: list[HotplugEvent] = []
    done = threading.Event()

    def on_event(event: HotplugEvent) -> None:
        seen.append(event)
        if event.name == "0000:0c:00.2":
            raise RuntimeError("callback bug")  # must not stop the loop
        if event.name == "ens3f0v0":
            done.set()

    monitor = FakeMonitor([
        FakeDevice("add", "pci", "0000:0c:00.2"),
        FakeDevice("add", "usb", "1-1"),
        FakeDevice("add", "net", "ens3f0v0"),
    ])
    watcher = HotplugWatcher(on_event, monitor=monitor, poll_interval_s=0.01)
    watcher.start()
    assert done.wait(GENEROUS_S)
    watcher.stop()
    assert seen == [HotplugEvent("add", "pci", "0000:0c:00.2"), HotplugEvent("add", "net", "ens3f0v0")]


def test_watcher_stops_when_the_monitor_breaks(caplog) -> None:
    class Broken:
        def poll(self, timeout=None):
            raise OSError("netlink closed")

    watcher = HotplugWatcher(lambda e: None, monitor=Broken(), poll_interval_s=0.01)
    watcher.start()
    assert watcher._thread is not None
    watcher._thread.join(GENEROUS_S)  # ends on its own after the monitor error
    assert not watcher._thread.is_alive()
    watcher.stop()
    assert any("hotplug watching stopped" in r.getMessage() for r in caplog.records)


def test_udev_only_for_the_host_sys(tmp_path) -> None:
    assert udev_usable(tmp_path) is False


def test_udev_enumeration_matches_the_sysfs_walk_on_this_host() -> None:
    import os

    import pytest

    from driver.discovery.udev import udev_pci_addresses

    if not udev_usable("/sys"):
        pytest.skip("no usable udev on this host")
    assert udev_pci_addresses() == sorted(os.listdir("/sys/bus/pci/devices"))
