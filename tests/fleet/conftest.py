"""Fleet fixtures: fleet files as dicts, a local store target, and one apply call."""

from __future__ import annotations

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.features import Features
from driver.fleet.apply import apply_fleet
from driver.fleet.spec import API_VERSION, parse_fleet
from driver.fleet.targets import StoreFleetTarget
from driver.fleet.template import Templates
from driver.store import ObjectStore

DRIVER = DEFAULT_DRIVER_NAME


def fleet_doc(*groups: dict, name: str = "lab") -> dict:
    return {"apiVersion": API_VERSION, "kind": "Fleet", "metadata": {"name": name}, "spec": {"nodeGroups": list(groups)}}


def group(name: str, count: int, profile: str = "demo", **extra) -> dict:
    return {"name": name, "count": count, "profile": profile, **extra}


@pytest.fixture
def store(tmp_path):
    return ObjectStore(tmp_path / "store")


@pytest.fixture
def target(store):
    return StoreFleetTarget(store)


@pytest.fixture
def templates():
    with Templates(DRIVER) as t:
        yield t


@pytest.fixture
def apply(target, templates):
    def run(doc: dict, features: Features = Features(), **kw):
        return apply_fleet(target, parse_fleet(doc), driver_name=DRIVER, features=features, templates=templates, **kw)
    return run
