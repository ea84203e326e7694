"""The API-server target against the project's kube-apiserver STAND-IN (tests/publish/standin.py), over
real HTTP through the kubernetes client: the requests a kube-apiserver would get, rate limited, retried
on 429/5xx, and an error naming the object on any other 4xx."""

from __future__ import annotations

import pytest

from driver.features import Features
from driver.fleet.apply import apply_fleet, delete_fleet
from driver.fleet.spec import parse_fleet
from driver.kube.fleet import kube_fleet_target
from driver.kube.rawapi import KubeApiError
from driver.kube.throttle import TokenBucket
from fleet.conftest import DRIVER, fleet_doc, group
from publish.standin import StandInServer


@pytest.fixture
def server():
    with StandInServer() as srv:
        yield srv


@pytest.fixture
def kube(server):
    return kube_fleet_target(host=server.url, qps=1000, burst=1000)


def run(kube, templates, doc, **kw):
    return apply_fleet(kube, parse_fleet(doc), driver_name=DRIVER, features=Features(), templates=templates, **kw)


def test_apply_creates_nodes_then_owned_slices_and_a_second_apply_writes_nothing(server, kube, templates):
    stats = run(kube, templates, fleet_doc(group("a", 2, "dgx-a100")))
    assert (stats.nodes_created, stats.slices_created) == (2, 12)
    st = server.state
    posts = [r[1] for r in st.writes() if r[0] == "POST"]
    assert posts[0] == "/api/v1/nodes" and posts[1] == "/apis/resource.k8s.io/v1/resourceslices"
    for s in st.slices.values():
        node = st.nodes[s["spec"]["nodeName"]]
        assert s["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    assert st.nodes["a-0000"]["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    seen = len(st.requests)
    again = run(kube, templates, fleet_doc(group("a", 2, "dgx-a100")))
    assert again.writes == 0
    assert [(r[0], r[1]) for r in st.requests[seen:]] == [  # the lists, nothing else: Nodes, each fleet driver's slices
        ("GET", "/api/v1/nodes"), *[("GET", "/apis/resource.k8s.io/v1/resourceslices")] * 4]
    assert [r[2] for r in st.requests[-4:]] == [
        f"fieldSelector=spec.driver%3D{d}&limit=500"
        for d in (DRIVER, "gpu.nvidia.com", "sriovnetwork.k8snetworkplumbingwg.io", "gpu.example.com")]


def test_status_is_kwoks_and_never_compared(server, kube, templates):
    run(kube, templates, fleet_doc(group("a", 1)))
    server.state.nodes["a-0000"]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]  # kwok's heartbeat
    assert run(kube, templates, fleet_doc(group("a", 1))).writes == 0
    server.state.nodes["a-0000"]["metadata"]["labels"]["type"] = "real"
    assert run(kube, templates, fleet_doc(group("a", 1))).nodes_updated == 1
    assert server.state.nodes["a-0000"]["status"]["conditions"]  # the PUT left status alone


def test_removal_and_delete(server, kube, templates):
    run(kube, templates, fleet_doc(group("a", 3)))
    stats = run(kube, templates, fleet_doc(group("a", 1)))
    assert stats.nodes_deleted == 2 and sorted(server.state.nodes) == ["a-0000"]
    deletes = [r[1] for r in server.state.writes() if r[0] == "DELETE"]
    assert deletes.index("/api/v1/nodes/a-0001") > max(i for i, p in enumerate(deletes) if p.endswith("-a-0001"))
    delete_fleet(kube, "lab", driver_name=DRIVER)
    assert server.state.nodes == {} and server.state.slices == {}


def test_429_and_5xx_are_retried_honouring_retry_after(server, templates):
    pauses: list[float] = []
    kube = kube_fleet_target(host=server.url, qps=1000, burst=1000)
    kube.api.sleep = pauses.append
    # Every request's retries are the project's (urllib3's are off); the writes get the faults here.
    server.inject_failures([(429, 2), (503, None), (500, None)], method="POST")
    stats = run(kube, templates, fleet_doc(group("a", 1)))
    assert stats.nodes_created == 1 and stats.slices_created == 3 and kube.api.retries == 3
    assert pauses[0] >= 2.0  # Retry-After: 2
    assert len(server.state.slices) == 3 and len(server.state.nodes) == 1


def test_other_4xx_fails_at_once_naming_the_object(server, kube, templates, monkeypatch):
    import driver.fleet.nodes as nodes

    real = nodes.node_object
    monkeypatch.setattr(nodes, "node_object", lambda *a: {**real(*a), "metadata": {**real(*a)["metadata"], "name": "Bad_Name"}})
    import driver.fleet.apply as apply_mod
    monkeypatch.setattr(apply_mod, "node_object", nodes.node_object)
    with pytest.raises(KubeApiError, match="create node Bad_Name: .*HTTP 422"):
        run(kube, templates, fleet_doc(group("a", 1)))


def test_conflicts_restart_from_a_fresh_read(server, kube, templates):
    run(kube, templates, fleet_doc(group("a", 1, "dgx-a100")))
    name = sorted(server.state.slices)[-1]  # a device slice (counter slices come first)
    server.state.external_edit(name, lambda o: o["spec"]["devices"].pop())
    server.inject_conflicts(1)
    stats = run(kube, templates, fleet_doc(group("a", 1, "dgx-a100")))
    assert stats.conflicts == 1 and stats.slices_updated == 1
    assert run(kube, templates, fleet_doc(group("a", 1, "dgx-a100"))).writes == 0


def test_the_token_bucket_paces_requests():
    now = [0.0]
    slept: list[float] = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    bucket = TokenBucket(10, 5, clock=lambda: now[0], sleep=sleep)
    for _ in range(25):
        bucket.take()
    assert len(slept) == 20  # the first 5 went at once
    assert now[0] == pytest.approx(2.0)  # 25 requests at 10/s with 5 saved up


def test_the_command_against_an_api_server(server, tmp_path, capsys):
    """`fake-dra fleet apply --kubeconfig`: gates detected by dry-run probes, Nodes and slices created
    through the API, and a second apply that only lists."""
    import json

    import yaml

    from driver.cli import main

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": server.url}}],
        "users": [{"name": "standin", "user": {}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "standin"}}]}))
    path = tmp_path / "lab.yaml"
    path.write_text(json.dumps(fleet_doc(group("a", 2))))
    server.state.apiserver_gates["DRADeviceCompatibilityGroups"] = False  # the probes find it off
    assert main(["fleet", "apply", "-f", str(path), "--kubeconfig", str(kubeconfig), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["target"], out["nodesCreated"]) == ("apiserver", 2)
    assert "DRADeviceCompatibilityGroups=false" in out["features"]
    assert sorted(server.state.nodes) == ["a-0000", "a-0001"]
    assert not any("compatibilityGroups" in json.dumps(s) for s in server.state.slices.values())
    assert main(["fleet", "apply", "-f", str(path), "--kubeconfig", str(kubeconfig), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["writes"] == 0
    assert main(["fleet", "delete", "-f", str(path), "--kubeconfig", str(kubeconfig)]) == 0
    assert server.state.nodes == {} and server.state.slices == {}
