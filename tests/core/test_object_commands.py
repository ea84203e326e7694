"""`fake-dra apply/get/delete` on the local store: kubectl's output, exit codes and --allocate."""

from __future__ import annotations

import io
import json
import sys
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from driver.cli import main
from driver.commands._local import seed_device_classes
from driver.personality.fakedra.classes import device_classes
from driver.commands._objects import human_duration, render_table
from driver.discovery import make_sysfs
from driver.store import ObjectStore
from driver.store.kinds import resolve


def claim(name: str, cls: str = "mig", selector: str | None = None, count: int = 1) -> str:
    sel = f"\n        selectors:\n        - cel:\n            expression: '{selector}'" if selector else ""
    return (f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: {name}\nspec:\n  devices:\n"
            f"    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: {cls}.fake-dra.example.com\n"
            f"        count: {count}{sel}\n")


PROFILE = 'device.attributes["fake-dra.example.com"].profile == "{}"'


@pytest.fixture()
def node(tmp_path):
    """A store holding the demo node's slices (published like `run` does) and the DeviceClasses."""
    make_sysfs("demo", tmp_path / "sys")
    store = tmp_path / "store"
    assert main(["publish", "--once", "--sysfs-root", str(tmp_path / "sys"), "--node-name", "node-1",
                 "--store", str(store)]) == 0
    seed_device_classes(ObjectStore(store), device_classes("fake-dra.example.com"))
    return store


def cli(capsys, *argv, stdin: str | None = None):
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(list(argv))
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return code, out, err


def test_apply_get_delete_round_trip(tmp_path, capsys):
    store = str(tmp_path / "s")
    (tmp_path / "c.yaml").write_text(claim("a") + "---\n" + claim("b"))
    code, out, _ = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", store)
    assert code == 0 and out.splitlines() == ["resourceclaim.resource.k8s.io/a created",
                                              "resourceclaim.resource.k8s.io/b created"]
    code, out, _ = cli(capsys, "get", "resourceclaims", "--store", store)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["NAME", "STATE", "AGE"]
    assert [line.split()[:2] for line in lines[1:]] == [["a", "pending"], ["b", "pending"]]
    code, out, _ = cli(capsys, "get", "ResourceClaim", "a", "-o", "yaml", "--store", store)
    obj = yaml.safe_load(out)
    assert obj["kind"] == "ResourceClaim" and obj["metadata"]["name"] == "a" and obj["metadata"]["uid"]
    code, out, _ = cli(capsys, "get", "resourceclaims.resource.k8s.io", "-o", "json", "--store", store)
    listed = json.loads(out)
    assert listed["kind"] == "List" and [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    code, out, _ = cli(capsys, "get", "resourceclaim", "-o", "name", "--store", store)
    assert out.splitlines() == ["resourceclaim.resource.k8s.io/a", "resourceclaim.resource.k8s.io/b"]
    code, out, _ = cli(capsys, "delete", "resourceclaim", "a", "--store", store)
    assert code == 0 and out == 'resourceclaim.resource.k8s.io "a" deleted\n'
    code, _, err = cli(capsys, "delete", "resourceclaim", "a", "b", "--store", store)
    assert code == 1 and 'resourceclaims.resource.k8s.io "a" not found in namespace "default"' in err
    code, _, err = cli(capsys, "get", "resourceclaims", "--store", store)
    assert code == 0 and err.strip() == "No resources found in default namespace."
    assert cli(capsys, "delete", "resourceclaim", "a", "--ignore-not-found", "--store", store)[0] == 0


def test_get_missing_name_is_not_found(tmp_path, capsys):
    code, _, err = cli(capsys, "get", "deviceclass", "nope", "--store", str(tmp_path))
    assert code == 1 and 'deviceclasses.resource.k8s.io "nope" not found' in err
    code, _, err = cli(capsys, "get", "rc", "--store", str(tmp_path))
    assert code == 2 and 'doesn\'t have a resource type "rc"' in err


def test_apply_from_stdin_and_namespaces(tmp_path, capsys):
    store = str(tmp_path / "s")
    code, out, _ = cli(capsys, "apply", "-f", "-", "-n", "team", "--store", store, stdin=claim("x"))
    assert code == 0 and "resourceclaim.resource.k8s.io/x created" in out
    code, out, err = cli(capsys, "get", "resourceclaims", "--store", store)
    assert "No resources found in default namespace." in err
    code, out, _ = cli(capsys, "get", "resourceclaims", "-A", "--store", store)
    assert out.splitlines()[0].split() == ["NAMESPACE", "NAME", "STATE", "AGE"] and out.splitlines()[1].startswith("team")
    code, _, err = cli(capsys, "apply", "-f", "-", "--store", store, stdin="")
    assert code == 2 and "no objects found" in err


def test_apply_file_errors(tmp_path, capsys):
    store = tmp_path / "s"
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "missing.yaml"), "--store", str(store))
    assert code == 2 and "missing.yaml: cannot read" in err
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "latin1.yaml"), "--store", str(store))
    assert code == 2 and "latin1.yaml: not UTF-8 text" in err
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path), "--store", str(store))
    assert code == 2 and "latin1.yaml: not UTF-8 text" in err, "a directory is read file by file, as kubectl does"
    (tmp_path / "file").write_text("")
    (tmp_path / "c.yaml").write_text(claim("a"))
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", str(tmp_path / "file"))
    assert code == 2 and "--store " in err and "is not a directory" in err
    assert not store.exists()


def test_apply_allocate_one_pod(node, tmp_path, capsys):
    (tmp_path / "pod.yaml").write_text(claim("train", selector=PROFILE.format("3g.20gb")) + "---\n"
                                       + claim("vf", cls="vf"))
    code, out, err = cli(capsys, "apply", "-f", str(tmp_path / "pod.yaml"), "--allocate", "--store", str(node))
    assert code == 0, err
    assert out.splitlines() == [
        "resourceclaim.resource.k8s.io/train created",
        "resourceclaim.resource.k8s.io/train allocated on node-1: gpu=gpu-0-mig-3g20gb-0",
        "resourceclaim.resource.k8s.io/vf created",
        "resourceclaim.resource.k8s.io/vf allocated on node-1: gpu=nic-0-vf-0",
    ]
    stored = ObjectStore(node).get("resourceclaims", "default", "train")
    assert stored["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0-mig-3g20gb-0"
    code, out, _ = cli(capsys, "get", "resourceclaims", "-o", "wide", "--store", str(node))
    assert [line.split()[:2] + line.split()[3:] for line in out.splitlines()[1:]] == [
        ["train", "allocated", "gpu-0-mig-3g20gb-0"], ["vf", "allocated", "nic-0-vf-0"]]
    # Already allocated claims are in use for the next apply: the other 3g.20gb placement is next.
    (tmp_path / "next.yaml").write_text(claim("train2", selector=PROFILE.format("3g.20gb")))
    code, out, _ = cli(capsys, "apply", "-f", str(tmp_path / "next.yaml"), "--allocate", "--store", str(node))
    assert "gpu=gpu-0-mig-3g20gb-4" in out or "gpu=gpu-1-mig-3g20gb-0" in out


def test_apply_allocate_failure_writes_nothing(node, tmp_path, capsys):
    # Three whole GPUs on a two-GPU node: the claims of one apply are one pod, all or nothing.
    docs = "---\n".join(claim(f"whole-{i}", cls="gpu") for i in range(3))
    (tmp_path / "pod.yaml").write_text(docs)
    code, out, err = cli(capsys, "apply", "-f", str(tmp_path / "pod.yaml"), "--allocate", "--store", str(node))
    assert code == 1 and out == ""
    assert "cannot be allocated" in err and "nothing was applied" in err
    assert ObjectStore(node).list("resourceclaims") == []


def test_apply_allocate_needs_a_node(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(claim("a"))
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--store", str(tmp_path / "s"))
    assert code == 2 and "holds no ResourceSlices of any node" in err and "fake-dra run" in err
    assert ObjectStore(tmp_path / "s").list("resourceclaims") == []


def test_apply_allocate_node_choice(node, tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(claim("a"))
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--node-name", "node-9",
                       "--store", str(node))
    assert code == 2 and "--node-name node-9: no ResourceSlices of that node" in err and "node-1" in err
    other = ObjectStore(node).get("resourceslices", None, ObjectStore(node).list("resourceslices")[0]["metadata"]["name"])
    other["metadata"] = {"name": "node-2-slice"}
    other["spec"]["nodeName"] = "node-2"
    other["spec"]["pool"]["name"] = "node-2"
    ObjectStore(node).create("resourceslices", other)
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--store", str(node))
    assert code == 2 and "several nodes (node-1, node-2); choose one with --node-name" in err


def test_apply_allocate_skips_allocated_claims(node, tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(claim("a"))
    assert cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--store", str(node))[0] == 0
    code, out, err = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--store", str(node))
    assert code == 0 and out == "resourceclaim.resource.k8s.io/a unchanged\n"
    assert "already allocated" in err


def test_delete_from_file_and_usage_errors(tmp_path, capsys):
    store = str(tmp_path / "s")
    (tmp_path / "c.yaml").write_text(claim("a") + "---\n" + claim("b"))
    cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", store)
    code, out, _ = cli(capsys, "delete", "-f", str(tmp_path / "c.yaml"), "--store", store)
    assert code == 0 and out.count("deleted") == 2
    code, _, err = cli(capsys, "delete", "resourceclaims", "--store", store)
    assert code == 2 and "NAME: which resourceclaims to delete?" in err
    code, _, err = cli(capsys, "delete", "--store", store)
    assert code == 2 and "KIND and NAME are required" in err
    code, _, err = cli(capsys, "delete", "resourceclaim", "x", "-f", str(tmp_path / "c.yaml"), "--store", store)
    assert code == 2 and "not both" in err


def test_get_several_kinds_and_wide_slices(node, capsys):
    code, out, _ = cli(capsys, "get", "deviceclasses,resourceslices", "--store", str(node))
    assert code == 0
    assert "deviceclass.resource.k8s.io/gpu.fake-dra.example.com" in out
    assert "resourceslice.resource.k8s.io/" in out
    code, out, _ = cli(capsys, "get", "resourceslices", "-o", "wide", "--store", str(node))
    header = out.splitlines()[0].split()
    assert header == ["NAME", "NODE", "DRIVER", "POOL", "AGE", "GEN", "DEVICES", "COUNTERS"]
    assert len(out.splitlines()) == 1 + 3, "one line per slice: kubectl never wraps a cell"
    assert sum(int(line.split()[6]) for line in out.splitlines()[1:]) == 94


def test_tables_never_wrap_when_piped_and_keep_tokens(node, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = cli(capsys, "get", "deviceclasses", "-o", "wide", "--store", str(node))
    lines = out.splitlines()
    assert len(lines) == 1 + 6, "one line per class, however long its selectors (as kubectl prints them)"
    assert all(line.split()[0].endswith(".fake-dra.example.com") for line in lines[1:])
    assert 'device.attributes["fake-dra.example.com"].type' in out, "selector tokens are never cut"


def test_human_duration_like_kubectl():
    cases = {0: "0s", 59: "59s", 119: "119s", 120: "2m", 125: "2m5s", 600: "10m", 3 * 3600 - 1: "179m",
             3 * 3600: "3h", 3 * 3600 + 60: "3h1m", 8 * 3600: "8h", 47 * 3600: "47h", 49 * 3600: "2d1h",
             9 * 86400: "9d", 3 * 365 * 86400 + 86400: "3y1d", 9 * 365 * 86400: "9y"}
    assert {s: human_duration(s) for s in cases} == cases
    assert human_duration(-1) == "0s" and human_duration(-5) == "<invalid>"


def test_claim_state_column():
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    stamp = (now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    objs = [
        {"metadata": {"name": "p", "creationTimestamp": stamp}},
        {"metadata": {"name": "a", "creationTimestamp": stamp}, "status": {"allocation": {"devices": {}}}},
        {"metadata": {"name": "r"}, "status": {"allocation": {"x": 1}, "reservedFor": [{"name": "pod"}]}},
        {"metadata": {"name": "d", "deletionTimestamp": stamp}},
    ]
    rows = [line.split() for line in render_table(resolve("resourceclaims"), objs, now=now).splitlines()[1:]]
    assert rows == [["p", "pending", "30s"], ["a", "allocated", "30s"], ["r", "allocated,reserved", "<unknown>"],
                    ["d", "deleted", "<unknown>"]]


def test_unwritable_store_is_named(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(claim("a"))
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", "/proc")
    assert code == 2 and "--store /proc: cannot write" in err and "Traceback" not in err


def test_apply_output_formats(tmp_path, capsys):
    store = str(tmp_path / "s")
    (tmp_path / "c.yaml").write_text(claim("a") + "---\n" + claim("b"))
    code, out, _ = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "-o", "name", "--store", store)
    assert code == 0 and out.splitlines() == ["resourceclaim.resource.k8s.io/a", "resourceclaim.resource.k8s.io/b"]
    code, out, _ = cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "-o", "json", "--store", store)
    listed = json.loads(out)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"] and all(i["metadata"]["uid"] for i in listed["items"])
    # What `get -o yaml` prints can be applied again (a v1 List), unchanged.
    code, out, _ = cli(capsys, "get", "resourceclaims", "-o", "yaml", "--store", store)
    code, out, err = cli(capsys, "apply", "-f", "-", "--store", store, stdin=out)
    assert code == 0, err
    assert out.splitlines() == ["resourceclaim.resource.k8s.io/a unchanged", "resourceclaim.resource.k8s.io/b unchanged"]


def test_apply_allocate_searches_the_claims_of_one_apply_together(node, tmp_path, capsys):
    # Alone, the 4g.20gb would land on gpu-0 first and the whole gpu-0 could not follow; as one pod
    # (one search, like kube-scheduler) the allocator backtracks and puts the partition on gpu-1.
    whole = claim("whole-gpu-0", cls="gpu", selector='device.attributes["fake-dra.example.com"].pciBusID == "0000:07:00.0"')
    (tmp_path / "pod.yaml").write_text(claim("part", selector=PROFILE.format("4g.20gb")) + "---\n" + whole)
    code, out, err = cli(capsys, "apply", "-f", str(tmp_path / "pod.yaml"), "--allocate", "--store", str(node))
    assert code == 0, err
    assert "resourceclaim.resource.k8s.io/part allocated on node-1: gpu=gpu-1-mig-4g20gb-0" in out
    assert "resourceclaim.resource.k8s.io/whole-gpu-0 allocated on node-1: gpu=gpu-0" in out


def test_seeded_device_classes_are_logged_as_a_list_not_a_quoted_string(tmp_path, caplog):
    # Text logs print a list as a,b (docs/cli.md); JSON logs get an array. A pre-joined "a, b"
    # string was quoted in text and a single string in JSON.
    from driver.logs import TextFormatter

    with caplog.at_level("INFO", logger="fake-dra.run"):
        seed_device_classes(ObjectStore(tmp_path / "store"), device_classes("fake-dra.example.com"))
    (record,) = [r for r in caplog.records if "device classes applied" in r.getMessage()]
    assert isinstance(record.classes, list) and "nic.fake-dra.example.com" in record.classes
    line = TextFormatter().format(record)
    assert "classes=gpu.fake-dra.example.com,mig.fake-dra.example.com," in line and '"' not in line
