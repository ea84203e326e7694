"""`fake-dra allocate`: exit codes, multi-document input, output shape (validated against the 1.37 schema)."""

from __future__ import annotations

import io
import sys

import kubernetes_validate
import pytest
import yaml

from driver.cli import main

from .casefile import FIXTURES, expand_claim, load_fixture


def claim(name, selector=None, **extra):
    req = {"name": "gpu", "class": "gpu.example.com"}
    if selector:
        req["selectors"] = [f"device.attributes['gpu.example.com'].type == '{selector}'"]
    req.update(extra)
    return expand_claim({"name": name, "requests": [req]}, [])


def write(tmp_path, name, docs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_all_allocated_exit_0_and_output_is_schema_valid(tmp_path, capsys):
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    claims = write(tmp_path, "claims.yaml", [claim("a", "mig-1g"), claim("b", "mig-1g")])
    code, out, err = run(["allocate", "--node-name", "node-1", fixtures, claims], capsys)
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [d["metadata"]["name"] for d in docs] == ["a", "b"]
    assert [d["status"]["allocation"]["devices"]["results"][0]["device"] for d in docs] == ["gpu-0-mig-1g-0", "gpu-0-mig-1g-1"]
    for doc in docs:
        kubernetes_validate.validate(doc, "1.37", strict=True)


def test_sequential_unallocatable_exit_1_prints_earlier_claims_and_reason(tmp_path, capsys):
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    claims = write(tmp_path, "claims.yaml", [claim("a", "mig-1g"), claim("b", "vgpu"), claim("c", "mig-1g")])
    code, out, err = run(["allocate", "--node-name", "node-1", "--sequential", fixtures, claims], capsys)
    assert code == 1
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["a"]
    assert "claim default/b" in err and "groups incompatible on counter set gpu-0-counters" in err


def test_one_pod_by_default_is_all_or_nothing(tmp_path, capsys):
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    claims = write(tmp_path, "claims.yaml", [claim("a", "mig-1g"), claim("b", "vgpu")])
    code, out, err = run(["allocate", "--node-name", "node-1", fixtures, claims], capsys)
    assert code == 1 and out == ""
    assert "groups incompatible on counter set gpu-0-counters" in err


def test_one_pod_backtracks_into_earlier_claims(tmp_path, capsys):
    # Alone, `any` would take the first device (a MIG one) and a vGPU claim after it could not fit;
    # as one pod the search revises `any` to a vGPU device so both fit.
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    claims = write(tmp_path, "claims.yaml", [claim("any"), claim("v", "vgpu")])
    code, out, err = run(["allocate", "--node-name", "node-1", fixtures, claims], capsys)
    assert code == 0, err
    devices = [d["status"]["allocation"]["devices"]["results"][0]["device"] for d in yaml.safe_load_all(out)]
    assert devices == ["gpu-0-vgpu-0", "gpu-0-vgpu-1"]
    code, out, err = run(["allocate", "--node-name", "node-1", "--sequential", fixtures, claims], capsys)
    assert code == 1 and [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["any"]


def test_gate_flag_changes_the_outcome(tmp_path, capsys):
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    claims = write(tmp_path, "claims.yaml", [claim("a")])
    code, _, err = run(["allocate", "--node-name", "node-1", "--features", "DRADeviceCompatibilityGroups=false", fixtures, claims], capsys)
    assert code == 1 and "incomplete" in err


def test_allocated_claims_in_input_are_in_use_and_not_printed(tmp_path, capsys):
    running = claim("running")
    running["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1-pool", "device": "gpu-0-mig-1g-0"}]}}}
    docs = load_fixture("kep5963-mig-vgpu") + [running, claim("new", "mig-1g"), {"kind": "ConfigMap", "metadata": {"name": "x"}}]
    code, out, err = run(["allocate", "--node-name", "node-1", write(tmp_path, "all.yaml", docs)], capsys)
    assert code == 0
    (doc,) = yaml.safe_load_all(out)
    assert doc["metadata"]["name"] == "new"
    assert doc["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0-mig-1g-1"
    assert "warning: ignoring ConfigMap x" in err


def test_stdin(tmp_path, capsys, monkeypatch):
    docs = load_fixture("kep5963-mig-vgpu") + [claim("a")]
    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump_all(docs)))
    code, out, _ = run(["allocate", "--node-name", "node-1", "-"], capsys)
    assert code == 0 and "gpu-0-mig-1g-0" in out


@pytest.mark.parametrize(
    "content,args,message",
    [
        ("a: [", [], "invalid YAML"),
        ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec: {}\n", [],
         "ResourceClaim default/c: spec.devices: required"),
        ("kind: ResourceClaim\nmetadata: {name: c}\nspec: {}\n", [],
         "bad.yaml: document 1 (ResourceClaim c): apiVersion: required (a ResourceClaim is resource.k8s.io/v1)"),
        ("- just\n- a list\n", [], "expected a mapping"),
        ("kind: DeviceClass\nmetadata: {name: c}\n", ["--features", "NoSuchGate=true"], "unknown feature gate"),
        ("kind: DeviceClass\nmetadata: {name: c}\n", ["--budget", "0"], "--budget: must be a positive integer"),
    ],
)
def test_invalid_input_exit_2(tmp_path, capsys, content, args, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    code, out, err = run(["allocate", "--node-name", "n", *args, str(path)], capsys)
    assert code == 2
    assert message in err and out == ""


def test_missing_file_exit_2(tmp_path, capsys):
    code, _, err = run(["allocate", "--node-name", "n", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and "cannot read" in err
