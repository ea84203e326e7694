"""Hermetic command-line tests: the developer's shell must not change what a test sees.

Every flag reads FAKE_DRA_<FLAG> (driver.commands._envflags), so a FAKE_DRA_STORE or FAKE_DRA_NO_PUBLISH
left in the shell would silently change tests that call `driver.cli.main`; and local-mode defaults
live under $XDG_STATE_HOME, which must not be the developer's real state directory.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def _state_home(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("xdg-state")


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch, _state_home) -> None:
    for name in list(os.environ):
        if name.startswith("FAKE_DRA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_STATE_HOME", str(_state_home))
