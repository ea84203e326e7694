"""The conformance corpus: written in its documented layout, and read back through the reference
allocator with every expectation holding; a changed expectation is reported, bad directories refused."""

from __future__ import annotations

import json

import pytest
import yaml

from driver.cli import main
from driver.fleet.corpus import FORMAT_VERSION, check_scenario, read_corpus
from driver.personality.registry import PERSONALITIES


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus") / "c"
    assert main(["corpus", "export", str(out), "--profile", "demo", "--profile", "no-gpu"]) == 0
    return out


def test_layout_and_index(corpus):
    index = json.loads((corpus / "index.json").read_text())
    assert index["formatVersion"] == FORMAT_VERSION and index["kubernetes"] == "1.37"
    names = {s["name"] for s in index["scenarios"]} | {s["name"] for s in index["skipped"]}
    assert names == {f"{p}--{q}" for p in ("demo", "no-gpu") for q in PERSONALITIES}  # every bundled personality
    assert {"fake-dra", "nvidia", "sriov", "example"} <= set(PERSONALITIES)
    assert "formatVersion" in (corpus / "README.md").read_text() or "format version" in (corpus / "README.md").read_text()
    demo = corpus / "scenarios" / "demo--fake-dra"
    kinds = {d["kind"] for d in yaml.safe_load_all((demo / "objects.yaml").read_text())}
    assert kinds == {"DeviceClass", "Node", "ResourceSlice"}
    expected = yaml.safe_load((demo / "expected.yaml").read_text())
    claims = [c["metadata"]["name"] for c in yaml.safe_load_all((demo / "claims.yaml").read_text())]
    assert list(expected) == claims and any("allocation" in e for e in expected.values())


def test_every_scenario_reads_back_through_the_reference_allocator(corpus, capsys):
    _, scenarios = read_corpus(corpus)
    assert scenarios and all(check_scenario(s) == [] for s in scenarios)
    assert main(["corpus", "check", str(corpus)]) == 0


def test_a_changed_expectation_is_reported(corpus, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(corpus, copy)
    path = copy / "scenarios" / "demo--fake-dra" / "expected.yaml"
    expected = yaml.safe_load(path.read_text())
    first = next(iter(expected))
    expected[first] = {"unallocatable": "made up"}
    path.write_text(yaml.safe_dump(expected))
    assert main(["corpus", "check", str(copy)]) == 1
    assert f"demo--fake-dra: claim {first}: expected" in capsys.readouterr().out


def test_refuses_a_non_empty_directory_that_is_not_a_corpus(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["corpus", "export", str(tmp_path), "--profile", "demo"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["corpus", "export", str(tmp_path), "--profile", "demo", "--force"]) == 2
    assert "not a corpus" in capsys.readouterr().err and (tmp_path / "keep.txt").exists()
    assert main(["corpus", "export", str(tmp_path / "x"), "--profile", "nope"]) == 2
    assert "--profile 'nope': unknown" in capsys.readouterr().err
