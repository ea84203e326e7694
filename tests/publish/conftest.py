"""Fixtures: the kube-apiserver STAND-IN (tests/publish/standin.py) and backends pointed at it."""

from __future__ import annotations

import pytest

from driver.kube.slices import kube_backend
from driver.publish import store_backend
from driver.store.objectstore import ObjectStore
from publish.standin import StandInServer


@pytest.fixture
def server():
    with StandInServer() as srv:
        srv.state.add_node("node-1")
        yield srv


@pytest.fixture
def api(server):
    return kube_backend(host=server.url)


@pytest.fixture
def store(tmp_path):
    return ObjectStore(tmp_path / "store")


@pytest.fixture
def local(store):
    return store_backend(store)
