"""driver.e2e.control: the e2e harness binds with `fake-dra schedule`'s Scheduler and cleans up with
`fake-dra cluster`'s controllers, not rules of its own (issue 26). On a fleet, without a plugin."""

from __future__ import annotations

import pytest

from driver.e2e.control import remove_pod, schedule_once, settle, store_pod
from driver.e2e.manifests import NAMESPACE
from driver.errors import InputError, NotFoundError
from driver.features import Features
from driver.fleet.nodes import KWOK_TAINT
from schedule.conftest import fleet, store  # noqa: F401 - fixtures

TOLERATE = [{"key": KWOK_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]
SETTLE_S = 120.0  # generous: the machine is shared
MIG = 'device.attributes["fake-dra.example.com"].profile == "{}"'


def _claim(name: str, profile: str = "1g.5gb") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "mig.fake-dra.example.com", "selectors": [{"cel": {"expression": MIG.format(profile)}}]}}]}}}


def test_a_pod_is_bound_by_the_scheduler_and_released_by_the_controllers(store, fleet):  # noqa: F811
    fleet({"name": "a100", "count": 2, "profile": "dgx-a100"})
    store.create("resourceclaims", _claim("c"))
    uid = store_pod(store, "p", ["c"], TOLERATE)
    node, reason = schedule_once(store, Features(), "p")
    assert (node, reason) == ("a100-0000", "")  # the first node in name order
    claim = store.get("resourceclaims", NAMESPACE, "c")
    assert claim["status"]["allocation"] and claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p", "uid": uid}]
    remove_pod(store, "p")
    settle(store, SETTLE_S)
    assert "allocation" not in (store.get("resourceclaims", NAMESPACE, "c").get("status") or {})


def test_a_pod_that_fits_nowhere_gets_the_schedulers_reason_and_is_not_kept(store, fleet):  # noqa: F811
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    store.create("resourceclaims", _claim("nowhere", profile="9g.99gb"))  # no A100 has such a partition
    store_pod(store, "p", ["nowhere"], TOLERATE)
    node, reason = schedule_once(store, Features(), "p")
    assert node is None and reason.startswith("0/1 nodes are available: 1 ")
    assert "claim fake-dra-e2e/nowhere: cannot be allocated" in reason and "no device matches the selectors" in reason
    with pytest.raises(NotFoundError):
        store.get("pods", NAMESPACE, "p")  # tried once: no later run binds it


def test_a_deleted_node_takes_its_slices_pods_and_reservations_with_it(store, fleet):  # noqa: F811
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    store.create("resourceclaims", _claim("c"))
    store_pod(store, "p", ["c"], TOLERATE)
    assert schedule_once(store, Features(), "p")[0] == "a100-0000"
    store.delete("nodes", None, "a100-0000")
    settle(store, SETTLE_S)
    assert store.list("pods", NAMESPACE) == [] and store.list("resourceslices") == []
    assert "allocation" not in (store.get("resourceclaims", NAMESPACE, "c").get("status") or {})


def test_settle_says_when_the_controllers_do_not_settle_in_time(store, fleet):  # noqa: F811
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "slow", "namespace": NAMESPACE,
                        "annotations": {"pod-ready.stage.kwok.x-k8s.io/delay": "1h"}},
           "spec": {"nodeName": "a100-0000", "tolerations": TOLERATE, "containers": [{"name": "c", "image": "x"}]}}
    store.create("pods", pod)  # kwok's pod-ready stage waits an hour: work is queued, never done
    with pytest.raises(InputError, match=r"did not settle within 1 s \(1 object\(s\) still queued\)"):
        settle(store, 1.0)
