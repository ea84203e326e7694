"""driver.kube raw client against the kube-apiserver STAND-IN (tests/publish/standin.py): errors, paging, raw fields."""

from __future__ import annotations

import pytest

from driver.errors import ConfigError, ConflictError, NotFoundError
from driver.kube.rawapi import KubeApiError, RawApi, api_client_for_host, load_api_client
from driver.kube.slices import KubeSliceBackend, kube_backend
from publish.standin import StandInServer


@pytest.fixture
def server():
    with StandInServer() as srv:
        yield srv


def slice_obj(name, node="n1", driver="d.example.com", **spec):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     **spec}}


def test_alpha_fields_survive_a_round_trip(server):
    be = kube_backend(host=server.url)
    dev = {"name": "d0", "consumesCounters": [{"counterSet": "s", "counters": {"c": {"value": "1"}},
                                               "compatibilityGroups": ["mig"]}],
           "futureAlphaField": {"x": 1}}  # unknown to the typed client models
    be.create_slice(slice_obj("a", devices=[dev]))
    got = be.list_slices("d.example.com", "n1")[0]["spec"]["devices"][0]
    assert got["consumesCounters"][0]["compatibilityGroups"] == ["mig"]
    assert got["futureAlphaField"] == {"x": 1}


def test_error_mapping(server):
    be = kube_backend(host=server.url)
    be.create_slice(slice_obj("a"))
    with pytest.raises(ConflictError, match="already exists"):
        be.create_slice(slice_obj("a"))
    with pytest.raises(NotFoundError, match="not found"):
        be.update_slice(slice_obj("missing"))
    stale = slice_obj("a")
    stale["metadata"]["resourceVersion"] = "1"
    with pytest.raises(ConflictError, match="modified"):
        be.update_slice(stale)
    no_node = slice_obj("b")
    del no_node["spec"]["nodeName"]
    with pytest.raises(KubeApiError, match="HTTP 422.*exactly one of nodeName") as info:
        be.create_slice(no_node)
    assert info.value.status == 422
    with pytest.raises(ConflictError, match="Precondition failed: uid"):
        be.delete_slice("a", uid="wrong")
    be.delete_slice("a")
    with pytest.raises(NotFoundError):
        be.delete_slice("a")


def test_list_filters_by_driver_and_node_and_pages(server):
    be = KubeSliceBackend(RawApi(api_client_for_host(server.url)), page_size=2)
    for i in range(5):
        be.create_slice(slice_obj(f"s{i}"))
    be.create_slice(slice_obj("other-node", node="n2"))
    be.create_slice(slice_obj("other-driver", driver="x.example.com"))
    got = be.list_slices("d.example.com", "n1")
    assert [o["metadata"]["name"] for o in got] == [f"s{i}" for i in range(5)]
    lists = [r for r in server.state.requests if r[0] == "GET"]
    assert len(lists) == 3  # 5 items at 2 per page
    assert all("fieldSelector=spec.driver%3Dd.example.com%2Cspec.nodeName%3Dn1" in r[2] for r in lists)


def test_dry_run_does_not_persist(server):
    be = kube_backend(host=server.url)
    out = be.dry_run_create_slice(slice_obj("probe"))
    assert out["metadata"]["name"] == "probe" and not server.state.slices
    assert "dryRun=All" in server.state.requests[-1][2]


def test_node_uid_and_claims(server):
    be = kube_backend(host=server.url)
    uid = server.state.add_node("n1")
    assert be.node_uid("n1") == uid and be.node_uid("n2") is None
    server.state.claims.append({"metadata": {"name": "c"}, "status": {"allocation": {"devices": {"results": [
        {"driver": "d.example.com", "pool": "n1", "device": "gpu-0"}, {"driver": "d.example.com", "pool": "n2", "device": "gpu-1"}]}}}})
    assert be.allocated_devices("d.example.com", "n1") == {"gpu-0"}


def test_unreachable_server_is_a_clear_error():
    be = kube_backend(host="http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(KubeApiError, match="GET /apis/resource.k8s.io/v1/resourceslices") as info:
        be.list_slices("d", "n")
    assert info.value.status == 0


def test_kubeconfig_file_is_used(server, tmp_path):
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server.url}"}}}}]
users: [{{name: u, user: {{token: secret-token}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    be = kube_backend(str(kc))
    assert be.list_slices("d", "n") == []
    assert server.state.authorization[-1] == "Bearer secret-token"  # the kubeconfig's credentials were sent


def test_bad_kubeconfig_names_the_file(tmp_path):
    kc = tmp_path / "broken"
    kc.write_text("not: [a kubeconfig")
    with pytest.raises(ConfigError, match=f"--kubeconfig {kc}"):
        load_api_client(str(kc))
    with pytest.raises(ConfigError, match="in-cluster config"):
        load_api_client(None)


def test_non_json_answer(server):
    api = RawApi(api_client_for_host(server.url))
    with pytest.raises(KubeApiError, match="not JSON"):
        api.request("GET", "/metrics")
