"""driver.state.inspect: what `fake-dra describe` reads of a plugin's state, without touching it."""

from __future__ import annotations

import json

from driver.state.checkpoint import KIND, VERSION
from driver.state.inspect import inspect_claim, prepared_claims

D = "fake-dra.example.com"
UID = "0f3c2a44-1111-2222-3333-444455556666"


def _checkpoint(state, claims: dict) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "checkpoint.json").write_text(json.dumps(
        {"kind": KIND, "version": VERSION, "driver": D, "node": "n1", "bootID": "b1", "claims": claims}))


def _entry(state: str, boot: str = "b1") -> dict:
    return {"namespace": "default", "name": "gpu", "state": state, "bootID": boot,
            "devices": [{"requestNames": ["gpu"], "pool": "n1", "device": "gpu-0",
                         "cdiDeviceIDs": [f"k8s.{D}/device={UID}-gpu-0"]}]}


def test_a_started_preparation_is_not_prepared(tmp_path):
    boot = tmp_path / "boot_id"
    boot.write_text("b1\n")
    _checkpoint(tmp_path / "state", {UID: _entry("PrepareStarted")})
    view = inspect_claim(tmp_path / "state", tmp_path / "cdi", D, UID, str(boot))
    assert view.state == "PrepareStarted" and not view.prepared and not view.cdi_spec_exists
    assert view.devices[0].cdi_device_ids == (f"k8s.{D}/device={UID}-gpu-0",)
    claims, problem = prepared_claims(tmp_path / "state", D, str(boot))
    assert problem is None and [(c.ref.name, c.state, c.earlier_boot) for c in claims] == [("gpu", "PrepareStarted", False)]


def test_a_corrupt_checkpoint_is_reported_and_left_where_it_is(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "checkpoint.json").write_text("{not json")
    view = inspect_claim(state, tmp_path / "cdi", D, UID)
    assert view.problem and "checkpoint.json cannot be read" in view.problem and view.state is None
    assert (state / "checkpoint.json").read_text() == "{not json", "the plugin's file is not moved aside"
    assert prepared_claims(tmp_path / "nowhere", D)[1].startswith("no checkpoint at")
