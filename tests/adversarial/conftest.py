"""Fixtures of the adversarial suite: real `fake-dra run` processes on a fake node, driven like the kubelet."""

from __future__ import annotations

import pytest

from adversarial.standin_api import StandInApi
from plugin.conftest import make_plugin, sysfs_template  # noqa: F401 (fixtures shared with tests/plugin)


@pytest.fixture
def api():
    server = StandInApi()
    yield server
    server.close()


@pytest.fixture(scope="session")
def demo_pool(sysfs_template):
    from driver.discovery import discover
    from driver.features import Features
    from driver.hardware import load_catalog
    from driver.slices import render_pool

    return render_pool(discover(sysfs_template, load_catalog()), Features.all_on(), node_name="n1",
                       driver_name="fake-dra.example.com")
