"""Every health transition is logged once, with the devices and the message; steady states are quiet."""

from __future__ import annotations

import logging

from driver.discovery import set_fault
from driver.state.health import HealthModel


def _lines(caplog):
    out = [(r.levelname, r.getMessage(), getattr(r, "devices", None), getattr(r, "reason", None))
           for r in caplog.records if r.name == "fake-dra.health"]
    caplog.clear()
    return out


def test_transitions_are_logged_once_with_devices_and_message(sysfs, demo_pool, caplog):
    caplog.set_level(logging.INFO, logger="fake-dra.health")
    state = {"fail": False}

    def devices():
        if state["fail"]:
            raise RuntimeError("sysfs root vanished")
        return demo_pool.name, demo_pool.devices()

    model = HealthModel(sysfs, devices, "fake-dra.example.com")
    model.snapshot()
    assert _lines(caplog) == []  # healthy from the start is not news

    set_fault(sysfs, "0000:0c:00.0", "link down")
    model.snapshot()
    ((level, message, names, reason),) = _lines(caplog)
    assert (level, message, reason) == ("WARNING", "devices unhealthy", "0000:0c:00.0: link down")
    assert "nic-0-vf-0" in names and not any(n.startswith("gpu-") for n in names)
    model.snapshot()
    assert _lines(caplog) == []  # still unhealthy: nothing new

    set_fault(sysfs, "0000:0c:00.0", None)
    model.snapshot()
    ((level, message, healed, _),) = _lines(caplog)
    assert (level, message) == ("INFO", "devices healthy again") and healed == names

    state["fail"] = True
    model.snapshot()
    ((level, message, unknown, reason),) = _lines(caplog)
    assert (level, message) == ("WARNING", "device health unknown") and "sysfs root vanished" in reason
    assert set(unknown) == set(demo_pool.devices())
