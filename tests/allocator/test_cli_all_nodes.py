"""`fake-dra allocate --all-nodes` and `-o json`: one pod on every node, the output object, the refusals."""

from __future__ import annotations

import json

import yaml

from driver.cli import main

from .casefile import expand_claim, expand_slice

CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "ports"}, "spec": {}}


def cluster(tmp_path, held: bool = True) -> str:
    """Two nodes of one pool sharing a link counter of 10; port-1 (6) held through node-1."""
    docs = [CLASS] + [expand_slice(s) for s in (
        {"name": "counters", "pool": "fabric", "count": 4, "allNodes": True, "counters": {"link": {"bandwidth": 10}}},
        {"name": "n1", "pool": "fabric", "count": 4, "node": "node-1", "devices": [{"name": "port-1", "consumes": {"link": {"bandwidth": 6}}}]},
        {"name": "n2", "pool": "fabric", "count": 4, "node": "node-2", "devices": [{"name": "port-2", "consumes": {"link": {"bandwidth": 6}}}]},
        {"name": "n3", "pool": "fabric", "count": 4, "node": "node-3", "devices": [{"name": "port-3", "consumes": {"link": {"bandwidth": 3}}}]},
    )]
    if held:
        docs.append(expand_claim({"name": "held", "requests": [{"name": "r", "class": "ports"}],
                                  "allocated": [{"driver": "driver-a", "pool": "fabric", "device": "port-1"}]}, docs))
    path = tmp_path / "cluster.json"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")  # JSON documents, one per line
    return str(path)


def pod(tmp_path) -> str:
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(expand_claim({"name": "p", "requests": [{"name": "r", "class": "ports"}]}, [])))
    return str(path)


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_node_is_tried_and_the_object_says_where_the_pod_fits(tmp_path, capsys):
    code, out, err = run(["allocate", "--all-nodes", "-o", "json", cluster(tmp_path), pod(tmp_path)], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["claims"] == ["default/p"]
    assert result["feasibleNodes"] == ["node-3"]  # node-1: port-1 held; node-2: 4 of the link left
    assert [r["device"] for r in result["results"]["node-3"]["default/p"]["devices"]["results"]] == ["port-3"]
    assert set(result["reasons"]) == {"node-1", "node-2"}
    assert "in use" in result["reasons"]["node-1"]
    assert "counters exhausted on counter set link" in result["reasons"]["node-2"]
    assert result["filterMs"] >= 0 and result["readMs"] > 0


def test_without_o_json_the_same_object_is_yaml(tmp_path, capsys):
    code, out, _ = run(["allocate", "--all-nodes", cluster(tmp_path, held=False), pod(tmp_path)], capsys)
    assert code == 0
    assert yaml.safe_load(out)["feasibleNodes"] == ["node-1", "node-2", "node-3"]


def test_no_feasible_node_is_exit_1_with_a_reason_per_node(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(expand_claim({"name": "big", "requests": [{"name": "r", "class": "ports", "count": 2}]}, [])))
    code, out, err = run(["allocate", "--all-nodes", "-o", "json", cluster(tmp_path), str(path)], capsys)
    assert code == 1
    assert json.loads(out)["feasibleNodes"] == [] and len(json.loads(out)["reasons"]) == 3
    assert "the pod fits on none of the 3 nodes" in err


def test_refusals_are_exit_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NODE_NAME", raising=False)
    code, _, err = run(["allocate", "--all-nodes", "--node-name", "node-1", cluster(tmp_path), pod(tmp_path)], capsys)
    assert code == 2 and "--all-nodes tries every node: drop --node-name" in err
    code, _, err = run(["allocate", "--all-nodes", "--sequential", cluster(tmp_path), pod(tmp_path)], capsys)
    assert code == 2 and "--sequential (several pods) needs --node-name" in err
    nodeless = tmp_path / "nodeless.yaml"
    nodeless.write_text(yaml.safe_dump_all([CLASS, expand_slice({"name": "s", "allNodes": True, "devices": [{"name": "d"}]})]))
    code, _, err = run(["allocate", "--all-nodes", str(nodeless), pod(tmp_path)], capsys)
    assert code == 2 and "no node to try" in err
    assert len(err.strip().splitlines()) == 1


def test_one_node_with_o_json_prints_a_list(tmp_path, capsys):
    code, out, err = run(["allocate", "--node-name", "node-3", "-o", "json", cluster(tmp_path), pod(tmp_path)], capsys)
    assert code == 0, err
    listed = json.loads(out)
    assert listed["kind"] == "List"
    assert [i["status"]["allocation"]["devices"]["results"][0]["device"] for i in listed["items"]] == ["port-3"]


def test_slices_with_kep5941_fields_and_no_gate_given_allocate_and_say_so(tmp_path, capsys):
    from .casefile import FIXTURES

    claim = tmp_path / "vf.yaml"
    claim.write_text(yaml.safe_dump(expand_claim({"name": "my-vf-claim", "requests": [{"name": "vf-request", "class": "sriov-vfs",
                                                  "capacity": {"resource-driver.example.com/bandwidth": "10G"}}]}, [])))
    fixture = str(FIXTURES / "kep5941-text.yaml")
    code, out, err = run(["allocate", "--node-name", "my-node", fixture, str(claim)], capsys)
    assert code == 0, err
    assert "note: the slices use KEP-5941 fields" in err
    assert yaml.safe_load(out)["status"]["allocation"]["devices"]["results"][0]["consumedCounters"] == [
        {"counterSet": "pf-0-counter-set", "counters": {"bandwidth": {"value": "10G"}}}]
    code, _, err = run(["allocate", "--node-name", "my-node", "--features", "DRASharedConsumableCapacity=false",
                        fixture, str(claim)], capsys)
    assert code == 1 and "note:" not in err and "which the device does not have" in err
