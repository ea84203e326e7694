"""Extended resources backed by DRA (KEP-5004) in `fake-dra schedule`: a container's
`<resource>: N` that a DeviceClass serves becomes a claim of the scheduler's own, named, shaped and
recorded as kube-scheduler's DRA plugin does (pkg/scheduler/framework/plugins/dynamicresources
createDeviceRequests); a node whose allocatable lists the resource serves it as a device plugin."""

from __future__ import annotations

from driver.schedule.extended import EXTENDED_CLAIM_ANNOTATION, IMPLICIT_PREFIX
from schedule.conftest import TOLERATE_KWOK, add

GPU = IMPLICIT_PREFIX + "gpu.fake-dra.example.com"  # every class answers to its implicit name


def ext_pod(name: str, *containers: dict, init: tuple[dict, ...] = ()) -> dict:
    spec = {"containers": [{"name": f"c{i}", "image": "x", **c} for i, c in enumerate(containers)],
            "tolerations": TOLERATE_KWOK}
    if init:
        spec["initContainers"] = [{"name": f"init{i}", "image": "x", **c} for i, c in enumerate(init)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def special_claims(store) -> list[dict]:
    return [c for c in store.list("resourceclaims", all_namespaces=True)
            if (c["metadata"].get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) == "true"]


def test_limits_alone_get_a_special_claim_owned_by_the_pod_and_recorded_in_its_status(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, ext_pod("p", {"resources": {"limits": {GPU: 2}}}))
    (outcome,) = schedule().outcomes
    assert outcome.node == "a100-0000"
    (claim,) = special_claims(store)
    assert claim["metadata"]["name"].startswith("p-extended-resources-") and claim["metadata"]["name"] == outcome.claims[0]
    pod = store.get("pods", "default", "p")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["spec"]["devices"]["requests"] == [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "gpu.fake-dra.example.com", "allocationMode": "ExactCount", "count": 2}}]
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-0", "gpu-1"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}]
    assert pod["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": claim["metadata"]["name"],
        "requestMappings": [{"containerName": "c0", "resourceName": GPU, "requestName": "container-0-request-0"}]}


def test_request_names_count_init_containers_and_every_sorted_request_name(store, fleet, schedule):
    """i: index in initContainers + containers; j: index among the container's sorted requests (cpu first)."""
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, ext_pod("p", {"resources": {"requests": {"cpu": "1", GPU: 1}}}, init=({"resources": {}},)))
    (outcome,) = schedule().outcomes
    assert outcome.node == "a100-0000", outcome.reason
    (claim,) = special_claims(store)
    assert [r["name"] for r in claim["spec"]["devices"]["requests"]] == ["container-1-request-1"]


def test_a_node_listing_the_resource_serves_it_as_a_device_plugin(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    node = store.get("nodes", None, "a100-0000")
    node["status"]["allocatable"][GPU] = "1"
    store.update("nodes", node)
    add(store, ext_pod("one", {"resources": {"limits": {GPU: 1}}}), ext_pod("two", {"resources": {"limits": {GPU: 1}}}))
    one, two = schedule().outcomes
    assert one.node == "a100-0000" and one.claims == [] and special_claims(store) == []
    assert two.node is None and f"Insufficient {GPU}" in two.reason


def test_an_extended_resource_no_class_serves_is_node_resources_fits(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, ext_pod("p", {"resources": {"limits": {"example.com/dongle": 1}}}))
    (outcome,) = schedule().outcomes
    assert outcome.node is None and "Insufficient example.com/dongle" in outcome.reason


def test_too_many_devices_stays_pending_without_writing_a_claim(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, ext_pod("p", {"resources": {"limits": {GPU: 9}}}))
    (outcome,) = schedule().outcomes
    assert outcome.node is None and "needs 9 device(s), 8 match the selectors" in outcome.reason
    assert special_claims(store) == []


def test_a_fractional_count_is_refused_with_the_pod_and_resource_named(store, fleet, schedule):
    fleet({"name": "a100", "count": 1, "profile": "dgx-a100"})
    add(store, ext_pod("p", {"resources": {"limits": {GPU: "500m"}}}))
    (outcome,) = schedule().outcomes
    assert outcome.node is None
    assert outcome.reason == f"Pod default/p: container c0: resources {GPU}: must be a whole number, got 500m"


def test_the_newest_class_naming_a_resource_wins_and_the_lower_name_at_equal_times() -> None:
    from driver.schedule.extended import class_for_resource

    def cls(name: str, created: str) -> dict:
        return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"extendedResourceName": "x.com/gpu"}}

    assert class_for_resource([cls("old", "2026-01-01T00:00:00Z"), cls("new", "2026-02-01T00:00:00Z")])["x.com/gpu"] == "new"
    assert class_for_resource([cls("b", "2026-01-01T00:00:00Z"), cls("a", "2026-01-01T00:00:00Z")])["x.com/gpu"] == "a"
    assert class_for_resource([cls("b", "2026-01-01T00:00:00Z")])[IMPLICIT_PREFIX + "b"] == "b"
