"""Fixtures of the adversarial suite: real `fake-dra run` processes on a fake node, driven like the kubelet."""

from __future__ import annotations

import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from adversarial.standin_api import StandInApi
from plugin.harness import Plugin


@pytest.fixture(scope="session")
def sysfs_template():
    from driver.discovery import make_sysfs

    root = Path(tempfile.mkdtemp(prefix="fda-sys-", dir="/tmp")) / "sys"
    make_sysfs("demo", root)
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture
def make_plugin(sysfs_template):
    """make_plugin(**Plugin kwargs); pass root=other.root for a second process on the same node."""
    plugins: list[Plugin] = []

    def make(**kw) -> Plugin:
        plugins.append(Plugin(sysfs_template, **kw))
        return plugins[-1]
    yield make
    for p in plugins:
        if p.proc is not None and p.proc.poll() is None:
            p.stop(signal.SIGKILL)
    for root in {p.root for p in plugins}:
        shutil.rmtree(root, ignore_errors=True)


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
