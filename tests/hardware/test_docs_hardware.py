"""docs/hardware.md lists exactly the table rows marked as not confirmed (the README links to that
list), and the hardware page describes every profile that exists."""

from __future__ import annotations

from pathlib import Path

from driver.discovery import PROFILES
from driver.hardware import load_catalog
from driver.hardware.catalog import unconfirmed_rows

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "hardware.md"
TITLE = "Rows not confirmed against NVIDIA's documentation or a real capture"


def listed_rows(page: Path) -> list[str]:
    """The bullet lines of the page's section titled TITLE (at any heading level), up to the next heading."""
    lines = page.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("#") and line.lstrip("#").strip() == TITLE]
    assert len(starts) == 1, f"{page.name}: expected one heading '{TITLE}', found {len(starts)}"
    rows = []
    for line in lines[starts[0] + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("- "):
            rows.append(line[2:])
    return rows


def test_the_unconfirmed_list_matches_the_tables() -> None:
    rows = unconfirmed_rows(load_catalog())
    assert rows, "the tables mark some rows; an empty list would mean the marks were lost"
    assert listed_rows(DOC) == rows


def test_the_readme_links_to_the_list_instead_of_repeating_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TITLE not in readme
    assert "docs/hardware.md#rows-not-confirmed-against-nvidias-documentation-or-a-real-capture" in readme


def test_every_profile_is_described() -> None:
    text = DOC.read_text()
    for name in PROFILES:
        assert f"| `{name}` |" in text, name
