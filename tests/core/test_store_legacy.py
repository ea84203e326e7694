"""Stores of earlier releases (a directory of files) are imported once, announced; `fake-dra store`
exports and imports that layout (issue 25)."""

from __future__ import annotations

import json
import os

import pytest

from driver.cli import main
from driver.store import ObjectStore
from tests.storeutil import plant_file

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME, namespace: default}\nspec: {containers: [{name: c, image: i}]}\n"


def old_store(root):
    plant_file(root, "pods", "default", "p", POD.replace("NAME", "p"))
    plant_file(root, "resourceslices", None, "s", json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "s", "uid": "slice-uid", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"driver": "d.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
                                                                        "resourceSliceCount": 1}, "devices": []}}))
    plant_file(root, "pods", "default", ".q.yaml.123.tmp", "half written")
    (root / ".resourceVersion").write_text("500\n")


def test_an_old_store_is_imported_once_announced_and_kept_aside(tmp_path, caplog):
    old_store(tmp_path)
    store = ObjectStore(tmp_path)
    assert store.names("pods", "default") == ["p"]
    assert "importing the objects of its directory layout" in caplog.text and "imported 2 objects" in caplog.text
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(".imported-")]
    assert len(kept) == 1 and (kept[0] / "pods" / "default" / "p.yaml").is_file()
    assert not (kept[0] / "pods" / "default" / ".q.yaml.123.tmp").exists()  # issue 29 item 8: temp files go
    assert not (tmp_path / "pods").exists() and not (tmp_path / ".resourceVersion").exists()
    s = store.get("resourceslices", None, "s")
    assert s["metadata"]["uid"] == "slice-uid" and s["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert int(s["metadata"]["resourceVersion"]) > 500  # never a resourceVersion the old store handed out
    caplog.clear()
    assert ObjectStore(tmp_path).names("pods", "default") == ["p"] and "import" not in caplog.text


@pytest.mark.parametrize("content", ["spec: [\n", "- a list\n", "\xff", "apiVersion: v1\nkind: Pod\nmetadata: [1, 2]\n"],
                         ids=["bad-yaml", "a-list", "not-utf8", "metadata-a-list"])
def test_a_file_that_cannot_be_imported_is_named_and_kept(tmp_path, caplog, content):
    plant_file(tmp_path, "pods", "default", "good", POD.replace("NAME", "good"))
    plant_file(tmp_path, "pods", "default", "bad", content.encode("latin-1"))
    assert ObjectStore(tmp_path).names("pods", "default") == ["good"]
    kept = next(p for p in tmp_path.iterdir() if p.name.startswith(".imported-"))
    assert f"not imported: {kept}/pods/default/bad.yaml" in caplog.text
    assert (kept / "pods" / "default" / "bad.yaml").read_bytes() == content.encode("latin-1")


def test_links_in_an_old_store_are_never_followed(tmp_path, caplog):
    """Issue 29 item 7: `get -o yaml` printed /etc/shadow through a linked object file."""
    secret = tmp_path / "secret.yaml"
    secret.write_text(POD.replace("NAME", "secret"))
    root = tmp_path / "s"
    plant_file(root, "pods", "default", "ok", POD.replace("NAME", "ok"))
    (root / "pods" / "default" / "linked.yaml").symlink_to(secret)
    os.makedirs(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "x.yaml").write_text(POD.replace("NAME", "x").replace("default", "linkedns"))
    (root / "pods" / "linkedns").symlink_to(tmp_path / "elsewhere")
    assert ObjectStore(root).list("pods", all_namespaces=True)[0]["metadata"]["name"] == "ok"
    assert ObjectStore(root).count("pods") == 1
    assert "linked.yaml is a symbolic link" in caplog.text and "linkedns is a symbolic link" in caplog.text
    assert secret.read_text() == POD.replace("NAME", "secret") and (tmp_path / "elsewhere" / "x.yaml").exists()


def test_store_export_and_import_round_trip(tmp_path, capsys):
    old_store(tmp_path / "a")
    assert main(["store", "export", str(tmp_path / "out"), "--store", str(tmp_path / "a")]) == 0
    assert "exported 2 objects" in capsys.readouterr().out
    assert (tmp_path / "out" / "resourceslices" / "_cluster" / "s.yaml").read_text().startswith("{")
    assert main(["store", "import", str(tmp_path / "out"), "--store", str(tmp_path / "b")]) == 0
    assert ObjectStore(tmp_path / "b").get("pods", "default", "p")["spec"]["containers"][0]["image"] == "i"
    capsys.readouterr()
    assert (tmp_path / "out" / "pods").is_dir()  # an explicit import leaves its source alone
    assert main(["store", "status", "-o", "json", "--store", str(tmp_path / "b")]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["objects"] == {"pods": 1, "resourceslices": 1} and status["revision"] >= 2


@pytest.mark.parametrize("argv, message", [
    (["store", "export"], "store export: DIR is required"),
    (["store", "import", "/nonexistent-dir"], "store import: /nonexistent-dir is not a directory"),
    (["store", "status", "x"], "store status takes no DIR"),
])
def test_store_command_errors(tmp_path, capsys, argv, message):
    assert main([*argv, "--store", str(tmp_path / "s")]) == 2
    assert message in capsys.readouterr().err


def test_store_import_of_a_directory_without_objects_and_export_into_a_full_one(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["store", "import", str(tmp_path / "empty"), "--store", str(tmp_path / "s")]) == 2
    assert "holds no <resource>/<namespace>/<name>.yaml files" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert main(["store", "export", str(tmp_path / "full"), "--store", str(tmp_path / "s")]) == 2
    assert "exists and is not an empty directory" in capsys.readouterr().err


def test_an_import_with_refused_files_exits_1_and_imports_the_rest(tmp_path, capsys):
    plant_file(tmp_path / "src", "pods", "default", "good", POD.replace("NAME", "good"))
    plant_file(tmp_path / "src", "pods", "default", "bad", "spec: [\n")
    assert main(["store", "import", str(tmp_path / "src"), "--store", str(tmp_path / "s")]) == 1
    assert "imported 1 objects from" in capsys.readouterr().out
    assert ObjectStore(tmp_path / "s").names("pods", "default") == ["good"]
