"""ResourceClaim status.devices writes: the API sink against the kube-apiserver STAND-IN, the store sink
against a real local store — both held to the same contract (driver.state.claimstatus.DeviceStatusSink)."""

from __future__ import annotations

import copy

import pytest

from driver.errors import ConflictError, FakeDraError, ForbiddenError, InputError, NotFoundError
from driver.kube.claimstatus import KubeClaimStatus
from driver.kube.rawapi import RawApi, api_client_for_host
from driver.state.types import ClaimRef
from driver.store.claimstatus import StoreClaimStatus
from driver.store.objectstore import ObjectStore
from publish.standin import StandInServer

DRIVER = "fake-dra.example.com"
OTHER = "net.example.com"
CLAIM = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c1", "namespace": "default", "uid": "uid-1"},
    "status": {"allocation": {"devices": {"results": [
        {"request": "vf", "driver": DRIVER, "pool": "n1", "device": "nic-0-vf-0"},
        {"request": "vf", "driver": DRIVER, "pool": "n1", "device": "nic-0-vf-1"},
        {"request": "other", "driver": OTHER, "pool": "n1", "device": "eth-0"},
    ]}}},
}
REF = ClaimRef("default", "c1", "uid-1")


def entry(device: str, driver: str = DRIVER, mac: str = "0e:42:00:00:00:01") -> dict:
    return {"driver": driver, "pool": "n1", "device": device,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared", "message": "m",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "networkData": {"interfaceName": "ens3f0v0", "hardwareAddress": mac}}


class _Api:
    """The stand-in API server with one claim, and a KubeClaimStatus pointed at it."""

    def __init__(self, srv: StandInServer) -> None:
        self.srv = srv
        srv.state.claims.append(copy.deepcopy(CLAIM))
        self.sink = KubeClaimStatus(RawApi(api_client_for_host(srv.url), timeout_s=5))

    def devices(self) -> list[dict]:
        return self.srv.state.claims[0]["status"].get("devices") or []

    def other_driver_writes(self, entries: list[dict]) -> None:
        """Another driver applies its own entries (its own field manager)."""
        KubeClaimStatus(RawApi(api_client_for_host(self.srv.url))).apply_device_status(REF, OTHER, entries)


class _Store:
    def __init__(self, root) -> None:
        self.store = ObjectStore(root)
        self.store.create("resourceclaims", copy.deepcopy(CLAIM))
        self.sink = StoreClaimStatus(self.store)

    def devices(self) -> list[dict]:
        return self.store.get("resourceclaims", "default", "c1")["status"].get("devices") or []

    def other_driver_writes(self, entries: list[dict]) -> None:
        StoreClaimStatus(self.store).apply_device_status(REF, OTHER, entries)


@pytest.fixture(params=["api", "store"])
def backend(request, tmp_path):
    if request.param == "api":
        with StandInServer() as srv:
            yield _Api(srv)
    else:
        yield _Store(tmp_path / "store")


def test_apply_sets_replaces_and_clears_only_this_drivers_entries(backend):
    backend.other_driver_writes([entry("eth-0", OTHER)])
    backend.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-0"), entry("nic-0-vf-1")])
    assert sorted((e["driver"], e["device"]) for e in backend.devices()) == [
        (DRIVER, "nic-0-vf-0"), (DRIVER, "nic-0-vf-1"), (OTHER, "eth-0")]

    # A second apply is the complete set of this driver's entries: vf-1 goes, vf-0 changes.
    backend.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-0", mac="0e:42:00:00:00:99")])
    mine = [e for e in backend.devices() if e["driver"] == DRIVER]
    assert [e["device"] for e in mine] == ["nic-0-vf-0"]
    assert mine[0]["networkData"]["hardwareAddress"] == "0e:42:00:00:00:99"

    backend.sink.apply_device_status(REF, DRIVER, [])
    assert [(e["driver"], e["device"]) for e in backend.devices()] == [(OTHER, "eth-0")], \
        "clearing leaves the other driver's entry alone"


def test_missing_claim_is_not_found(backend):
    with pytest.raises(NotFoundError):
        backend.sink.apply_device_status(ClaimRef("default", "gone", "uid-9"), DRIVER, [])


def test_recreated_claim_with_another_uid_is_a_conflict(backend):
    with pytest.raises(ConflictError):
        backend.sink.apply_device_status(ClaimRef("default", "c1", "uid-old"), DRIVER, [entry("nic-0-vf-0")])
    assert backend.devices() == []


def test_entry_for_a_device_not_allocated_is_rejected(backend):
    with pytest.raises(FakeDraError, match=r"status\.devices\[0\]"):
        backend.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-7")])
    assert backend.devices() == []


def test_api_request_is_a_forced_server_side_apply_of_the_status_subresource():
    with StandInServer() as srv:
        api = _Api(srv)
        api.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-0")])
        method, path, query = srv.state.requests[-1]
        assert (method, path) == ("PATCH", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1/status")
        assert f"fieldManager={DRIVER}" in query and "force=true" in query
        assert srv.state.content_types[-1] == "application/apply-patch+yaml"


def test_api_403_is_forbidden_error():
    with StandInServer() as srv:
        api = _Api(srv)
        srv.state.forbid_status = True
        with pytest.raises(ForbiddenError, match="requires extra permission"):
            api.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-0")])


def test_store_retries_when_another_writer_gets_in_between(tmp_path):
    st = _Store(tmp_path / "store")
    real_update = st.store.update
    raced = []

    def racing_update(resource, obj, **kw):
        if not raced:  # someone else updates the claim between our read and our write
            raced.append(True)
            other = st.store.get("resourceclaims", "default", "c1")
            other["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "p-uid"}]
            real_update(resource, other)
        return real_update(resource, obj, **kw)

    st.store.update = racing_update
    st.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-0")])
    claim = st.store.get("resourceclaims", "default", "c1")
    assert claim["status"]["reservedFor"][0]["name"] == "p", "the other writer's change survives"
    assert [e["device"] for e in claim["status"]["devices"]] == ["nic-0-vf-0"]


def test_store_gives_up_after_repeated_races(tmp_path):
    st = _Store(tmp_path / "store")
    st.sink.attempts = 2

    def always_stale(resource, obj, **kw):
        raise ConflictError("resourceclaims c1: resourceVersion is stale")

    st.store.update = always_stale
    with pytest.raises(ConflictError):
        st.sink.apply_device_status(REF, DRIVER, [entry("nic-0-vf-0")])


def test_store_rejects_an_entry_of_another_driver(tmp_path):
    st = _Store(tmp_path / "store")
    with pytest.raises(InputError, match="not a device allocated to the claim by this driver"):
        st.sink.apply_device_status(REF, DRIVER, [entry("eth-0", OTHER)])


def test_the_store_refuses_an_entry_kube_apiserver_would_refuse(tmp_path):
    """The store stands in for kube-apiserver: a status write that fails the 1.37 schema is not kept."""
    backend = _Store(tmp_path / "store")
    bad = entry("nic-0-vf-0")
    bad["networkData"]["macAddress"] = bad["networkData"].pop("hardwareAddress")
    with pytest.raises(InputError, match=r'resourceclaim default/c1: status.devices\[0\].networkData.macAddress: '
                                         r'unknown field "macAddress"'):
        backend.sink.apply_device_status(REF, DRIVER, [bad])
    assert backend.devices() == []
