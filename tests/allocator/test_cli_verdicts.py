"""`fake-dra allocate` verdicts that are not selector mismatches: nothing to allocate, a node without slices."""

from __future__ import annotations

import yaml

from driver.cli import main

from .casefile import FIXTURES, expand_claim


def _claim(name, allocated=False):
    doc = expand_claim({"name": name, "requests": [{"name": "gpu", "class": "gpu.example.com"}]}, [])
    if allocated:
        doc["status"] = {"allocation": {"devices": {"results": []}}}
    return doc


def _write(tmp_path, name, docs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_node_without_slices_says_so(tmp_path, capsys):
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    claims = _write(tmp_path, "claims.yaml", [_claim("a")])
    assert main(["allocate", "--node-name", "node-9", fixtures, claims]) == 1
    err = capsys.readouterr().err
    assert "node node-9: no ResourceSlice publishes devices for this node (the slices are for node node-1)" in err
    assert "no device matches" not in err


def test_no_slices_at_all_says_so(tmp_path, capsys):
    claims = _write(tmp_path, "claims.yaml", [_claim("a")])
    assert main(["allocate", "--node-name", "node-1", claims]) == 1
    assert "the input has no ResourceSlice with devices" in capsys.readouterr().err


def test_no_claims_to_allocate_is_exit_2(tmp_path, capsys):
    fixtures = str(FIXTURES / "kep5963-mig-vgpu.yaml")
    assert main(["allocate", "--node-name", "node-1", fixtures]) == 2
    assert "no ResourceClaim; no claims to allocate" in capsys.readouterr().err
    done = _write(tmp_path, "done.yaml", [_claim("a", allocated=True)])
    assert main(["allocate", "--node-name", "node-1", fixtures, done]) == 2
    assert "every ResourceClaim already has status.allocation" in capsys.readouterr().err


def test_non_utf8_stdin_is_named(monkeypatch, capsys):
    import io
    import sys

    class Stdin:
        buffer = io.BytesIO(b"kind: ResourceClaim\nname: \xff\n")
    monkeypatch.setattr(sys, "stdin", Stdin())
    assert main(["allocate", "--node-name", "node-1", "-"]) == 2
    assert "standard input: not UTF-8 text (byte 0xff at offset 26)" in capsys.readouterr().err
