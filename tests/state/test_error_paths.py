"""State-layer error paths: bad spec and checkpoint records, writes after release, a linked metadata root, bad evidence."""

from __future__ import annotations

import json
import logging
import shutil
import uuid

import pytest

from driver.state.cdi import CdiWriter
from driver.state.metadata import HOST_SUBDIR, DeviceMetadataWriter, read_evidence
from driver.state.types import PreparedDevice
from state.conftest import DRIVER, NODE, result


def _errors(caplog) -> list[str]:
    """The `error` field of every warning logged (the state layer puts the reason there)."""
    return [r.error for r in caplog.records if r.levelno >= logging.WARNING and hasattr(r, "error")]


# -- CDI spec evidence: bootID -------------------------------------------------------------------

def test_a_cdi_spec_with_a_non_string_boot_id_is_skipped_as_evidence(env, caplog):
    good = env.claims.add("good", [result("gpu-0")])
    bad = env.claims.add("bad", [result("gpu-1")])
    st = env.state()
    assert st.prepare([good, bad])[bad.uid].error == ""
    st.close()
    cdi = CdiWriter(env.cdi_root, DRIVER)
    path = cdi.spec_path(bad.uid)
    spec = json.loads(path.read_text())
    key = f"{DRIVER}/prepared"
    data = json.loads(spec["annotations"][key])
    data["bootID"] = 12345
    spec["annotations"][key] = json.dumps(data)
    path.write_text(json.dumps(spec))

    caplog.set_level(logging.WARNING)
    records = cdi.read_prepared()
    assert [r.ref.uid for r in records] == [good.uid], "the other claim's spec is still evidence"
    assert "bootID must be a string" in _errors(caplog)
    assert path.exists(), "the unreadable spec is skipped, not deleted"


# -- checkpoint records: config ------------------------------------------------------------------

def test_prepared_device_config_must_be_a_string():
    record = {"requestNames": ["r"], "pool": NODE, "device": "gpu-0", "cdiDeviceIDs": ["x"]}
    assert PreparedDevice.from_json({**record, "config": "{}"}).config == "{}"
    with pytest.raises(ValueError, match=r"^device gpu-0: config must be a string$"):
        PreparedDevice.from_json({**record, "config": {"a": 1}})


def test_a_checkpoint_record_with_a_non_string_config_is_corrupt(env, caplog):
    env.state().close()  # creates the directories
    env.states.clear()
    record = {"requestNames": ["r"], "pool": NODE, "device": "gpu-0", "cdiDeviceIDs": ["x"], "config": ["not", "a", "string"]}
    doc = {"kind": "FakeDraCheckpoint", "version": 1, "driver": DRIVER, "node": NODE, "bootID": env.boot_id,
           "claims": {"old-uid": {"namespace": "default", "name": "old", "state": "PrepareCompleted",
                                  "bootID": env.boot_id, "devices": [record]}}}
    (env.state_dir / "checkpoint.json").write_text(json.dumps(doc))
    caplog.set_level(logging.WARNING)
    st = env.state()
    assert "is corrupt" in caplog.text and "device gpu-0: config must be a string" in caplog.text
    assert list(env.state_dir.glob("checkpoint.json.corrupt-*")), "the bad file is kept aside for a human"
    assert st.prepared() == {}
    new = env.claims.add("new", [result("gpu-0")])
    assert st.prepare([new])[new.uid].error == "", "the device is not held by the dropped record"


# -- journal: released state directory -----------------------------------------------------------

def test_a_call_after_close_writes_nothing_and_says_the_directory_was_released(env):
    st = env.state()
    st.close()
    ref = env.claims.add("late", [result("gpu-1")])
    res = st.prepare([ref])[ref.uid]
    assert res.error == "claim default/late: the state directory was released; not writing the checkpoint"
    assert res.devices == ()
    assert env.cdi_files() == [], "no CDI spec for a claim that was refused"
    cp = env.state_dir / "checkpoint.json"
    assert not cp.exists() or ref.uid not in cp.read_text(), "the checkpoint was not written after release"

    successor = env.state()  # the next owner of the directory prepares the claim normally
    assert successor.prepare([ref])[ref.uid].error == ""
    assert ref.uid in (env.state_dir / "checkpoint.json").read_text()


# -- metadata root replaced by a symlink after start-up ------------------------------------------

def _replace_root_by_link(env, writer, tmp_path):
    st = env.state(metadata=writer)
    first = env.claims.add("first", [result("gpu-0")])
    assert st.prepare([first])[first.uid].error == ""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(writer.root)
    writer.root.symlink_to(elsewhere)
    return st, elsewhere


def test_a_metadata_root_replaced_by_a_link_after_start_up_fails_the_claim(env, tmp_path):
    writer = DeviceMetadataWriter(env.state_dir, DRIVER)
    st, elsewhere = _replace_root_by_link(env, writer, tmp_path)
    ref = env.claims.add("second", [result("gpu-1")])
    error = st.prepare([ref])[ref.uid].error
    assert f"device metadata directory {writer.root} is a symbolic link; not writing through it" in error
    assert list(elsewhere.iterdir()) == [], "nothing was written where the link points"
    assert f"k8s.{DRIVER}_device_{ref.uid}.json" not in env.cdi_files(), "the failed claim left no CDI spec"
    assert ref.uid not in st.prepared(), "the failed claim is not recorded"


# -- metadata evidence: a file that names another claim ------------------------------------------

def test_metadata_evidence_naming_another_claim_is_skipped(env, caplog):
    writer = DeviceMetadataWriter(env.state_dir, DRIVER)
    st = env.state(metadata=writer)
    ref = env.claims.add("train", [result("gpu-0")])
    assert st.prepare([ref])[ref.uid].error == ""

    impostor = str(uuid.uuid4())
    shutil.copytree(writer.root / ref.uid, writer.root / impostor)  # files that name `ref`, under another UID

    caplog.set_level(logging.WARNING)
    records = read_evidence(writer.root, DRIVER)
    assert [r.ref for r in records] == [ref]
    assert records[0].devices == [("req", NODE, "gpu-0")]
    assert f"names claim {ref.uid}, not {impostor}" in _errors(caplog)


def test_metadata_evidence_whose_requests_disagree_on_the_claim_is_skipped(env, caplog):
    writer = DeviceMetadataWriter(env.state_dir, DRIVER)
    st = env.state(metadata=writer)
    ref = env.claims.add("two", [result("gpu-0", "a"), result("gpu-1", "b")])
    assert st.prepare([ref])[ref.uid].error == ""

    # Request b's file keeps the UID but names another claim: it contradicts request a's file.
    path = writer.root / ref.uid / "b" / f"{DRIVER}-metadata.json"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for obj in lines:
        obj["metadata"]["name"] = "someone-else"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))

    caplog.set_level(logging.WARNING)
    records = read_evidence(writer.root, DRIVER)
    assert [r.ref for r in records] == [ref]
    assert records[0].devices == [("a", NODE, "gpu-0")], "only the consistent request counts"
    assert f"names claim {ref.uid}, not {ref.uid}" in _errors(caplog)
