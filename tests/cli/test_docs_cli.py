"""docs/cli.md lists exactly the flags each command has (their variables follow by rule)."""

from __future__ import annotations

import re
from pathlib import Path

from driver.cli import build_parser
from driver.commands._envflags import variable_for, walk

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _documented() -> dict[str, set[str]]:
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.fullmatch(r"\| (`[a-z0-9-]+`|\(all\)) \| (`--.*`) \|", line)
        if m:
            rows[m.group(1).strip("`")] = set(re.findall(r"`(--[a-z-]+)`", m.group(2)))
    return rows


def test_the_flag_table_matches_the_parser():
    actual: dict[str, set[str]] = {}
    for name, parser in walk(build_parser()):
        flags = {next(o for o in a.option_strings if o.startswith("--")) for a in parser._actions
                 if variable_for(a) is not None and a.default != "==SUPPRESS=="}
        if flags or not name:
            actual[name or "(all)"] = flags  # a command with only the global flags has no row
    assert _documented() == actual


def test_every_command_is_in_the_command_table():
    text = DOC.read_text()
    for name, _ in walk(build_parser()):
        if name:
            assert f"| `{name}` | " in text
