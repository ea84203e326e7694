"""`discover` and `show` fit a 100-column terminal on every bundled profile (and never cut a token)."""

from __future__ import annotations

import pytest

from driver.cli import main
from driver.discovery import make_sysfs
from driver.discovery.fakeprofiles import PROFILES


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("command", ["discover", "show"])
def test_fits_100_columns(tmp_path, capsys, monkeypatch, profile, command) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # a 100-column terminal (piped, nothing wraps: driver.tables)
    make_sysfs(profile, tmp_path / "sys")
    capsys.readouterr()
    assert main([command, "--sysfs-root", str(tmp_path / "sys")]) == 0
    out = capsys.readouterr().out
    too_wide = [line for line in out.splitlines() if len(line) > 100 and len(line.split()) > 1]
    assert not too_wide, "\n".join(too_wide)
