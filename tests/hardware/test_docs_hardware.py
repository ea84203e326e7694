"""docs/hardware.md lists exactly the table rows marked as not confirmed, and the profiles that exist."""

from __future__ import annotations

from pathlib import Path

from driver.discovery import PROFILES
from driver.hardware import load_catalog
from driver.hardware.catalog import unconfirmed_rows

DOC = Path(__file__).resolve().parents[2] / "docs" / "hardware.md"
HEADING = "## Rows not confirmed against NVIDIA's documentation or a real capture"


def listed_rows() -> list[str]:
    section = DOC.read_text().split(HEADING, 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in section.splitlines() if line.startswith("- ")]


def test_the_unconfirmed_list_matches_the_tables() -> None:
    rows = unconfirmed_rows(load_catalog())
    assert rows, "the tables mark some rows; an empty list would mean the marks were lost"
    assert listed_rows() == rows


def test_every_profile_is_described() -> None:
    text = DOC.read_text()
    for name in PROFILES:
        assert f"| `{name}` |" in text, name
