"""The README stays the front door (issue 11): short, linking every docs page, with links that
resolve; and nothing in the repository points at a design file the repository does not have."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Markdown links [text](target), not images; the target up to whitespace or ')'.
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
MAX_README_LINES = 250


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < MAX_README_LINES, f"README.md has {lines} lines; details belong in docs/"


def test_readme_links_every_docs_page() -> None:
    linked = {target.split("#", 1)[0] for target in LINK.findall(README.read_text(encoding="utf-8"))}
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in linked]
    assert not missing, f"README.md does not link {missing}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`", "", heading.strip().lstrip("#").strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors, in_code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith(("```", "~~~")):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(_anchor(line))
    return anchors


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_no_tracked_file_cites_the_design_file() -> None:
    # DESIGN.md was the project's private notes; it is not in the repository. Cite
    # docs/architecture.md (its sections) instead.
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    offenders = []
    pattern = re.compile(r"DESIGN(\.md| §| section)")
    for name in files.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{name}:{number}")
    assert not offenders, "cite docs/architecture.md instead of DESIGN.md: " + ", ".join(offenders)
