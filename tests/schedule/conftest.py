"""A local store holding a fleet, DeviceClasses, claim templates and pods; `schedule` run on it."""

from __future__ import annotations

import pytest

from driver import DEFAULT_DRIVER_NAME
from driver.commands._local import seed_device_classes
from driver.e2e.manifests import device_classes
from driver.features import Features
from driver.fleet.apply import apply_fleet
from driver.fleet.spec import API_VERSION, parse_fleet
from driver.fleet.targets import StoreFleetTarget
from driver.fleet.template import Templates
from driver.schedule import Scheduler
from driver.store import ObjectStore

DRIVER = DEFAULT_DRIVER_NAME
TOLERATE_KWOK = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]


def mig_template(name: str = "mig-1g", profile: str = "1g.5gb", ns: str = "default") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": ns},
            "spec": {"metadata": {"labels": {"app": "bench"}}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "mig.fake-dra.example.com", "selectors": [{"cel": {
                    "expression": f'device.attributes["{DRIVER}"].profile == "{profile}"'}}]}}]}}}}


def vf_template(name: str = "vf") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "net", "exactly": {"deviceClassName": "vf.fake-dra.example.com"}}]}}}}


def pod(name: str, template: str | None = "mig-1g", *, claim: str | None = None, tolerate: bool = True, **spec) -> dict:
    entry = {"name": "gpu", "resourceClaimTemplateName": template} if claim is None else {"name": "gpu", "resourceClaimName": claim}
    body = {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [entry] if (template or claim) else [], **spec}
    if tolerate:
        body["tolerations"] = TOLERATE_KWOK
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": body}


@pytest.fixture
def store(tmp_path):
    store = ObjectStore(tmp_path / "store")
    seed_device_classes(store, device_classes(DRIVER))
    return store


@pytest.fixture
def fleet(store):
    def make(*groups: dict, features: Features = Features()):
        doc = {"apiVersion": API_VERSION, "kind": "Fleet", "metadata": {"name": "lab"}, "spec": {"nodeGroups": list(groups)}}
        with Templates(DRIVER) as templates:
            apply_fleet(StoreFleetTarget(store), parse_fleet(doc), driver_name=DRIVER, features=features, templates=templates)
    return make


@pytest.fixture
def schedule(store):
    def run(**kw):
        return Scheduler(store, features=kw.pop("features", Features()), **kw).run()
    return run


def add(store, *objs):
    kinds = {"Pod": "pods", "ResourceClaimTemplate": "resourceclaimtemplates", "ResourceClaim": "resourceclaims"}
    return [store.create(kinds[o["kind"]], o) for o in objs]
