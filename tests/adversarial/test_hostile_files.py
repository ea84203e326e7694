"""Hostile files where the plugin keeps its own: symlinks, FIFOs and devices planted in the state
directory or the CDI root. The plugin never follows, blocks on or reads through them: a start-up
error naming the path (exit 2) where it cannot go on safely, otherwise the entry is treated as
corrupt or replaced, and nothing outside its directories is touched."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from driver.fsutil import atomic_write, temp_path
from driver.state.metadata import DeviceMetadataWriter
from plugin.harness import DRIVER, Plugin


def _victim(plugin: Plugin) -> Path:
    victim = plugin.root / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me\n")
    (victim / "precious").chmod(0o644)
    return victim




def test_a_symlinked_lock_file_is_refused_and_its_target_keeps_its_mode(make_plugin):
    """The lock used to be opened through the link and fchmod'ed: the target became 0600."""
    plugin = make_plugin()
    victim = _victim(plugin)
    plugin.state.mkdir(parents=True)
    (plugin.state / "lock").symlink_to(victim / "precious")
    plugin.refused(plugin.spawn(), f"state directory lock {plugin.state / 'lock'} is a symbolic link")
    assert stat.S_IMODE((victim / "precious").stat().st_mode) == 0o644
    assert (plugin.state / "lock").is_symlink()


def test_a_symlinked_device_metadata_directory_is_refused_not_pruned_through(make_plugin):
    """Start-up prunes metadata of claims that are not prepared: through a link to another
    directory it used to delete everything in it."""
    plugin = make_plugin()
    victim = _victim(plugin)
    plugin.state.mkdir(parents=True)
    (plugin.state / "dra-device-metadata").symlink_to(victim)
    plugin.refused(plugin.spawn(), "dra-device-metadata is a symbolic link", "refusing to clean up through it")
    assert (victim / "precious").read_text() == "keep me\n"


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero"])
def test_a_checkpoint_that_is_a_fifo_or_a_link_is_moved_aside_without_blocking(make_plugin, kind):
    plugin = make_plugin()
    plugin.state.mkdir(parents=True)
    cp = plugin.state / "checkpoint.json"
    if kind == "fifo":
        os.mkfifo(cp)
    else:
        cp.symlink_to("/dev/zero")
    client = plugin.start(timeout=30)  # used to block (FIFO) or read /dev/zero until out of memory
    assert client.prepare([]) == {}
    assert "is corrupt" in plugin.log_text()
    moved = list(plugin.state.glob("checkpoint.json.corrupt-*"))
    assert len(moved) == 1 and (stat.S_ISFIFO(moved[0].lstat().st_mode) or moved[0].is_symlink())
    assert cp.is_file() and not cp.is_symlink()
    plugin.stop()


def test_rebuilding_from_cdi_specs_skips_a_fifo_and_a_link_to_dev_zero(make_plugin):
    plugin = make_plugin()
    plugin.state.mkdir(parents=True)
    (plugin.state / "checkpoint.json").write_text("{corrupt")
    plugin.cdi.mkdir(parents=True)
    prefix = f"k8s.{DRIVER}_device_"
    os.mkfifo(plugin.cdi / f"{prefix}aaaaaaaa-0000-0000-0000-000000000001.json")
    (plugin.cdi / f"{prefix}aaaaaaaa-0000-0000-0000-000000000002.json").symlink_to("/dev/zero")
    client = plugin.start(timeout=30)
    assert client.prepare([]) == {}
    text = plugin.log_text()
    assert text.count("skipping unreadable CDI spec while rebuilding state") == 2, text
    assert plugin.checkpoint()["claims"] == {}
    plugin.stop()


def test_atomic_write_never_writes_through_a_link_planted_at_its_temp_name(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    target = tmp_path / "checkpoint.json"
    temp_path(target).symlink_to(victim)
    atomic_write(target, b"new\n", 0o600)
    assert victim.read_text() == "keep me\n"
    assert target.read_bytes() == b"new\n" and not temp_path(target).exists()


def test_unprepare_removes_a_symlinked_claim_metadata_directory_not_its_target(tmp_path):
    """rmtree refuses a link, so every unprepare retry of the claim used to fail."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me\n")
    writer = DeviceMetadataWriter(tmp_path / "state", DRIVER)
    writer.root.mkdir(parents=True)
    uid = "aaaaaaaa-0000-0000-0000-000000000001"
    (writer.root / uid).symlink_to(victim)
    writer.remove(uid)
    assert not (writer.root / uid).exists() and (victim / "precious").read_text() == "keep me\n"


def test_a_symlink_at_a_claims_metadata_directory_is_replaced_not_written_through(tmp_path):
    """Issue 18 item 5: make_dirs and the atomic write followed a link at <uid> (or <uid>/<request>),
    so the claim's files landed wherever it pointed, outside the state directory."""
    from driver.state.types import ClaimRef, PreparedDevice

    victim = tmp_path / "victim"
    victim.mkdir()
    writer = DeviceMetadataWriter(tmp_path / "state", DRIVER)
    writer.root.mkdir(parents=True)
    devices = [PreparedDevice(("gpu",), "n1", "gpu-0", ())]
    claim = {"metadata": {"name": "c", "namespace": "default"}, "status": {}}
    for i, planted in enumerate(("claim", "request")):
        uid = f"aaaaaaaa-0000-0000-0000-00000000000{i}"
        if planted == "claim":
            (writer.root / uid).symlink_to(victim)
        else:
            (writer.root / uid).mkdir()
            (writer.root / uid / "gpu").symlink_to(victim)
        (f,) = writer.write(ClaimRef("default", "c", uid), claim, devices, {"gpu-0": {}})
        assert list(victim.iterdir()) == [], f"written through a link at the {planted} directory"
        assert not (writer.root / uid).is_symlink() and not (writer.root / uid / "gpu").is_symlink()
        assert f.host_path.is_file() and f.host_path.parent.parent.parent == writer.root
        # A prepared claim's files are recreated the same way if a link replaces them later.
        shutil.rmtree(writer.root / uid)
        (writer.root / uid).symlink_to(victim)
        writer.ensure(ClaimRef("default", "c", uid), claim, devices, {"gpu-0": {}})
        assert list(victim.iterdir()) == [] and f.host_path.is_file() and not (writer.root / uid).is_symlink()


@pytest.mark.slow
def test_prepare_never_writes_metadata_through_a_planted_link(make_plugin):
    from plugin.harness import request

    plugin = make_plugin()
    client = plugin.start()
    victim = _victim(plugin)
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    (plugin.state / "dra-device-metadata").mkdir(exist_ok=True)
    (plugin.state / "dra-device-metadata" / ref[2]).symlink_to(victim)
    assert client.prepare([ref])[ref[2]].error == ""
    assert sorted(p.name for p in victim.iterdir()) == ["precious"]
    assert plugin.metadata_stream(ref[2], "gpu")[0]["metadata"]["uid"] == ref[2]
    assert "replaced a symlink or file found in place of a device metadata directory" in plugin.log_text()
    assert plugin.stop() == 0


@pytest.mark.slow
def test_temp_files_of_interrupted_metadata_writes_are_removed_at_start(make_plugin):
    """Issue 18 item 8: only checkpoint and CDI temps were swept; metadata temps survived restarts."""
    from plugin.harness import request

    plugin = make_plugin()
    client = plugin.start()
    ref = plugin.allocate("g", [request("gpu", "gpu")])
    assert client.prepare([ref])[ref[2]].error == ""
    assert plugin.stop() == 0
    request_dir = plugin.state / "dra-device-metadata" / ref[2] / "gpu"
    ours = request_dir / f".{DRIVER}-metadata.json.4242.tmp"
    theirs = request_dir / "notes.tmp"
    for p in (ours, theirs):
        p.write_text("{half")
    plugin.start()
    assert not ours.exists() and theirs.exists(), "only our own temp files may be removed"
    assert (request_dir / f"{DRIVER}-metadata.json").is_file()
    assert "removed the temp file of an interrupted device metadata write" in plugin.log_text()
    assert plugin.stop() == 0


@pytest.mark.slow
def test_an_unreadable_row_at_the_plugins_own_slice_name_is_skipped_and_named(make_plugin):
    """Issue 18 item 11: `list` leaves such an object out, so the create at that name failed on every
    attempt and `run` exited 1 at start with a message that did not name it."""
    from driver.store import ObjectStore
    from storeutil import plant_row, raw_row

    plugin = make_plugin()
    name = f"00000-{DRIVER}-n1"
    ObjectStore(plugin.store_dir).create("deviceclasses", {"metadata": {"name": "opens-the-store"}})
    plant_row(plugin.store_dir, "resourceslices", None, name, "spec: [\n")
    plugin.start()
    published = plugin.wait_slices()
    assert sorted(s["metadata"]["name"] for s in published)[0] == f"00000-{DRIVER}-n1-1"
    assert raw_row(plugin.store_dir, "resourceslices", None, name)[3] == "spec: [\n", "the row is left to its writer"
    text = plugin.log_text()
    assert f"resourceslices {name}" in text and f"so that slice is published as 00000-{DRIVER}-n1-1" in text
    ref = plugin.allocate("g", [{"name": "gpu", "exactly": {"deviceClassName": f"gpu.{DRIVER}"}}])
    assert plugin.client().prepare([ref])[ref[2]].error == ""
    assert plugin.stop() == 0
