"""Every rendered ResourceSlice validates against the official Kubernetes 1.37 strict schema.

`compatibilityGroups` is in the 1.37 schema (alpha field), so nothing is stripped before
validating. `valueFrom` / counter `requestPolicy` (KEP-5941) are not in 1.37, so those renders
are validated with DRASharedConsumableCapacity off; one test pins that the on-shape is rejected,
which shows the validator really is strict.
"""

from __future__ import annotations

import itertools

import kubernetes_validate
import pytest
from builders import T4, demo_like, gpu, nic
from conftest import validate_all

from driver.features import Features
from driver.model.inventory import Inventory
from driver.slices import render_pool, to_resource_slices

INVENTORIES = {
    "demo-like": demo_like(),
    "t4-vgpu": Inventory(gpus=(gpu(0, model=T4, mdev=("T4-4C", "T4-16C")),)),
    "big": Inventory(gpus=tuple(gpu(k, mdev=("A100-4C",)) for k in range(8)),
                     nics=tuple(nic(k, vfs=32, total=64) for k in range(2))),
    "nic-only": Inventory(nics=(nic(0, vfs=0), nic(1, vfs=4, speed=None))),
    "empty": Inventory(),
}


def test_validate_all_is_strict_about_each_item():
    with pytest.raises(kubernetes_validate.ValidationError, match="bogus"):
        validate_all([{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "x"},
                       "spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                                "nodeName": "n", "bogus": 1}}])


def test_compatibility_groups_are_in_the_137_schema():
    obj = to_resource_slices(render_pool(demo_like(), Features(shared_consumable_capacity=False),
                                         node_name="n1", driver_name="fake-dra.example.com"))
    assert any("compatibilityGroups" in str(o) for o in obj)
    validate_all(obj)


@pytest.mark.parametrize("name", sorted(INVENTORIES))
@pytest.mark.parametrize("gates", list(itertools.product([True, False], repeat=3)))
def test_rendered_slices_validate_strictly(name, gates):
    features = Features(partitionable_devices=gates[0], compatibility_groups=gates[1],
                        consumable_capacity=gates[2], shared_consumable_capacity=False)
    pool = render_pool(INVENTORIES[name], features, node_name="node-1", driver_name="fake-dra.example.com")
    validate_all(to_resource_slices(pool, generation=3))


def test_value_from_shape_is_not_in_the_137_schema():
    pool = render_pool(Inventory(nics=(nic(0),)), Features.all_on(), node_name="n1", driver_name="fake-dra.example.com")
    objects = to_resource_slices(pool)
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_all(objects)
