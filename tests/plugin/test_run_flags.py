"""`fake-dra run` rejects every bad duration flag before it opens a socket or starts a thread."""

from __future__ import annotations

import pytest

from driver.cli import main


@pytest.mark.parametrize("flag", ["--publish-interval", "--grace-period", "--api-deadline"])
def test_bad_duration_fails_before_anything_starts(tmp_path, capsys, flag):
    # Before the fix --grace-period was parsed only at shutdown: this call would have served
    # (and blocked waiting for SIGTERM) instead of returning.
    code = main(["run", "--sysfs-root", str(tmp_path), "--node-name", "n1", "--store", str(tmp_path / "s"),
                 "--kubelet-plugins-dir", str(tmp_path / "p"), "--kubelet-registry-dir", str(tmp_path / "r"),
                 "--cdi-root", str(tmp_path / "c"), flag, "0"])
    assert code == 2
    assert f"{flag}: must be positive" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "p").exists()
