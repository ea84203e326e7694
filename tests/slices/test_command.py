"""`fake-dra slices` end to end on a fake sysfs tree: output formats and every error path."""

from __future__ import annotations

import json

import pytest
import yaml

from driver.cli import main
from driver.discovery import make_sysfs


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    make_sysfs("demo", root)
    return str(root)


def run(capsys, *argv):
    code = main(["slices", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_yaml_output_is_the_full_pool(capsys, demo_root):
    code, out, err = run(capsys, "--sysfs-root", demo_root, "--node-name", "node-a")
    assert code == 0, err
    assert "&id" not in out  # no YAML anchors
    docs = list(yaml.safe_load_all(out))
    assert [d["metadata"]["name"] for d in docs] == [f"0000{k}-fake-dra.example.com-node-a" for k in range(3)]
    assert {d["spec"]["pool"]["resourceSliceCount"] for d in docs} == {3}
    assert docs[2]["spec"]["devices"][-1]["name"] == "nic-0-vf-7"


def test_json_list_with_features_and_driver_name(capsys, demo_root):
    code, out, _ = run(capsys, "--sysfs-root", demo_root, "--node-name", "node-a", "-o", "json",
                       "--driver-name", "gpu.example.org", "--features", "DRAPartitionableDevices=false")
    assert code == 0
    doc = json.loads(out)
    assert doc["kind"] == "List" and len(doc["items"]) == 1
    spec = doc["items"][0]["spec"]
    assert spec["driver"] == "gpu.example.org" and doc["items"][0]["metadata"]["name"] == "00000-gpu.example.org-node-a"
    assert "sharedCounters" not in spec and len(spec["devices"]) == 10


def test_driver_config_slices_section_applies(capsys, demo_root, tmp_path):
    cfg = tmp_path / "driver.yaml"
    cfg.write_text("slices:\n  perGpu: {'1': 'vgpu:A100X-4C'}\n")
    code, out, _ = run(capsys, "--sysfs-root", demo_root, "--node-name", "n", "-o", "json", "--driver-config",
                       str(cfg), "--features", "DRADeviceCompatibilityGroups=false")
    assert code == 0
    names = [d["name"] for item in json.loads(out)["items"] for d in item["spec"].get("devices", [])]
    assert [n for n in names if n.startswith("gpu-1")] == ["gpu-1"] + [f"gpu-1-vgpu-a100x-4c-{k}" for k in range(10)]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--sysfs-root", "/nonexistent/sys", "--node-name", "n"], "--sysfs-root: /nonexistent/sys"),
        (["--features", "NoSuchGate=true", "--node-name", "n"], "unknown feature gate 'NoSuchGate'"),
        (["--node-name", "Bad_Node"], "--node-name: 'Bad_Node' is not a valid node name"),
    ],
)
def test_input_errors_exit_2(capsys, demo_root, args, needle):
    argv = args if "--sysfs-root" in args else ["--sysfs-root", demo_root, *args]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert needle in err


def test_missing_node_name_exits_2(capsys, demo_root, monkeypatch):
    monkeypatch.delenv("NODE_NAME", raising=False)
    monkeypatch.delenv("FAKE_DRA_NODE_NAME", raising=False)
    code, _, err = run(capsys, "--sysfs-root", demo_root, "--node-name", "")
    assert code == 2 and "--node-name is required" in err


@pytest.mark.parametrize(
    ("text", "needle"),
    [("slices: [1, 2]\n", "slices"), ("slices:\n  singleMode: bogus\n", "slices.singleMode: unknown mode"),
     ("slices: {perGpu: {'0': 'vgpu:A100-4C'}}\n", "slices.perGpu[0]"), (": : :\n", "driver.yaml")],
)
def test_bad_driver_config_exits_2_naming_the_problem(capsys, demo_root, tmp_path, text, needle):
    cfg = tmp_path / "driver.yaml"
    cfg.write_text(text)
    code, _, err = run(capsys, "--sysfs-root", demo_root, "--node-name", "n", "--driver-config", str(cfg),
                       "--features", "DRADeviceCompatibilityGroups=false")
    assert code == 2
    assert needle in err


def test_slice_names_are_the_ones_publish_writes(capsys, demo_root, tmp_path):
    from driver.cli import main
    from driver.store.objectstore import ObjectStore

    code, out, err = run(capsys, "--sysfs-root", demo_root, "--node-name", "node-a")
    assert code == 0, err
    previewed = [d["metadata"]["name"] for d in yaml.safe_load_all(out)]
    store = tmp_path / "store"
    assert main(["publish", "--once", "--sysfs-root", str(demo_root), "--node-name", "node-a",
                 "--store", str(store)]) == 0
    published = sorted(o["metadata"]["name"] for o in ObjectStore(store).list("resourceslices"))
    assert published == previewed
