"""common.output_dir / output_file / input_file: refuse a bad output before the work, create nothing."""

from __future__ import annotations

import argparse
import os

import pytest

from driver.cli import main
from driver.commands import common
from driver.errors import InputError


def test_output_dir_accepts_new_and_existing_directories_and_creates_nothing(tmp_path):
    assert common.output_dir(tmp_path / "a" / "b", "--out") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()
    assert common.output_dir(tmp_path, "--out") == tmp_path
    assert list(tmp_path.iterdir()) == []  # the write check cleaned up after itself


@pytest.mark.parametrize("make,needle", [
    (lambda t: (t / "f").write_text("x") and t / "f", "exists and is not a directory"),
    (lambda t: (t / "f").write_text("x") and t / "f" / "sub", "is not a directory"),
    (lambda t: __import__("pathlib").Path("/proc/fake-dra-out"), "cannot write in /proc"),
    (lambda t: __import__("pathlib").Path("/sys/fake-dra-out"), "cannot write in /sys"),
])
def test_output_dir_refusals_name_flag_and_path(tmp_path, make, needle):
    path = make(tmp_path)
    with pytest.raises(InputError, match=needle) as info:
        common.output_dir(path, "--cdi-root")
    assert str(info.value).startswith(f"--cdi-root {path}:")


def test_output_dir_must_be_empty(tmp_path):
    (tmp_path / "x").write_text("x")
    with pytest.raises(InputError, match="--out .*: directory is not empty"):
        common.output_dir(tmp_path, "--out", must_be_empty=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_output_dir_in_a_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(InputError, match="cannot write in"):
            common.output_dir(ro / "store", "--store")
    finally:
        ro.chmod(0o700)


def test_output_file(tmp_path):
    assert common.output_file(tmp_path / "r.xml", "--junit") == tmp_path / "r.xml"
    assert not (tmp_path / "r.xml").exists()
    (tmp_path / "old.xml").write_text("keep")
    common.output_file(tmp_path / "old.xml", "--junit")
    assert (tmp_path / "old.xml").read_text() == "keep"  # checked, not truncated
    common.output_file("/dev/null", "--junit")  # a device is a fine place for a report
    with pytest.raises(InputError, match="is a directory"):
        common.output_file(tmp_path, "--junit")
    with pytest.raises(InputError, match=r"directory .*missing does not exist \(it is not created\)"):
        common.output_file(tmp_path / "missing" / "r.xml", "--junit")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(InputError, match="--junit /proc/r.xml: cannot write"):
        common.output_file("/proc/r.xml", "--junit")


def test_input_file(tmp_path):
    (tmp_path / "token").write_text("t")
    assert common.input_file(tmp_path / "token", "--metrics-token-file") == tmp_path / "token"
    with pytest.raises(InputError, match="--metrics-token-file .*: cannot read: No such file"):
        common.input_file(tmp_path / "nope", "--metrics-token-file")
    with pytest.raises(InputError, match="is a directory"):
        common.input_file(tmp_path, "--metrics-ca-file")


def test_store_dir_defaults_under_the_state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert common.store_dir(argparse.Namespace(store=None), write=True) == tmp_path / "fake-dra" / "store"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the XDG spec wants an absolute path
    assert common.state_home().is_absolute()


@pytest.mark.parametrize("existing", [False, True])
def test_make_sysfs_interrupted_leaves_no_half_tree(tmp_path, monkeypatch, capsys, existing):
    # Ctrl-C while the tree is written: no partial tree under --out (discovery would read it as a
    # smaller node, and a second run would refuse it as "not empty"), and no staging directory.
    from driver.commands import make_sysfs as command
    from driver.discovery import make_sysfs as real

    def interrupted(profile, out, gpus=None):
        real(profile, out, gpus)  # the whole tree is on disk, but not yet in place
        raise KeyboardInterrupt
    monkeypatch.setattr(command, "make_sysfs", interrupted)
    out = tmp_path / "sys"
    if existing:
        out.mkdir()
    assert main(["make-sysfs", "--out", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["sys"] if existing else [])
    assert not existing or not any(out.iterdir())
    monkeypatch.setattr(command, "make_sysfs", real)
    assert main(["make-sysfs", "--out", str(out)]) == 0  # the retry just works
    assert (out / "bus" / "pci" / "devices").is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["sys"]
