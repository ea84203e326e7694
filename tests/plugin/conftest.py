"""Fixtures for the plugin integration tests (real process, real sockets)."""

from __future__ import annotations

import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from plugin.harness import Plugin


@pytest.fixture(scope="session")
def sysfs_template():
    from driver.discovery import make_sysfs

    root = Path(tempfile.mkdtemp(prefix="fdp-sys-", dir="/tmp")) / "sys"
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
    for root in {p.root for p in plugins}:  # processes may share one node root
        shutil.rmtree(root, ignore_errors=True)
